"""Cluster-wide work runs once per run, never on every host (issue 45): a task that reads many hosts' variables
(``map('extract', hostvars ...)``, or ``hostvars[...]`` in a ``{% for %}`` loop) in a play over the nodes must be
``run_once`` (itself or its block), else each of N hosts reads N hosts' variables - every read builds that host's
whole variable set, so 1,000 nodes cost a million of them. ``when:`` and ``vars:`` of an include count too:
Ansible evaluates them on every host. One host's ``hostvars[x]`` is not flagged. The exceptions are named with
their reason."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
CROSS_HOST = re.compile(r"map\(\s*'extract',\s*hostvars|\{%-?\s*for\b[^%]*%\}.*?hostvars\[(?!inventory_hostname\])")
# Per host over a bounded set, on purpose.
ALLOWED = {
    # each new node (a handful per add_node.yml run) pings the existing nodes' devices: new x N, not N x N
    ("playbooks/_scale_restart.yml",
     "Scale | Ping from each new node's devices to the existing nodes' devices, and back"),
    # the message of a failed upgrade batch: every node of the batch (upgrade_batch_size) on the failure path only
    ("playbooks/upgrade.yml", "Upgrade | Stop and say which node and which check failed"),
}


def _tasks(node, run_once=False, hosts=None):
    """(task, run_once in effect, the play's hosts) for every task, block and play header below node."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item, run_once, hosts)
    elif isinstance(node, dict):
        if "hosts" in node:
            inner = node.get("run_once", False)
            for key in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                yield from _tasks(node.get(key, []), inner, node["hosts"])
            return
        if "block" in node:
            inner = node.get("run_once", run_once)
            for key in ("block", "rescue", "always"):
                yield from _tasks(node.get(key, []), inner, hosts)
            yield {k: v for k, v in node.items() if k not in ("block", "rescue", "always")}, inner, hosts
            return
        yield node, node.get("run_once", run_once), hosts


def per_host_cluster_reads(repo=REPO):
    found = []
    files = sorted([*repo.glob("roles/*/tasks/*.yml"), *repo.glob("roles/*/handlers/*.yml"),
                    *repo.glob("playbooks/*.yml"), *repo.glob("site.yml")])
    for path in files:
        rel = str(path.relative_to(repo))
        for task, run_once, hosts in _tasks(yaml.safe_load(path.read_text()) or []):
            text = " ".join(yaml.safe_dump(task, width=10**9).split())
            if not CROSS_HOST.search(text) or run_once or hosts == "localhost":
                continue
            if (rel, task.get("name")) not in ALLOWED:
                found.append(f"{rel}: {task.get('name')}")
    return found


def test_no_task_on_every_host_reads_every_hosts_variables():
    assert per_host_cluster_reads() == []


def test_the_check_finds_a_per_host_include_condition_over_every_host(tmp_path):
    """The check itself: the pattern that cost N x N reads in release_validate.yml and status.yml is found."""
    role = tmp_path / "roles" / "x" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text(
        "- name: X | Include where any node changes\n"
        "  ansible.builtin.include_tasks: y.yml\n"
        "  when: ansible_play_hosts | map('extract', hostvars) | selectattr('z', 'defined') | list | length > 0\n"
        "- name: X | Once\n"
        "  ansible.builtin.set_fact:\n"
        "    a: \"{{ ansible_play_hosts | map('extract', hostvars, 'z') | list }}\"\n"
        "  run_once: true\n")
    assert per_host_cluster_reads(tmp_path) == ["roles/x/tasks/main.yml: X | Include where any node changes"]
