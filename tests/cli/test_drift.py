"""`ascendops drift`: the report from events (stage attribution, loop items, no_log, errors, exit codes,
JSON schema), and real runs through ansible-runner on a throw-away project on localhost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "cli", "src"))

from ascendops_cli import drift as d  # noqa: E402
from ascendops_cli.main import main  # noqa: E402
from ascendops_cli.stages import STAGES, ProjectError, StageMap  # noqa: E402


@pytest.fixture(scope="module")
def smap():
    return StageMap.load(REPO)


def ev(kind, host="node1", play="", task="t", action="ansible.builtin.copy", res=None, **extra):
    data = {"host": host, "play": play, "task": task, "task_action": action, "res": res or {}}
    data.update(extra)
    return {"event": kind, "event_data": data}


# ---- stage map from the project's own playbooks

def test_stage_map_reads_every_stage_from_site_yml(smap):
    assert set(STAGES) <= set(smap.stage_playbooks)
    assert smap.stage_of("Launch | Rank table, trainer container under systemd on every node, training status") \
        == "launch"
    # the collective pre-flight belongs to the launch stage
    assert smap.stage_of("Collective | All-reduce bandwidth and correctness across every node's devices") == "launch"
    assert smap.stage_of("RoCE | Device NICs, /etc/hccn.conf, host tuning, ping matrix") == "roce"
    # Every stage site.yml imports is one the report keeps (a stage missing here had its drift dropped).
    assert [s for s in smap.stage_playbooks if s not in ("validate", "recap") and not s.startswith("_")] == list(STAGES)
    assert smap.stage_of(None, "/x/roles/slurm/tasks/manage.yml:80") == "slurm"
    assert smap.stage_of(None, "/x/roles/shared_storage/tasks/nfs.yml:3") == "shared_storage"


def test_stage_of_falls_back_to_the_role_or_the_task_file(smap):
    assert smap.stage_of("a renamed play", "/x/roles/cann/tasks/install.yml:12") == "cann"
    assert smap.stage_of(None, None, role="ascendops.cluster.container_runtime") == "container_runtime"
    assert smap.stage_of(None, "/x/playbooks/collective.yml:40") == "launch"
    assert smap.stage_of(None, "/x/roles/ascend/tasks/packages_stage.yml:3") == "other"


def test_stage_playbooks_for_a_filter_start_with_validation(smap):
    books = [os.path.basename(b) for b in smap.playbooks_for(["launch", "roce"])]
    assert books == ["validate.yml", "roce.yml", "collective.yml", "launch.yml"]


def test_project_without_site_yml_is_refused(tmp_path):
    with pytest.raises(ProjectError, match="playbooks/site.yml"):
        StageMap.load(str(tmp_path))


# ---- the report from events

ROCE = "RoCE | Device NICs, /etc/hccn.conf, host tuning, ping matrix"
LAUNCH = "Launch | Rank table, trainer container under systemd on every node, training status"


def test_changes_per_host_and_stage_with_resource_and_short_diff(smap):
    events = [
        ev("runner_on_ok", "node1", ROCE, "RoCE | Device NIC addresses", "ascendops.cluster.hccn",
           {"changed": True, "device": 1,
            "diff": {"before": {"address": "10.0.0.2"}, "after": {"address": "10.0.0.3"}}}),
        ev("runner_on_ok", "node2", ROCE, "RoCE | Device NIC addresses", "ascendops.cluster.hccn", {"changed": False}),
        ev("runner_on_ok", "node1", LAUNCH, "Launch | Rank table", "ansible.builtin.copy",
           {"changed": True, "dest": "/etc/ascendops/rank_table.json",
            "diff": [{"before": "a\nb\n", "after": "a\nc\n", "before_header": "/etc/ascendops/rank_table.json"}]}),
        {"event": "playbook_on_stats", "event_data": {"ok": {"node1": 5, "node2": 5, "localhost": 2}}},
    ]
    r = d.DriftReport.from_events(events, smap, inventory="inv")
    assert r.exit_code == d.EXIT_DRIFT and r.status == "drift"
    assert r.hosts == ["node1", "node2"]  # localhost (validation on the controller) is no node
    by = r.by_host()
    assert list(by["node1"]) == ["roce", "launch"] and by["node2"] == {}
    nic = by["node1"]["roce"][0]
    assert nic.resource == "1"
    assert '- "address": "10.0.0.2"' in nic.diff and '+ "address": "10.0.0.3"' in nic.diff
    table = by["node1"]["launch"][0]
    assert table.resource == "/etc/ascendops/rank_table.json" and table.diff == ["-b", "+c"]
    text = r.render()
    assert "node2: converged" in text and "~ Launch | Rank table  [/etc/ascendops/rank_table.json]" in text


def test_loop_items_are_one_change_each_and_no_log_hides_the_values(smap):
    events = [
        ev("runner_on_ok", "node1", "Preflight | Refuse unsupported hosts, prepare the OS", "Preflight | Sysctl",
           "ansible.posix.sysctl", {"changed": True, "results": [
               {"changed": True, "item": {"key": "vm.swappiness", "value": 0}, "_ansible_item_label": "vm.swappiness"},
               {"changed": False, "item": "kernel.numa_balancing"}]}),
        ev("runner_on_ok", "node1", "Container runtime | Engine, Ascend Docker Runtime, daemon.json and the trainer "
           "image", "Container runtime | Registry login", "community.docker.docker_login",
           {"changed": True, "censored": "the output has been hidden due to the fact that 'no_log: true' was "
                                         "specified for this result"}),
    ]
    r = d.DriftReport.from_events(events, smap, inventory="inv")
    pre = r.by_host()["node1"]["preflight"]
    assert [c.resource for c in pre] == ["vm.swappiness"]
    hidden = r.by_host()["node1"]["container_runtime"][0]
    assert hidden.hidden and hidden.diff == []
    assert "no_log" in r.render() and "censored" not in json.dumps(r.to_json())


def test_a_registry_tag_moved_upstream_is_container_runtime_drift_naming_the_image(smap):
    # docker_tag_drift's check-mode result (roles/container_runtime/tasks/image.yml), as the module returns it
    image, old, new = "registry.example.com/ascendops/trainer:1.0", "sha256:" + "a" * 64, "sha256:" + "b" * 64
    events = [ev("runner_on_ok", "node1", "", "Container runtime | Report a registry tag moved since the node pulled "
                 "it (read-only, never pulled)", "ascendops.cluster.docker_tag_drift",
                 {"changed": True, "state": "moved", "image": image, "local_digests": [old], "remote_digest": new,
                  "diff": {"before": f"{image}: {old}\n", "after": f"{image}: {new}\n"}},
                 task_path="/x/roles/container_runtime/tasks/image.yml:52")]
    r = d.DriftReport.from_events(events, smap, inventory="inv")
    (change,) = r.by_host()["node1"]["container_runtime"]
    assert change.resource == image and change.diff == [f"-{image}: {old}", f"+{image}: {new}"]
    assert r.exit_code == d.EXIT_DRIFT


def test_unreachable_and_failed_hosts_are_errors_named_with_stage_and_task(smap):
    events = [
        ev("runner_on_unreachable", "node3", "Validate | Every role's checks, read-only on the nodes",
           "Gathering Facts", "gather_facts", {"msg": "Failed to connect to the host via ssh: Connection refused",
                                               "unreachable": True}),
        ev("runner_on_failed", "node1", ROCE, "RoCE | Check links", "ansible.builtin.assert",
           {"msg": "node1: NPU 1 link DOWN"}),
        ev("runner_on_failed", "node2", ROCE, "RoCE | Optional probe", "ansible.builtin.command",
           {"msg": "ignored"}, ignore_errors=True),
    ]
    r = d.DriftReport.from_events(events, smap, inventory="inv")
    assert r.exit_code == d.EXIT_ERROR
    assert [(f.host, f.stage, f.kind) for f in r.failures] == [("node3", "validate", "unreachable"),
                                                               ("node1", "roce", "failed")]
    assert "ERROR (failed) node1 / roce / RoCE | Check links: node1: NPU 1 link DOWN" in r.render()
    assert r.to_json()["hosts"]["node1"]["status"] == "error"


def test_a_run_that_fails_before_any_task_is_an_error_with_its_output(smap):
    r = d.DriftReport.from_events([], smap, inventory="inv", rc=4,
                                  stdout_tail="ERROR! the playbook could not be found\n")
    assert r.exit_code == d.EXIT_ERROR
    assert "exited 4" in r.failures[0].message and "could not be found" in r.failures[0].message


def test_stage_filter_drops_other_stages_changes(smap):
    events = [ev("runner_on_ok", "node1", ROCE, "RoCE | x", res={"changed": True}),
              ev("runner_on_ok", "node1", LAUNCH, "Launch | y", res={"changed": True})]
    r = d.DriftReport.from_events(events, smap, inventory="inv", stages=["launch"])
    assert [c.stage for c in r.changes] == ["launch"]


def test_converged_is_exit_0_and_json_schema(smap):
    events = [ev("runner_on_ok", "node1", ROCE, "RoCE | x", res={"changed": False})]
    r = d.DriftReport.from_events(events, smap, inventory="inventories/prod", limit="node1")
    assert r.exit_code == d.EXIT_CONVERGED
    j = r.to_json()
    assert set(j) == {"schema", "status", "exit_code", "inventory", "limit", "stages", "duration_s", "summary",
                      "hosts", "errors"}
    assert j["schema"] == 1 and j["status"] == "converged" and j["limit"] == "node1"
    assert j["summary"] == {"hosts": 1, "hosts_drifted": 0, "changes": 0, "not_checkable": 0, "errors": 0}
    assert j["hosts"]["node1"] == {"status": "converged", "changes": 0, "stages": {}, "not_checkable": {}}


DRIVER = "NPU driver | Driver and firmware, reboots in batches, NPU health"
COLLECTIVE = "Collective | All-reduce bandwidth and correctness across every node's devices"
WHY = ("the NPU driver is not installed yet (the npu_driver stage above installs 25.2.0); run without --check, "
       "or install the driver first")


def test_a_node_without_its_driver_shows_the_driver_change_and_later_stages_not_checkable(smap):
    """--check on node1 without its driver: the driver stage's change, then roce, the collective pre-flight and
    launch each say once that they are not checkable there (launch on node2 too: it spans the cluster). Neither
    a change nor an error: drift (exit 2), no failure."""
    events = [
        ev("runner_on_ok", "node1", DRIVER, "NPU driver | Install or upgrade each package",
           "ascendops.cluster.ascend_package",
           {"changed": True, "results": [{"changed": True, "item": "driver",
                                          "diff": {"before": "driver: none\n", "after": "driver: 25.2.0\n"}}]}),
        ev("runner_on_ok", "node1", ROCE, "RoCE | Say the device NICs are not checkable", "ansible.builtin.debug",
           {"changed": False, "msg": f"node1: roce not checkable in --check: {WHY}"}),
        ev("runner_on_ok", "node1", COLLECTIVE, "Collective | Say ...", "ansible.builtin.debug",
           {"msg": f"node1: collective pre-flight not checkable in --check: {WHY}"}),
        ev("runner_on_ok", "node1", LAUNCH, "Launch | Say ...", "ansible.builtin.debug",
           {"msg": f"node1: launch not checkable in --check: (a second line of the stage) {WHY}"}),
        ev("runner_on_ok", "node2", LAUNCH, "Launch | Say ...", "ansible.builtin.debug",
           {"msg": "node2: launch not checkable in --check: it spans every node, and node1 has no running\nNPU "
                   "driver yet"}),
        ev("runner_on_ok", "node2", ROCE, "RoCE | other debug", "ansible.builtin.debug", {"msg": "RoCE check passed"}),
        {"event": "playbook_on_stats", "event_data": {"ok": {"node1": 9, "node2": 9}}},
    ]
    r = d.DriftReport.from_events(events, smap, inventory="inv")
    assert not r.failures
    assert r.exit_code == d.EXIT_DRIFT and r.status == "drift"
    assert [(c.host, c.stage, c.resource) for c in r.changes] == [("node1", "npu_driver", "driver")]
    # one entry per host and stage (the collective pre-flight is the launch stage's: its line is kept, the
    # launch play's second line for node1 is not), the reason's whitespace folded
    assert r.not_checkable_by_host() == {"node1": {"roce": WHY, "launch": WHY},
                                         "node2": {"launch": "it spans every node, and node1 has no running NPU "
                                                             "driver yet"}}
    j = r.to_json()
    assert j["summary"] == {"hosts": 2, "hosts_drifted": 1, "changes": 1, "not_checkable": 3, "errors": 0}
    assert j["hosts"]["node1"]["status"] == "drift" and j["hosts"]["node2"]["status"] == "not_checkable"
    assert list(j["hosts"]["node1"]["not_checkable"]) == ["roce", "launch"]
    out = r.render()
    assert "3 stage(s) not checkable on 2 host(s)" in out.splitlines()[0]
    assert "  npu_driver:\n    ~ NPU driver | Install or upgrade each package  [driver]" in out
    assert f"  roce: not checkable: {WHY}" in out
    assert "node2:\n  launch: not checkable: it spans every node" in out
    assert "ERROR" not in out and "converged" not in out


def test_not_checkable_lines_of_a_stage_left_out_are_dropped_and_a_converged_host_stays_converged(smap):
    events = [ev("runner_on_ok", "node1", ROCE, "RoCE | Say", "ansible.builtin.debug",
                 {"msg": f"node1: roce not checkable in --check: {WHY}"}),
              ev("runner_on_ok", "node2", LAUNCH, "Launch | x", res={"changed": False})]
    r = d.DriftReport.from_events(events, smap, inventory="inv", stages=["launch"])
    assert r.not_checkable == [] and r.exit_code == d.EXIT_CONVERGED
    assert r.to_json()["hosts"]["node2"]["status"] == "converged"


def test_summarize_diff_prepared_text_and_limit():
    prepared = {"prepared": "--- before\n+++ after\n@@ -1 +1 @@\n-old\n+new\n"}
    assert d.summarize_diff(prepared) == ["-old", "+new"]
    many = {"before": "\n".join(map(str, range(30))), "after": ""}
    out = d.summarize_diff(many, limit=5)
    assert len(out) == 6 and out[-1] == "... 25 more line(s)"
    assert d.summarize_diff({"before": "same", "after": "same"}) == []
    package = {"before": "#!/bin/sh\n" * 2000, "after": ""}
    assert d.summarize_diff(package) == ["~ content differs (2001 lines before, 1 after)"]


def test_json_files_are_compared_by_content_not_by_their_indentation():
    """daemon.json written by hand with other indentation: only the changed value shows."""
    opts = {"max-file": "5"}
    before = json.dumps({"data-root": "/var/lib/docker", "live-restore": False, "log-opts": opts}, indent=4)
    after = json.dumps({"live-restore": True, "data-root": "/var/lib/docker", "log-opts": opts}, indent=2)
    assert d.summarize_diff({"before": before, "after": after}) == [
        '- "live-restore": false,', '+ "live-restore": true,']


def test_a_failed_loop_names_its_failed_items(smap):
    res = {"msg": "One or more items failed", "results": [
        {"failed": False, "item": "a.run"},
        {"failed": True, "item": "driver.run", "msg": "staged package missing (check mode)"}]}
    r = d.DriftReport.from_events([ev("runner_on_failed", res=res)], smap, inventory="inv")
    assert r.failures[0].message == "[driver.run] staged package missing (check mode)"


# ---- real runs through ansible-runner on localhost (a throw-away project shaped like ours)

def _project(tmp_path, stage_tasks: dict[str, str]) -> str:
    proj = tmp_path / "proj"
    (proj / "playbooks").mkdir(parents=True)
    names = {"validate": "Validate | inventory", "preflight": "Preflight | OS", "npu_driver": "NPU driver | d",
             "cann": "CANN | c", "roce": "RoCE | r", "container_runtime": "Container runtime | e",
             "shared_storage": "Shared storage | s", "slurm": "Slurm | m", "collective": "Collective | a",
             "launch": "Launch | j"}
    site = ["---"]
    for stem, name in names.items():
        tasks = stage_tasks.get(stem, "    - name: noop\n      ansible.builtin.ping:\n")
        (proj / "playbooks" / f"{stem}.yml").write_text(
            f"---\n- name: {name}\n  hosts: npu_nodes\n  gather_facts: false\n  tasks:\n{tasks}")
        site.append(f"- ansible.builtin.import_playbook: {stem}.yml")
    (proj / "playbooks" / "site.yml").write_text("\n".join(site) + "\n")
    return str(proj)


def _inventory(tmp_path, extra_host: str = "") -> str:
    inv = tmp_path / "hosts.yml"
    py = sys.executable
    inv.write_text(textwrap.dedent(f"""\
        all:
          children:
            npu_nodes:
              hosts:
                node1: {{ansible_connection: local, ansible_python_interpreter: {py}}}
                {extra_host}
        """))
    return str(inv)


def test_real_run_reports_drift_then_converged_and_never_changes_the_node(tmp_path):
    target = tmp_path / "hccn.conf"
    target.write_text("address_0=10.0.0.2\n")
    tasks = (f"    - name: RoCE | /etc/hccn.conf\n      ansible.builtin.copy:\n        dest: {target}\n"
             "        content: \"address_0=10.0.0.3\\n\"\n        mode: '0644'\n")
    proj = _project(tmp_path, {"roce": tasks})
    inv = _inventory(tmp_path)
    out = tmp_path / "drift.json"
    rc = main(["drift", "-i", inv, "--project-dir", proj, "--json", str(out)])
    assert rc == d.EXIT_DRIFT
    assert target.read_text() == "address_0=10.0.0.2\n"  # check mode: untouched
    report = json.loads(out.read_text())
    change = report["hosts"]["node1"]["stages"]["roce"][0]
    assert change["task"] == "RoCE | /etc/hccn.conf" and change["resource"] == str(target)
    assert change["diff"] == ["-address_0=10.0.0.2", "+address_0=10.0.0.3"]
    # converged: the file as the playbook wants it
    target.write_text("address_0=10.0.0.3\n")
    assert main(["drift", "-i", inv, "--project-dir", proj, "--stage", "roce"]) == d.EXIT_CONVERGED


def test_real_run_unreachable_host_and_bad_inventory_are_errors(tmp_path, capsys):
    proj = _project(tmp_path, {})
    inv = _inventory(tmp_path, extra_host="node9: {ansible_host: 127.0.0.1, ansible_port: 1, "
                                          "ansible_connection: ssh, ansible_ssh_common_args: '-o ConnectTimeout=3'}")
    assert main(["drift", "-i", inv, "--project-dir", proj]) == d.EXIT_ERROR
    out = capsys.readouterr().out
    assert "ERROR (unreachable) node9" in out
    assert main(["drift", "-i", str(tmp_path / "missing.yml"), "--project-dir", proj]) == d.EXIT_ERROR
    assert "does not exist" in capsys.readouterr().err


def test_console_script_help_lists_the_stages():
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": os.path.join(REPO, "cli", "src")}
    out = subprocess.run([sys.executable, "-m", "ascendops_cli.main", "drift", "--help"], capture_output=True,
                         text=True, env=env, check=True)
    assert "preflight, npu_driver, cann, roce, container_runtime, shared_storage, slurm, launch" in out.stdout


# ---- per-stage timing (scripts/bench-rerun.sh)

def test_stage_seconds_from_the_play_banners_as_they_come(smap):
    from ascendops_cli.timing import medians, read_output, stage_seconds

    def banner(name):
        return f"PLAY [{name}] " + "*" * max(3, 60 - len(name))

    output = [(0.0, banner("Validate | Controller and inventory")), (0.5, "TASK [Validate | x] ***"),
              (4.0, banner("Validate | Every role's checks, read-only on the nodes")), (6.0, banner(ROCE)),
              (9.0, "ok: [node1] => PLAY [not a banner] ***"),
              (16.0, banner("Collective | All-reduce bandwidth and correctness across every node's devices")),
              (20.0, banner(LAUNCH)), (30.0, "PLAY RECAP *********"),
              (30.0, "node1                      : ok=91   changed=0    unreachable=0    failed=0    skipped=68"),
              (30.0, "node2                      : ok=79   changed=1    unreachable=0    failed=0    skipped=68")]
    out = read_output(output)
    assert out["changed"] == 1 and out["end"] == 30.0 and len(out["plays"]) == 5
    assert stage_seconds(out["plays"], out["end"], smap) == {"validate": 6.0, "roce": 10.0, "launch": 14.0}
    # a run that stopped before its recap: no changed count, the stages up to the last banner
    cut = read_output(output[:6])
    assert cut["changed"] == -1 and cut["end"] is None
    assert stage_seconds(cut["plays"], cut["end"], smap) == {"validate": 6.0, "roce": 10.0, "launch": 0.0}
    m = medians([{"rc": 0, "wall_s": 30.0, "changed": 0, "stages": {"roce": 10.0}},
                 {"rc": 0, "wall_s": 20.0, "changed": 0, "stages": {"roce": 6.0}},
                 {"rc": 0, "wall_s": 25.0, "changed": 0, "stages": {"roce": 8.0}}])
    assert m["total_s"] == 25.0 and m["stages"] == {"roce": 8.0}


def test_extra_vars_reach_ansible_playbook_as_its_own_minus_e_reads_them(tmp_path, monkeypatch):
    """-e values go to ansible-playbook unchanged (through ansible-runner's cmdline): quoted KEY=VALUE pairs,
    YAML/JSON and @file (relative to where the command runs, as for ansible-playbook), each read by Ansible
    itself, the later value winning."""
    target = tmp_path / "seen"
    target.write_text("")
    tasks = (f"    - name: RoCE | What the variables say\n      ansible.builtin.copy:\n        dest: {target}\n"
             "        content: \"{{ a }}|{{ b }}|{{ c | to_json }}|{{ d }}\\n\"\n        mode: '0644'\n")
    proj = _project(tmp_path, {"roce": tasks})
    inv = _inventory(tmp_path)
    varfile = tmp_path / "vars.yml"
    varfile.write_text("d: from the file\nb: overridden\n")
    out = tmp_path / "drift.json"
    monkeypatch.chdir(tmp_path)
    rc = main(["drift", "-i", inv, "--project-dir", proj, "--json", str(out), "-e", "a='two words' b=x",
               "-e", '{"c": [1, 2]}', "-e", f"@{varfile.name}", "-e", "d=last"])
    assert rc == d.EXIT_DRIFT, out.read_text() if out.exists() else rc
    change = json.loads(out.read_text())["hosts"]["node1"]["stages"]["roce"][0]
    assert change["diff"] == ["+two words|overridden|[1, 2]|last"]
    assert target.read_text() == ""


@pytest.mark.parametrize("value,message", [
    ("noequals", "-e 'noequals': 'noequals' is not KEY=VALUE"),
    ("a=1 stray", "-e 'a=1 stray': 'stray' is not KEY=VALUE"),
    ("@missing.yml", "-e '@missing.yml': {tmp}/missing.yml is not a file"),
    ("{not json", "-e '{not json': YAML parsing failed"),
    ("[1, 2]", "-e '[1, 2]': not a mapping of variables"),
    ('a="open', "-e 'a=\"open': failed at splitting arguments"),
    ("./vars.yml", "-e './vars.yml': a file of variables is given as @FILE"),
])
def test_a_bad_extra_var_is_refused_by_name_before_any_run(tmp_path, capsys, monkeypatch, value, message):
    """Ansible's own readers judge each -e value before ansible-runner starts anything: ansible-playbook would
    take a word without `=` silently (as `_raw_params`) and fail on the others only after its start."""
    import ansible_runner

    def never(**_kwargs):
        raise AssertionError("ansible-runner started")

    monkeypatch.setattr(ansible_runner, "run", never)
    monkeypatch.chdir(tmp_path)
    proj, inv = _project(tmp_path, {}), _inventory(tmp_path)
    assert main(["drift", "-i", inv, "--project-dir", proj, "-e", "ok=1", "-e", value]) == d.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("ascendops drift: error: " + message.replace("{tmp}", str(tmp_path))), err
    assert d.extra_vars_args(["ok=1", "", "@" + inv]) == ["-e", "ok=1", "-e", "@" + inv]
