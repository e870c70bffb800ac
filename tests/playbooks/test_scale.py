"""playbooks/remove_node.yml and add_node.yml on the controller: the plan printed in --check with nothing
changed, and the refusals before any change (no confirm, unknown node, a world size the trainer's rules
refuse, no universal-checkpoint resume for a new world size, another node unreachable). The probe of
the nodes is a stand-in (day2.py); no task targets a removed node."""

from __future__ import annotations

import pytest
import yaml
from ansible_collections.ascendops.cluster.plugins.module_utils.trainer_rules import TRAINER_KEYS

from .day2 import ROOT, run_playbook

pytestmark = pytest.mark.slow

# The trainer's universal-checkpoint resume (payload/, checkpoint.resume_universal): without it a new
# world size is refused.
UNIVERSAL = "checkpoint.resume_universal" in TRAINER_KEYS
SAMPLE_JOB = yaml.safe_load((ROOT / "inventories/sample/group_vars/all/job.yml").read_text())["launch_job"]
# The sample keeps checkpoints on each node's own disk, which no change of nodes can resume from: the
# plans that must pass put them on one file system.
SHARED_JOB = dict(SAMPLE_JOB, checkpoint_shared_fs=True)
ANSWERS = {"scale_reachable": True, "scale_job_servers": ["192.0.2.11", "192.0.2.12"], "scale_job_running": True}
SPARE = {"npu_spares": {"a2-spare01": {"ansible_host": "192.0.2.31", "roce_address_offset": 40}}}
THIRD = {"npu_nodes": {"a2-node03": {"ansible_host": "192.0.2.13", "roce_address_offset": 30}}}


def answers(*nodes):
    return {n: dict(ANSWERS) for n in nodes}


def test_remove_without_confirm_is_refused_before_anything(tmp_path):
    run = run_playbook(tmp_path, "remove_node.yml", answers("a2-node01"), {"nodes": "a2-node02"})
    assert run.rc != 0
    assert "remove_node.yml refused, nothing changed: -e confirm=yes is required" in run.text
    assert "Remove node | Ping" not in run.text


def test_remove_of_a_node_not_in_npu_nodes_is_refused(tmp_path):
    run = run_playbook(tmp_path, "remove_node.yml", answers("a2-node01"), {"nodes": "a2-node09", "confirm": "yes"})
    assert run.rc != 0
    assert "a2-node09 not in npu_nodes (a2-node01, a2-node02)" in run.text


def test_remove_with_a_spare_prints_the_plan_in_check_mode_and_targets_nothing_on_the_dead_node(tmp_path):
    run = run_playbook(tmp_path, "remove_node.yml", answers("a2-node01", "a2-spare01"),
                       {"nodes": "a2-node02", "confirm": "yes", "swap": True, "launch_job": SHARED_JOB}, check=True,
                       inventory_hosts=SPARE)
    assert run.rc == 0, run.out
    assert "Remove a2-node02: job of 2 node(s), world size 16 -> 16" in run.text
    assert "Swapped: a2-node02 -> spare a2-spare01 (takes its place)" in run.text
    assert "Job nodes: a2-node01, a2-spare01" in run.text
    assert "Step 1: stop_job (nodes a2-node01, checkpoint True, skipped_dead a2-node02)" in run.text
    assert "Step 2: prepare (nodes a2-spare01)" in run.text
    assert "Check mode: the plan above was printed and nothing changed" in run.text
    # Not one task ran on (or for) the removed node (the stand-in probe before the playbook aside).
    playbook_out = run.out[run.out.index("PLAY [Remove node | Request"):run.out.index("PLAY RECAP")]
    assert "a2-node01" in playbook_out and "a2-node02]" not in playbook_out
    assert set(run.recap_changed().values()) == {0}, run.out


def test_remove_is_refused_when_another_node_does_not_answer(tmp_path):
    facts = answers("a2-node01")
    facts["a2-node01"]["scale_reachable"] = True
    run = run_playbook(tmp_path, "remove_node.yml", {}, {"nodes": "a2-node02", "confirm": "yes", "swap": True},
                       check=True, inventory_hosts=SPARE)
    assert run.rc != 0
    assert "Unreachable (refused): a2-node01, a2-spare01" in run.text


def test_a_smaller_world_size_the_trainer_refuses_and_no_universal_resume_are_named(tmp_path):
    job = dict(SAMPLE_JOB, global_batch_size=48, micro_batch_size=2)
    run = run_playbook(tmp_path, "remove_node.yml", answers("a2-node01", "a2-node02"),
                       {"nodes": "a2-node03", "confirm": "yes", "launch_job": job}, check=True, inventory_hosts=THIRD)
    assert run.rc != 0
    assert "remove_node.yml refused, nothing changed" in run.text
    assert "the job at world size 16 (2 nodes)" in run.text
    assert "launch_job.global_batch_size (48) is not divisible by launch_job.micro_batch_size (2)" in run.text
    assert ("the trainer has no checkpoint.resume_universal" in run.text) is not UNIVERSAL


def test_add_prints_the_plan_in_check_mode(tmp_path):
    job = dict(SHARED_JOB, global_batch_size=48, micro_batch_size=2)
    run = run_playbook(tmp_path, "add_node.yml", answers("a2-node01", "a2-node02", "a2-node03"),
                       {"nodes": "a2-node03", "launch_job": job}, check=True, inventory_hosts=THIRD)
    assert "Add a2-node03: job of 3 node(s), world size 16 -> 24" in run.text
    assert "Step 2: prepare (nodes a2-node03)" in run.text
    assert "Step 3: check_reachability (from a2-node03, to a2-node01, a2-node02)" in run.text
    assert "Step 4: check_shared_storage (nodes a2-node03, with a2-node01, a2-node02)" in run.text
    assert "convert_checkpoint (to universal, from_world_size 16, to_world_size 24)" in run.text
    if UNIVERSAL:
        assert run.rc == 0, run.out
        assert "Check mode: the plan above was printed and nothing changed" in run.text
    else:
        assert run.rc != 0
        assert "add_node.yml refused, nothing changed" in run.text
        assert "the trainer has no checkpoint.resume_universal" in run.text
    assert set(run.recap_changed().values()) == {0}, run.out


def test_add_is_refused_when_the_job_never_resumes_at_another_world_size(tmp_path):
    job = dict(SAMPLE_JOB, global_batch_size=48, micro_batch_size=2,
               config={"checkpoint": {"resume_universal": "never"}})
    run = run_playbook(tmp_path, "add_node.yml", answers("a2-node01", "a2-node02", "a2-node03"),
                       {"nodes": "a2-node03", "launch_job": job}, check=True, inventory_hosts=THIRD)
    assert run.rc != 0
    if UNIVERSAL:
        assert "launch_job.config.checkpoint.resume_universal is never" in run.text
    else:
        # The trainer refuses the key itself, and the resume at 24 ranks is refused.
        assert "unknown config key 'launch_job.config.checkpoint.resume_universal'" in run.text
        assert "the trainer has no checkpoint.resume_universal" in run.text


def test_add_of_a_node_not_in_the_inventory_or_not_answering_is_refused(tmp_path):
    run = run_playbook(tmp_path, "add_node.yml", answers("a2-node01", "a2-node02"), {"nodes": "a2-node07"}, check=True)
    assert run.rc != 0
    assert "a2-node07 not in npu_nodes (a2-node01, a2-node02): add the new nodes to npu_nodes" in run.text
    (tmp_path / "third").mkdir()
    run = run_playbook(tmp_path / "third", "add_node.yml", answers("a2-node01", "a2-node02"), {"nodes": "a2-node03"},
                       check=True, inventory_hosts=THIRD)
    assert run.rc != 0
    assert "a2-node03: reachable: a2-node03 is unreachable; a node to add must answer" in run.text


def test_node_local_checkpoints_refuse_a_change_of_nodes_before_the_job_is_stopped(tmp_path):
    job = dict(SAMPLE_JOB, global_batch_size=48, micro_batch_size=2)
    run = run_playbook(tmp_path, "add_node.yml", answers("a2-node01", "a2-node02", "a2-node03"),
                       {"nodes": "a2-node03", "launch_job": job}, check=True, inventory_hosts=THIRD)
    assert run.rc != 0
    assert "add_node.yml refused, nothing changed" in run.text
    assert ("the job's checkpoints are on each node's own disk (launch_job.checkpoint_dir /data/llama3/checkpoints; "
            "shared_storage_type is none): a2-node03 would start without a checkpoint shard") in run.text
    assert "ascendops-train export" in run.text
    assert "Check mode: the plan above" not in run.text
    assert set(run.recap_changed().values()) == {0}, run.out
    (tmp_path / "spare").mkdir()
    run = run_playbook(tmp_path / "spare", "remove_node.yml", answers("a2-node01", "a2-spare01"),
                       {"nodes": "a2-node02", "confirm": "yes", "swap": True}, check=True, inventory_hosts=SPARE)
    assert run.rc != 0
    assert "remove_node.yml refused, nothing changed" in run.text
    assert "a2-spare01 would start without a checkpoint shard; the shards of a2-node02 stay on it" in run.text
