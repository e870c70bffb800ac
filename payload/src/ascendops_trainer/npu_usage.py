"""NPU utilisation sampled into the run's metrics: AI Core %, HBM used/total, power, temperature.

Whether the node has NPUs to read does not depend on the device the job trains on: the main rank samples
when npu-smi is on its PATH and NPUs are visible to it (``node_has_npus``: ``ASCEND_VISIBLE_DEVICES`` set by
the Ascend Docker Runtime, or ``/dev/davinciN`` device nodes, as the runtime, ``--device`` or a bare-metal
node give them). On a CUDA or CPU machine (no npu-smi, no device nodes) nothing is started and nothing is
said. The main rank starts a background thread that reads ``npu-smi info -l`` once, then every
``metrics.npu_usage_interval_s`` seconds ``npu-smi info -t usages -i N`` and ``-t common -i N`` for each
NPU; each metric record takes the latest reading (``npu_ai_core_pct`` (mean over the node's NPUs),
``npu_hbm_used_mb``/``npu_hbm_total_mb`` (sums), ``npu_power_w`` (sum), ``npu_temp_c`` (hottest)). The
training loop never waits for npu-smi. Without npu-smi, or when it fails or prints a layout the parser
cannot read, sampling stops after one warning naming the command or the line: training goes on.

Parsing follows the collection's ``npu_smi.parse_npu_smi_chip_values`` (``Key : Value`` lines, chip
blocks opened (common) or closed (usages) by ``Chip ID``, an ``mcu`` block apart); the payload does not
depend on the Ansible collection, so the few rules are kept here too.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
from typing import Any

log = logging.getLogger(__name__)

_DAVINCI = re.compile(r"^davinci\d+$")
_KV = re.compile(r"^\s*([^:]*?[^\s:])\s*:\s*(.*?)\s*$")
KEYS = {"aicore usage rate(%)": "aicore", "hbm capacity(mb)": "hbm_mb", "hbm usage rate(%)": "hbm_pct",
        "temperature(c)": "temp", "npu real-time power(w)": "power"}


def node_has_npus(env: dict[str, str] | None = None, dev_dir: str = "/dev") -> bool:
    """Whether NPUs are visible to this process: a non-empty ``ASCEND_VISIBLE_DEVICES`` (the Ascend Docker
    Runtime's) or at least one ``/dev/davinciN`` (not ``davinci_manager``), whatever device the job trains on."""
    env = os.environ if env is None else env
    if env.get("ASCEND_VISIBLE_DEVICES", "").strip():
        return True
    try:
        return any(_DAVINCI.match(name) for name in os.listdir(dev_dir))
    except OSError:
        return False


class NpuUsageError(ValueError):
    """An npu-smi output this sampler cannot read (the message names the line)."""


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_chips(text: str, what: str) -> tuple[list[dict[str, float]], dict[str, float]]:
    """(chips, mcu) of ``npu-smi info -t usages|common -i N``: normalised numbers per chip."""
    lines = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        m = _KV.match(raw)
        if not m:
            raise NpuUsageError(f"npu-smi info -t {what}: a line is not 'Key : Value': {raw.strip()!r}")
        lines.append((m.group(1).lower(), m.group(2)))
    body = [(k, v) for k, v in lines if k not in ("npu id", "chip count")]
    ids = [i for i, (k, _v) in enumerate(body) if k == "chip id"]
    leading = bool(ids) and ids[0] == 0
    chips: list[dict[str, float]] = []
    mcu: dict[str, float] = {}
    current: dict[str, float] | None = None if ids else {}  # no Chip ID line at all: one chip
    in_mcu = False
    for key, value in body:
        if key == "chip name" and value.lower() == "mcu":
            if current is not None:
                chips.append(current)
            current, in_mcu = None, True
            continue
        if key == "chip id" and not in_mcu:
            if leading:  # -t common: the id opens the chip's block
                if current is not None:
                    chips.append(current)
                current = {}
            else:  # -t usages: the id closes it
                chips.append(current or {})
                current = None
            continue
        if in_mcu:
            target = mcu
        else:
            if current is None:
                current = {}
            target = current
        norm = KEYS.get(key)
        if norm and norm not in target and _num(value) is not None:
            target[norm] = _num(value)
    if current is not None:
        chips.append(current)
    return [c for c in chips if c], mcu


def combine(readings: list[tuple[list[dict[str, float]], dict[str, float]]]) -> dict[str, Any]:
    """The node's figures from each NPU's (chips, mcu) of usages and common merged."""
    cores, hbm_used, hbm_total, power, temps = [], 0.0, 0.0, 0.0, []
    has_hbm = has_power = False
    for chips, mcu in readings:
        chip_power = [c["power"] for c in chips if "power" in c]
        for c in chips:
            if "aicore" in c:
                cores.append(c["aicore"])
            if "hbm_mb" in c:
                has_hbm = True
                hbm_total += c["hbm_mb"]
                hbm_used += c["hbm_mb"] * c.get("hbm_pct", 0.0) / 100.0
            if "temp" in c:
                temps.append(c["temp"])
        if chip_power or "power" in mcu:
            has_power = True
            power += sum(chip_power) if chip_power else mcu["power"]
    return {
        "npu_ai_core_pct": round(sum(cores) / len(cores), 1) if cores else None,
        "npu_hbm_used_mb": round(hbm_used) if has_hbm else None,
        "npu_hbm_total_mb": round(hbm_total) if has_hbm else None,
        "npu_power_w": round(power, 1) if has_power else None,
        "npu_temp_c": max(temps) if temps else None,
    }


class NpuUsageSampler:
    """Background sampling of this node's NPUs; ``latest()`` is the last reading ({} before the first)."""

    def __init__(self, interval_s: float, npu_smi: str = "npu-smi", timeout_s: float = 20.0):
        self.interval_s = float(interval_s)
        self.npu_smi = shutil.which(npu_smi) if interval_s > 0 else None
        self.timeout_s = timeout_s
        self._latest: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    @classmethod
    def for_node(cls, interval_s: float, is_main: bool, env: dict[str, str] | None = None,
                 dev_dir: str = "/dev", npu_smi: str = "npu-smi") -> NpuUsageSampler:
        """The sampler of a rank: sampling on the main rank where the node has NPUs to read, otherwise off
        (nothing started, nothing said), whatever device the job trains on."""
        on = is_main and node_has_npus(env, dev_dir)
        return cls(interval_s if on else 0, npu_smi=npu_smi)

    def _run(self, *args: str) -> str:
        cmd = [self.npu_smi, *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s,
                           env={"LANG": "C", "LC_ALL": "C", "PATH": "/usr/local/bin:/usr/bin:/bin"}, check=False)
        if r.returncode != 0:
            last = (r.stdout.strip() or r.stderr.strip() or "no output").splitlines()[-1]
            raise NpuUsageError(f"npu-smi {' '.join(args)} failed (rc={r.returncode}): {last}")
        return r.stdout

    def ids(self) -> list[int]:
        out = self._run("info", "-l")
        ids = [int(m.group(1)) for m in re.finditer(r"^\s*NPU ID\s*:\s*(\d+)\s*$", out, re.M)]
        if not ids:
            raise NpuUsageError("npu-smi info -l lists no 'NPU ID : N' line")
        return ids

    def sample(self, ids: list[int]) -> dict[str, Any]:
        readings = []
        for npu in ids:
            u_chips, _ = parse_chips(self._run("info", "-t", "usages", "-i", str(npu)), "usages")
            c_chips, mcu = parse_chips(self._run("info", "-t", "common", "-i", str(npu)), "common")
            # usages' values first (as the collection's npu_usage_info), common adds temperature and power
            merged = [dict(c, **u) for u, c in zip(u_chips, c_chips, strict=False)] or u_chips or c_chips
            readings.append((merged, mcu))
        return combine(readings)

    def _loop(self) -> None:
        try:
            ids = self.ids()
            while not self._stop.is_set():
                reading = self.sample(ids)
                with self._lock:
                    self._latest = reading
                self._stop.wait(self.interval_s)
        except (NpuUsageError, OSError, subprocess.SubprocessError) as e:
            self.error = str(e)
            log.warning("NPU usage sampling stopped: %s", e)

    def start(self) -> NpuUsageSampler:
        if self.npu_smi and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="npu-usage", daemon=True)
            self._thread.start()
        return self

    def latest(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._latest)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_s)
