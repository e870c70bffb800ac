"""sim/rank-device/sitecustomize.py (SIMULATION ONLY): a simulated rank holds its /dev/davinciN for the stand-in
npu-smi's busy rule; nothing else does."""

import importlib.util
import os
from pathlib import Path

import pytest

SHIM = Path(__file__).resolve().parents[2] / "sim" / "rank-device" / "sitecustomize.py"


@pytest.fixture
def shim(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)  # importing must hold nothing here
    spec = importlib.util.spec_from_file_location("sim_rank_device", SHIM)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod._HELD is None
    yield mod
    mod._release()


@pytest.fixture
def dev(tmp_path):
    for name in ("davinci1", "davinci3", "davinci_manager", "null"):
        (tmp_path / name).write_text("")
    return tmp_path


def _target(fd):
    return os.readlink(f"/proc/self/fd/{fd}")


def test_a_rank_holds_the_local_rank_th_visible_device(shim, dev):
    fd = shim.hold({"LOCAL_RANK": "1"}, str(dev))  # the container has davinci1 and davinci3: rank 1 -> davinci3
    assert fd is not None and _target(fd) == str(dev / "davinci3")
    assert shim.hold({"LOCAL_RANK": "0"}, str(dev)) == fd  # held once, for the process's life


def test_ascend_rt_visible_devices_picks_by_logical_id(shim, dev):
    # the container has davinci1 and davinci3, logical 0 and 1: "1,0" puts davinci3 first; a host id
    # the container has no logical number for (3) names nothing
    fd = shim.hold({"LOCAL_RANK": "0", "ASCEND_RT_VISIBLE_DEVICES": "1,0"}, str(dev))
    assert _target(fd) == str(dev / "davinci3")


def test_ascend_rt_visible_devices_of_host_ids_name_nothing_in_the_container(shim, dev):
    assert shim.hold({"LOCAL_RANK": "0", "ASCEND_RT_VISIBLE_DEVICES": "3"}, str(dev)) is None


@pytest.mark.parametrize("env", [{}, {"LOCAL_RANK": "2"}, {"LOCAL_RANK": "x"}])
def test_no_rank_or_no_device_holds_nothing(shim, dev, env):
    assert shim.hold(env, str(dev)) is None
    assert shim.hold({"LOCAL_RANK": "0"}, str(dev / "absent")) is None


def test_forked_helpers_do_not_hold_it(shim, dev):
    shim.hold({"LOCAL_RANK": "0"}, str(dev))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a data loader worker
        os.close(r)
        os.write(w, b"held" if shim._HELD is not None else b"none")
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    assert os.read(r, 8) == b"none"
    os.close(r)
    assert shim._HELD is not None
