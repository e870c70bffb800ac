"""Progress of `prepare`, `bench` and `export` (progress.py): it reaches its total, goes to stderr only,
writes plain lines without carriage returns off a terminal, and never changes what the commands write."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import _trainer_helpers  # noqa: F401  (puts payload/src on sys.path)
import pytest

from ascendops_trainer.progress import Progress, resolve_interval, resolve_mode


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_every_interval_without_carriage_returns():
    out, clock = io.StringIO(), Clock()
    with Progress(100, "work", unit="B", mode="auto", file=out, interval=30, clock=clock) as p:
        assert p.mode == "plain"  # auto, and a StringIO is no terminal
        for _ in range(10):
            clock.now += 10
            p.set_postfix("files 1/2")
            p.update(10)
    lines = out.getvalue().splitlines()
    # at 30, 60 and 90 s, then the final line at close
    assert len(lines) == 4, lines
    assert "\r" not in out.getvalue()
    assert lines[0].startswith("work:  30% 30/100") and "files 1/2" in lines[0]
    assert lines[-1].startswith("work: 100% 100/100") and "<00:00" in lines[-1]


def test_bar_on_a_terminal_or_forced_and_off():
    tty = Tty()
    with Progress(5, "bar", mode="auto", file=tty) as p:
        assert p.mode == "bar"
        p.update(5)
    assert "\r" in tty.getvalue() and "5/5" in tty.getvalue()
    forced = io.StringIO()
    with Progress(3, "bar", mode="bar", file=forced) as p:
        p.update(3)
    assert "3/3" in forced.getvalue()
    silent = io.StringIO()
    for kwargs in ({"mode": "off"}, {"mode": "plain", "enabled": False}):
        with Progress(3, "x", file=silent, **kwargs) as p:
            p.update(3)
    assert silent.getvalue() == ""


def test_mode_and_interval_from_option_or_environment():
    assert resolve_mode(None, {}) == "auto"
    assert resolve_mode(None, {"ASCENDOPS_PROGRESS": "plain"}) == "plain"
    assert resolve_mode("off", {"ASCENDOPS_PROGRESS": "plain"}) == "off"
    with pytest.raises(ValueError, match="ASCENDOPS_PROGRESS='loud' is not a progress mode"):
        resolve_mode(None, {"ASCENDOPS_PROGRESS": "loud"})
    assert resolve_interval({}) == 30.0 and resolve_interval({"ASCENDOPS_PROGRESS_INTERVAL": "5"}) == 5.0
    with pytest.raises(ValueError, match="ASCENDOPS_PROGRESS_INTERVAL='-1'"):
        resolve_interval({"ASCENDOPS_PROGRESS_INTERVAL": "-1"})


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _corpus(tmp_path: Path) -> list[str]:
    from _trainer_corpus import documents

    docs = documents(90, seed=5)
    gz = tmp_path / "a.jsonl.gz"
    with gzip.open(gz, "wt") as f:
        for d in docs[:50]:
            f.write(json.dumps({"text": d}) + "\n")
    txt = tmp_path / "b.txt"
    txt.write_text("\n\n".join(docs[50:]) + "\n")
    return [str(gz), str(txt)]


@pytest.mark.parametrize("workers", [1, 2])
def test_prepare_progress_reaches_the_total_and_leaves_the_output_alone(prepared, tmp_path, capsys, workers):
    from ascendops_trainer.data import INDEX_NAME, prepare

    inputs = _corpus(tmp_path)
    total = sum(Path(p).stat().st_size for p in inputs)
    outputs, indexes = {}, {}
    for mode in ("off", "plain", "bar"):
        capsys.readouterr()
        idx = prepare(inputs, prepared["tokenizer"], str(tmp_path / mode), shard_tokens=900, val_fraction=0.1,
                      workers=workers, batch_docs=8, progress=mode)
        captured = capsys.readouterr()
        assert captured.out == ""  # progress never goes to stdout
        outputs[mode] = {k: v for k, v in _files(tmp_path / mode).items() if k != INDEX_NAME}
        indexes[mode] = {k: v for k, v in idx.items() if k != "prepare_seconds"}
        assert json.loads((tmp_path / mode / INDEX_NAME).read_text())["shards"] == idx["shards"]
        tokens = idx["num_tokens"] + idx["val_num_tokens"]
        if mode == "off":
            assert captured.err == ""
        elif mode == "plain":
            assert "\r" not in captured.err
            last = captured.err.splitlines()[-1]
            assert last.startswith("prepare: 100% ") and f"files 2/2, {tokens:,} tokens" in last, last
        else:
            assert "\r" in captured.err and f"files 2/2, {tokens:,} tokens" in captured.err
            assert "100%" in captured.err and "prepare" in captured.err
    assert len(outputs["off"]) >= 4  # several train shards and their .docs files, the validation split
    assert outputs["plain"] == outputs["off"] == outputs["bar"]  # byte for byte
    assert indexes["plain"] == indexes["off"] == indexes["bar"]
    assert total > 0


def test_prepare_progress_counts_bytes_of_each_file_in_order(prepared, tmp_path, monkeypatch):
    """The meter advances by on-disk bytes as the tokenized batches arrive and ends at the inputs' size."""
    from ascendops_trainer import data, progress

    seen: list[tuple[float, str]] = []

    class Recorder(progress.Progress):
        def update(self, n=1):
            super().update(n)
            seen.append((self.n, self.postfix))

    monkeypatch.setattr(progress, "Progress", Recorder)
    inputs = _corpus(tmp_path)
    big = Path(inputs[1])
    big.write_text(big.read_text() * 20)  # ~10 read buffers of 8 KiB: the position moves within the file
    sizes = [Path(p).stat().st_size for p in inputs]
    data.prepare(inputs, prepared["tokenizer"], str(tmp_path / "out"), batch_docs=4, progress="off")
    ns = [n for n, _ in seen]
    assert ns == sorted(ns) and ns[-1] == sum(sizes)
    assert len({n for n in ns if sizes[0] < n < sum(sizes)}) >= 5  # it moves within a file, not only per file
    assert seen[0][1].startswith("files 0/2") and seen[-1][1].startswith("files 2/2")


def test_prepare_cli_progress_option_and_bad_environment(prepared, tmp_path, capsys, monkeypatch):
    from ascendops_trainer.cli import main
    from ascendops_trainer.status import EXIT_CONFIG

    inputs = _corpus(tmp_path)
    args = ["prepare", *inputs, "--tokenizer", prepared["tokenizer"], "--workers", "1"]
    assert main([*args, "--out", str(tmp_path / "a"), "--progress", "off"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    monkeypatch.setenv("ASCENDOPS_PROGRESS", "plain")  # the environment alone selects it
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    plain = capsys.readouterr()
    assert plain.out.replace(str(tmp_path / "b"), "X") == quiet.out.replace(str(tmp_path / "a"), "X")
    assert "prepare: 100%" in plain.err and "\r" not in plain.err
    monkeypatch.setenv("ASCENDOPS_PROGRESS", "fancy")
    assert main([*args, "--out", str(tmp_path / "c")]) == EXIT_CONFIG
    assert "ASCENDOPS_PROGRESS='fancy' is not a progress mode" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()  # refused before any work
    monkeypatch.setenv("ASCENDOPS_PROGRESS", "plain")
    monkeypatch.setenv("ASCENDOPS_PROGRESS_INTERVAL", "soon")
    assert main([*args, "--out", str(tmp_path / "d")]) == EXIT_CONFIG
    assert "ASCENDOPS_PROGRESS_INTERVAL='soon'" in capsys.readouterr().err


def _bench_cfg(mode: str, rounds: int):
    from ascendops_trainer.config import build_config

    cfg = build_config({})
    cfg.bench.mode, cfg.bench.rounds, cfg.bench.warmup_steps, cfg.bench.steps = mode, rounds, 1, 3
    return cfg


def test_bench_progress_covers_every_run_even_one_that_stops_early():
    from ascendops_trainer.bench import _BenchProgress, bench_runs, switch_variants

    cfg = _bench_cfg("both", 2)
    assert bench_runs(cfg) == ["torch round 1/2", "deepspeed round 1/2", "torch round 2/2", "deepspeed round 2/2"]
    switches = _bench_cfg("switches", 1)
    assert bench_runs(switches) == ["torch", *(label for label, _ in switch_variants(switches))]

    out = io.StringIO()
    meter = _BenchProgress(cfg, "plain", enabled=True)
    meter.meter.file, meter.meter.interval = out, 1e9
    labels = []
    for run in range(4):
        tick = meter.start()
        labels.append(meter.meter.postfix)
        for _ in range(4 if run != 1 else 2):  # the second run stops after 2 of its 4 steps (out of memory)
            tick()
        meter.finish()
        assert meter.meter.n == (run + 1) * 4
    meter.close()
    assert labels == bench_runs(cfg)
    assert out.getvalue().startswith("bench: 100% 16/16") and "\r" not in out.getvalue()


def test_export_progress_counts_tensors_and_leaves_the_files_alone(tmp_path, capsys):
    import torch

    from ascendops_trainer.checkpoint import HF_CONFIG, TRAINER_STATE, export_from_checkpoint

    ckpt = tmp_path / "checkpoints"
    src = ckpt / "step_00000002"
    src.mkdir(parents=True)
    ckpt.chmod(0o755)
    src.chmod(0o755)
    g = torch.Generator().manual_seed(0)
    module = {f"model.layers.{i}.mlp.up_proj.weight": torch.randn(8, 4, generator=g) for i in range(5)}
    module["lm_head.weight"] = torch.randn(8, 4, generator=g)
    torch.save({"module": module}, src / "mp_rank_00_model_states.pt")
    (src / HF_CONFIG).write_text(json.dumps({"model_type": "llama", "tie_word_embeddings": True}))
    (src / TRAINER_STATE).write_text(json.dumps({"step": 2, "zero_stage": 0}))
    for f in src.iterdir():
        f.chmod(0o644)

    files = {}
    for mode in ("off", "plain"):
        capsys.readouterr()
        export_from_checkpoint(str(ckpt), str(tmp_path / mode), tag=src.name, dtype_name="fp32", progress=mode)
        err = capsys.readouterr().err
        files[mode] = _files(tmp_path / mode)
        if mode == "plain":
            # 5 tensors: lm_head is tied to the embeddings and left out
            assert err.startswith("export: 100% 5/5") and "\r" not in err, err
        else:
            assert err == ""
    assert files["plain"] == files["off"] and "model.safetensors" in files["off"]


def test_progress_does_not_parse_as_a_config_flag():
    """--progress is the command's own option, not a config field (bench takes both)."""
    from ascendops_trainer.cli import _parser

    args = _parser().parse_args(["bench", "--progress", "plain"])
    assert args.progress == "plain"
    assert not any(k.startswith("cfg:") and v is not None for k, v in vars(args).items())
