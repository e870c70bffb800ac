"""roles/roce/tasks/settle.yml (issue 43 item 7), run on localhost with a fake hccn_tool whose NPU 1 reports
net health Fault for its first reads, then Success: the wait re-reads until the port settles, replaces the
ports read for the report, and says how long it waited; a port that never settles is left to the report
after roce_settle_timeout_s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow

FAKE = r"""#!/bin/sh
# hccn_tool -i N <cmd> -g
dev=$2; cmd=$3
case "$cmd" in
  -ip) echo "ipaddr:192.168.121.10$dev"; echo "netmask:255.255.255.0";;
  -gateway) echo "default gateway:, Iface:eth$dev";;
  -netdetect) echo "netdetect address: 192.168.121.1";;
  -tls) echo "dev_id:$dev, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset)";;
  -link) echo "link status: UP";;
  -speed) echo "Speed: 200000 Mb/s";;
  -net_health)
    if [ "$dev" = 1 ]; then
      n=$(cat "$STATE" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$STATE"
      if [ "$n" -le "$FAULTY_READS" ]; then echo "net health status: Fault"; exit 0; fi
    fi
    echo "net health status: Success";;
  *) echo "not support"; exit 1;;
esac
"""


def _run(tmp_path, faulty_reads, timeout_s):
    tool = tmp_path / "hccn_tool"
    tool.write_text(FAKE)
    tool.chmod(0o755)
    plan = [{"device_id": str(d), "address": f"192.168.121.10{d}", "netmask": "255.255.255.0",
             "netdetect": "192.168.121.1"} for d in (0, 1)]
    ports = {"changed": True, "devices": [
        {"device_id": "0", "link": "UP", "health": "Success", "netdetect": "192.168.121.1"},
        {"device_id": "1", "link": "UP", "health": "Fault", "netdetect": "192.168.121.1"}]}
    play = [{"hosts": "localhost", "gather_facts": False,
             "vars": {"__roce_ports": ports, "__roce_my_plan": plan, "__roce_phy_ids": [],
                      "roce_hccn_tool": str(tool), "__roce_missing_tool_msg": "no hccn_tool", "roce_hccn_retries": 0,
                      "roce_hccn_delay": 0, "roce_settle_timeout_s": timeout_s, "roce_settle_delay_s": 1,
                      "roce_stat_check": True},
             "tasks": [{"name": "settle", "ansible.builtin.include_tasks": str(REPO / "roles/roce/tasks/settle.yml")},
                       {"name": "report", "ansible.builtin.debug": {
                           "msg": "RESULT {{ __roce_ports.devices | map(attribute='health') | list | to_json }}"}}]}]
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(play))
    py = Path(sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", STATE=str(tmp_path / "n"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
               FAULTY_READS=str(faulty_reads), PATH=f"{py.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(py.parent / "ansible-playbook"), str(path), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={py}"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = next(line.split("RESULT ", 1)[1] for line in proc.stdout.splitlines() if "RESULT " in line)
    return proc.stdout, json.loads(result.strip().strip('"').replace('\\"', '"'))


def test_waits_until_the_port_settles_and_says_how_long(tmp_path):
    out, health = _run(tmp_path, faulty_reads=2, timeout_s=30)
    assert health == ["Success", "Success"]
    assert "localhost: waited" in out and "(NPU 1: link UP, net health Fault): all settled" in out


def test_a_port_that_never_settles_is_left_to_the_report_after_the_timeout(tmp_path):
    out, health = _run(tmp_path, faulty_reads=1000, timeout_s=3)
    assert health == ["Success", "Fault"]
    assert "(at most 3 s)" in out and "still not settled: NPU 1: link UP, net health Fault" in out
