"""Collective pre-flight: sizes, the report's summary, and a real 2-process all-reduce on gloo."""

import json
import subprocess

import pytest
from _trainer_helpers import subprocess_env, torchrun_cmd

from ascendops_trainer.cli import _parser
from ascendops_trainer.collective import bus_factor, parse_size, parse_sizes, summarize
from ascendops_trainer.config import ConfigError


@pytest.mark.parametrize(("text", "size"), [("8K", 8192), ("1M", 1 << 20), ("1G", 1 << 30), ("4096", 4096),
                                             ("64kb", 65536)])
def test_sizes_use_binary_units_like_hccl_test(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("bad", ["", "1T", "-8K", "2"])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(ConfigError):
        parse_size(bad)


def test_size_list():
    assert parse_sizes("8K, 1M,") == [8192, 1 << 20]


def test_bus_factor_is_ring_traffic():
    assert bus_factor(1) == 1.0
    assert bus_factor(4) == 1.5


def test_summary_names_failed_and_slowest_nodes():
    results = [{"failed_nodes": [], "node_time_us": {"a": 10.0, "b": 30.0}},
               {"failed_nodes": ["b"], "node_time_us": {"a": 50.0, "b": 20.0}}]
    s = summarize(results, {"a": [0], "b": [1]})
    assert s["failed_nodes"] == ["b"]
    assert s["slowest_node"] == "a"
    assert s["ok"] is False
    assert summarize([], {})["ok"] is False


def test_subcommand_is_registered():
    args = _parser().parse_args(["collective", "--sizes", "8K", "--out", "r.json"])
    assert args.cmd == "collective" and callable(args.func) and args.sizes == "8K"


def test_two_ranks_on_gloo_write_a_correct_report(tmp_path):
    out = tmp_path / "report.json"
    cmd = torchrun_cmd(["collective", "--device", "cpu", "--sizes", "4K,256K", "--iters", "3",
                        "--out", str(out), "--node-name", "nodeA"])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=subprocess_env())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["backend"] == "gloo" and report["world_size"] == 2 and report["ok"] is True
    assert report["nodes"] == {"nodeA": [0, 1]}
    assert [r["size_bytes"] for r in report["results"]] == [4096, 262144]
    for r in report["results"]:
        assert r["check_result"] == "success"
        assert r["time_us"] > 0 and r["alg_bandwidth_gbs"] > 0
        assert r["bus_bandwidth_gbs"] == pytest.approx(r["alg_bandwidth_gbs"], rel=1e-3)  # 2(n-1)/n = 1 for n=2
    assert report["slowest_node"] == "nodeA"
