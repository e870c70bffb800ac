"""Log triage (module_utils/triage.py, ascend_errors.py) and the support bundle (ascend_collect.py):
the node that failed first and its layer, the first-error timeline, each code explained, secrets
never in the bundle."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.triage import FilterModule
from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_errors, triage
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_collect import (
    Collector,
    bundle_members,
    read_member,
    redact,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "npu_smi_info_910b.txt"), encoding="utf-8") as _f:
    NPU_OK = _f.read()
PROCS = """
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 231405        | python3.10               | 56036                   |
+===========================+===============+====================================================+
"""
UP = {"link": "link status: UP", "net_health": "net health status: Success"}
DOWN = {"link": "link status: DOWN", "net_health": "net health status: Fault"}


def node(journal="", kernel="", hccn=None, smi=NPU_OK, status="", unit="failed/failed"):
    return {"npu_smi_info": smi, "hccn": hccn if hccn is not None else {"0": UP, "1": UP}, "journal": journal,
            "kernel": kernel, "status": status, "unit_state": unit}


# ---- the error-code table

@pytest.mark.parametrize("code,layer", [("EI0006", "hccl"), ("EI0009", "hccl"), ("EI0014", "hccl"),
                                        ("EJ0001", "driver"), ("EJ0002", "device_network"),
                                        ("EJ0004", "device_network"), ("-8005", "driver"), ("-8020", "driver")])
def test_every_code_users_hit_is_explained_with_its_layer(code, layer):
    info = ascend_errors.explain(code)
    assert info["layer"] == layer and info["meaning"] and info["fix"]
    assert ascend_errors.find_codes(f"[ERROR] HCCL({code}) something") == [code]


def test_codes_are_found_as_whole_words_only():
    assert ascend_errors.find_codes("EI00061 xEI0006 a-8005b") == []
    assert ascend_errors.find_codes("dcmi ret -8005, then EJ0001") == ["-8005", "EJ0001"]
    assert ascend_errors.explain("EI9999") is None


# ---- verdicts for the faults a cluster really sees

def test_killed_rank_names_its_node_not_the_peer_that_timed_out():
    killed = ("2026-12-01T10:00:05+0000 node2 docker[91]: [W] torch.distributed.elastic: failed (exitcode: -9) "
              "local_rank: 1 (pid: 4242) of binary: python3\n")
    waited = ("2026-12-01T10:00:02+0000 node1 docker[77]: [rank0]: RuntimeError: [../gloo/transport/tcp/pair.cc:534] "
              "Connection closed by peer [10.0.0.12]:4567\n"
              "2026-12-01T10:00:40+0000 node1 docker[77]: [ERROR] HCCL(EI0006) socket timeout\n")
    s = triage.triage({"node1": node(waited), "node2": node(killed)})
    v = s["verdict"]
    assert (v["node"], v["layer"], v["basis"]) == ("node2", "trainer", "first error")
    assert "killed" in v["reason"] and "exitcode: -9" in v["evidence"]
    # the timeline keeps the symptom, marked as such, in time order
    assert [(e["node"], e["secondary"]) for e in s["timeline"]][:2] == [("node1", True), ("node2", False)]
    assert s["codes"][0]["code"] == "EI0006" and s["codes"][0]["nodes"] == ["node1"]


def test_device_link_down_is_the_device_network_layer_of_that_node():
    timeout = "2026-12-01T10:00:02+0000 node1 docker[7]: [ERROR] HCCL(EI0006) socket timeout\n"
    s = triage.triage({"node1": node(timeout), "node2": node(hccn={"0": UP, "1": DOWN})})
    v = s["verdict"]
    assert (v["node"], v["layer"], v["basis"]) == ("node2", "device_network", "state")
    assert "NPU 1: link DOWN" in v["reason"]


def test_stale_process_holding_an_npu_while_the_job_is_down_is_the_driver_layer():
    s = triage.triage({"node1": node(smi=NPU_OK + PROCS, unit="inactive/dead"), "node2": node()})
    v = s["verdict"]
    assert (v["node"], v["layer"]) == ("node1", "driver")
    assert "pid 231405" in v["reason"] and "EJ0001" in v["reason"]
    # while the job runs, its own processes hold the NPUs: no signal
    assert triage.triage({"node1": node(smi=NPU_OK + PROCS, unit="active/running")})["verdict"]["node"] is None


def test_unhealthy_npu_is_hardware_and_unreachable_node_comes_first():
    sick = NPU_OK.replace("| OK            |", "| Critical      |")
    s = triage.triage({"node1": node(smi=sick), "node2": node()})
    assert (s["verdict"]["node"], s["verdict"]["layer"]) == ("node1", "hardware")
    s = triage.triage({"node1": node(smi=sick), "node3": None})
    assert (s["verdict"]["node"], s["verdict"]["basis"]) == ("node3", "state")
    assert s["nodes"]["node3"]["reachable"] is False


def test_non_finite_loss_and_failed_status_file_are_the_trainer_layer():
    j = "2026-12-01T10:00:09+0000 node1 docker[7]: ERROR non-finite loss or gradient norm by step 12\n"
    st = json.dumps({"state": "failed", "exit_code": 4, "reason": "non-finite loss at step 12"})
    s = triage.triage({"node1": node(j, status=st), "node2": node()})
    assert (s["verdict"]["node"], s["verdict"]["layer"]) == ("node1", "trainer")
    assert any(sig["kind"] == "job failed" for sig in s["nodes"]["node1"]["signals"])


def test_only_symptoms_point_at_the_quiet_node():
    t = "2026-12-01T10:00:02+0000 node1 docker[7]: [ERROR] HCCL(EI0006) socket timeout\n"
    s = triage.triage({"node1": node(t), "node2": node()})
    v = s["verdict"]
    assert (v["node"], v["basis"]) == ("node2", "symptom") and "node2 reported nothing" in v["reason"]


def test_kernel_npu_errors_and_an_unreadable_npu_smi():
    k = "2026-12-01T09:59:00+0000 node1 kernel: [devdrv] devdrv_heartbeat: device 3 heartbeat lost\n"
    s = triage.triage({"node1": node(kernel=k)})
    assert (s["verdict"]["layer"], s["timeline"][0]["source"]) == ("driver", "kernel")
    s = triage.triage({"node1": node(smi="dcmi module initialize failed. ret is -8005\n")})
    assert (s["verdict"]["layer"], s["verdict"]["basis"]) == ("driver", "state")
    assert "-8005" in s["verdict"]["reason"]


def test_nothing_wrong_and_markdown_shape():
    s = triage.triage({"node1": node(), "node2": node()})
    assert s["verdict"]["node"] is None and s["verdict"]["reason"] == "no failure found"
    killed = "2026-12-01T10:00:05+0000 node2 docker[9]: Signal 9 (SIGKILL) received by PID 4242\n"
    md = FilterModule().filters()["triage_markdown"](triage.triage({"node1": node(), "node2": node(killed)}))
    assert "**Failed first: node2**, layer **trainer**" in md
    assert "| 2026-12-01T10:00:05Z | node2 | trainer |" in md


def test_iso_timestamps_of_journalctl_are_normalised():
    assert triage._iso("2026-12-01T10:00:05+0100") == "2026-12-01T09:00:05Z"
    assert triage._iso("2026-12-01T10:00:05.123456+00:00") == "2026-12-01T10:00:05Z"
    assert triage._iso("garbage") is None


# ---- the bundle

def test_redact_masks_secret_values_and_keeps_the_keys():
    text = ("HF_TOKEN=hf_abc123\nREGISTRY_PASSWORD: s3cret\nOMP_NUM_THREADS=1\n"
            "Authorization: Bearer eyJhbGci\nurl=https://user:pw@mirror.example/x\n{\"api_key\": \"k-1\"}\n")
    out = redact(text)
    for secret in ("hf_abc123", "s3cret", "eyJhbGci", ":pw@", "k-1"):
        assert secret not in out
    assert "HF_TOKEN=***" in out and "OMP_NUM_THREADS=1" in out and "https://user:***@mirror" in out


def _fake_run(outputs):
    calls = []

    def run(argv, cwd=None):
        calls.append(argv)
        key = " ".join(argv[1:] if argv[0] != "timeout" else argv[3:])
        for pattern, result in outputs.items():
            if pattern in key:
                return result
        return 1, "", f"{argv[0]}: unsupported"
    return run, calls


def test_collector_writes_a_redacted_bundle_and_returns_triage(tmp_path):
    logs = tmp_path / "slog"
    logs.mkdir()
    (logs / "host-0.log").write_text("[ERROR] HCCL(EJ0002) port down\n")
    env = tmp_path / "ascendops.env"
    env.write_text("HF_TOKEN=hf_secret\nMASTER_ADDR=10.0.0.1\n")
    status = tmp_path / "job.json"
    status.write_text(json.dumps({"state": "running", "step": 7}))
    (tmp_path / "big.bin").write_bytes(b"\0" * 2048)
    run, calls = _fake_run({
        "info": (0, NPU_OK, ""),
        "-i 0 -link -g": (0, "link status: UP", ""),
        "-i 0 -net_health -g": (0, "net health status: Success", ""),
        "--unit": (0, "2026-12-01T10:00:00+0000 n1 docker[1]: step 7/100 | loss 2.1 API_KEY=zzz\n", ""),
        "show": (0, "ActiveState=active\nSubState=running\n", ""),
        "--dmesg": (0, "", ""),
    })
    params = {"npu_smi": "/bin/true", "hccn_tool": "/bin/true", "service": "ascendops-train",
              "install_path": str(tmp_path), "journal_lines": 100, "triage_lines": 50,
              "files": [str(env), str(tmp_path / "*.bin"), str(tmp_path / "missing")], "log_dirs": [str(logs)],
              "status_file": str(status), "extra_commands": {}, "max_file_bytes": 1024,
              "max_total_bytes": 10 ** 6, "msnpureport_timeout_s": 5}
    bundle = str(tmp_path / "out" / "collect-x-node1.tar.gz")
    result = Collector(run, params, [0]).collect(bundle)
    assert result["changed"] and oct(os.stat(bundle).st_mode & 0o777) == "0o600"
    names = bundle_members(bundle)
    assert "collect-x-node1/commands/npu_smi_info.txt" in names and "collect-x-node1/index.json" in names
    assert any(n.endswith("slog/host-0.log") for n in names)
    assert "HF_TOKEN=***" in read_member(bundle, "ascendops.env") and "hf_secret" not in read_member(
        bundle, "ascendops.env")
    assert "zzz" not in read_member(bundle, "journal_job.txt")
    index = json.loads(read_member(bundle, "index.json"))
    assert index["left_out"][0]["path"].endswith("big.bin")  # over max_file_bytes: listed, not copied
    stat_cmd = next(c for c in index["commands"] if c["name"] == "hccn_0_stat")
    assert stat_cmd["rc"] == 1  # a command the tool refuses is recorded, not fatal
    t = result["triage"]
    assert t["unit_state"] == "active/running" and t["hccn"]["0"]["link"] == "link status: UP"
    assert json.loads(t["status"])["step"] == 7 and "API_KEY=***" in t["journal"]
    # check mode: the same triage data, no bundle
    again = Collector(run, params, [0]).collect(str(tmp_path / "other.tar.gz"), check_mode=True)
    assert again["bundle"] is None and not os.path.exists(tmp_path / "other.tar.gz")
    assert again["triage"]["unit_state"] == "active/running"


def test_filter_reads_unreached_nodes_as_none():
    s = FilterModule().filters()["triage"]({"node1": node(), "node2": None})
    assert s["nodes"]["node2"]["reachable"] is False and s["verdict"]["node"] == "node2"


def test_collector_since_limits_the_journal_and_the_kernel_log(tmp_path):
    run, calls = _fake_run({"info": (0, NPU_OK, ""), "--unit": (0, "", ""), "show": (0, "", ""),
                            "--dmesg": (0, "", "")})
    params = {"npu_smi": "/bin/true", "hccn_tool": "/bin/true", "service": "ascendops-train",
              "install_path": str(tmp_path), "journal_lines": 100, "triage_lines": 50, "files": [],
              "log_dirs": [], "status_file": str(tmp_path / "none.json"), "extra_commands": {},
              "max_file_bytes": 1024, "max_total_bytes": 10 ** 6, "msnpureport_timeout_s": 5}
    Collector(run, dict(params, since="@1764558000"), []).collect(str(tmp_path / "a.tar.gz"), check_mode=True)
    journals = [c for c in calls if c[0] == "journalctl"]
    assert len(journals) == 2 and all(c[-2:] == ["--since", "@1764558000"] for c in journals)
    calls.clear()
    Collector(run, params, []).collect(str(tmp_path / "b.tar.gz"), check_mode=True)
    assert not any("--since" in c for c in calls)


# ---- net health Init (issue 43 item 2): normal where no net-detect address is configured

INIT = {"link": "link status: UP", "net_health": "net health status: Init"}


def test_net_health_init_without_a_netdetect_address_is_not_a_fault():
    for hccn in ({"0": INIT, "1": UP}, {"0": dict(INIT, netdetect="netdetect address: "), "1": UP}):
        s = triage.triage({"node1": node(hccn=hccn)})
        assert not [e for e in s["nodes"]["node1"]["signals"] if e["kind"] == "device NIC unhealthy"], s


def test_net_health_init_with_a_netdetect_address_and_fault_are_faults():
    probing = dict(INIT, netdetect="netdetect address: 192.168.100.1")
    s = triage.triage({"node1": node(hccn={"0": probing, "1": UP})})
    found = [e["detail"] for e in s["nodes"]["node1"]["signals"] if e["kind"] == "device NIC unhealthy"]
    assert found == ["NPU 0: net health Init (net-detect address 192.168.100.1)"]
    fault = {"link": "link status: UP", "net_health": "net health status: Fault"}
    s = triage.triage({"node1": node(hccn={"0": fault, "1": UP})})
    assert [e["detail"] for e in s["nodes"]["node1"]["signals"] if e["kind"] == "device NIC unhealthy"] == [
        "NPU 0: net health Fault"]
