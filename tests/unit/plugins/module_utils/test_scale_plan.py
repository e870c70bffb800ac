"""Adding, removing and swapping nodes of a running job (plugins/module_utils/scale_plan.py)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import plan_scale


def steps(p):
    return [s["step"] for s in p["steps"]]


def test_scale_up_two_to_three_appends_and_needs_the_universal_checkpoint():
    p = plan_scale(["node1", "node2"], add=["node3"], global_batch_size=48, micro_batch_size=1)
    assert p["refused"] == []
    assert p["nodes"] == ["node1", "node2", "node3"]
    assert p["ranks"] == {"node1": [0, 7], "node2": [8, 15], "node3": [16, 23]}
    assert (p["world_size_before"], p["world_size"]) == (16, 24)
    assert p["universal_checkpoint"] is True
    assert steps(p) == ["stop_job", "prepare", "check_reachability", "check_shared_storage", "rank_table",
                        "convert_checkpoint", "start_job"]
    assert p["steps"][1]["nodes"] == ["node3"]
    assert p["steps"][2] == {"step": "check_reachability", "from": ["node3"], "to": ["node1", "node2"]}
    assert p["steps"][3] == {"step": "check_shared_storage", "nodes": ["node3"], "with": ["node1", "node2"]}
    assert p["steps"][5]["from_world_size"] == 16 and p["steps"][5]["to_world_size"] == 24
    assert p["steps"][-1]["resume"] == "universal" and p["steps"][-1]["world_size"] == 24


def test_existing_nodes_keep_their_ranks_when_nodes_are_added():
    before = plan_scale(["b", "a"], devices_per_node=2)["ranks"]
    after = plan_scale(["b", "a"], add=["z", "c"], devices_per_node=2)
    assert after["nodes"] == ["b", "a", "z", "c"]
    assert {n: after["ranks"][n] for n in before} == before


def test_remove_a_dead_node_runs_nothing_on_it_and_shrinks():
    p = plan_scale(["node1", "node2", "node3"], remove=["node2"], dead=["node2"], global_batch_size=32,
                   micro_batch_size=2)
    assert p["refused"] == []
    assert p["nodes"] == ["node1", "node3"] and p["removed"] == ["node2"]
    assert p["world_size"] == 16 and p["universal_checkpoint"] is True
    stop = p["steps"][0]
    assert stop["nodes"] == ["node1", "node3"] and stop["skipped_dead"] == ["node2"]
    assert all("node2" not in json.dumps(s) for s in p["steps"][1:])
    assert steps(p) == ["stop_job", "rank_table", "convert_checkpoint", "start_job"]


def test_a_dead_node_that_is_not_removed_refuses():
    p = plan_scale(["node1", "node2"], add=["node3"], dead=["node2"])
    assert [(x["node"], x["check"]) for x in p["refused"]] == [("node2", "reachable")]
    assert p["steps"] == []


def test_swap_in_a_spare_keeps_the_slot_and_world_size():
    p = plan_scale(["node1", "node2", "node3"], remove=["node2"], dead=["node2"], swap=True,
                   spares=["spare1", "spare2"])
    assert p["refused"] == [] and p["swapped"] == {"node2": "spare1"}
    assert p["nodes"] == ["node1", "spare1", "node3"]
    assert p["ranks"]["node3"] == [16, 23] and p["ranks"]["spare1"] == [8, 15]
    assert p["world_size"] == p["world_size_before"] == 24 and p["universal_checkpoint"] is False
    assert steps(p) == ["stop_job", "prepare", "check_reachability", "check_shared_storage", "rank_table",
                        "start_job"]
    assert p["steps"][-1]["resume"] == "checkpoint"
    assert p["steps"][2] == {"step": "check_reachability", "from": ["spare1"], "to": ["node1", "node3"]}


def test_swap_skips_dead_and_used_spares_and_refuses_when_none_is_left():
    p = plan_scale(["n1", "n2", "n3"], remove=["n1", "n3"], dead=["n1", "s1"], swap=True, spares=["s1", "n2", "s2"])
    assert [(x["node"], x["check"]) for x in p["refused"]] == [("n3", "spare")]
    assert p["swapped"] == {"n1": "s2"} and p["steps"] == []
    assert "spares: s1, n2, s2" in p["refused"][0]["msg"]


@pytest.mark.parametrize("kw, expected", [
    ({"add": ["node1"]}, [("node1", "add")]),
    ({"remove": ["node9"]}, [("node9", "remove")]),
    ({"add": ["node3", "node3"]}, [("node3", "nodes")]),
    ({"add": ["node3"], "dead": ["node3"]}, [("node3", "reachable")]),
    ({"remove": ["node1", "node2"]}, [("job", "world_size")]),
    ({"devices_per_node": 0}, [("job", "devices_per_node")]),
])
def test_refusals_name_node_and_check(kw, expected):
    p = plan_scale(["node1", "node2"], **kw)
    assert [(x["node"], x["check"]) for x in p["refused"]] == expected
    assert p["steps"] == []


def test_a_global_batch_that_no_longer_divides_refuses_with_the_trainers_rule():
    # 48 = 1 x 16 x 3 divides on 2 nodes of 8; on 5 nodes (40 ranks) it does not.
    assert plan_scale(["n1", "n2"], global_batch_size=48, micro_batch_size=1)["refused"] == []
    p = plan_scale(["n1", "n2"], add=["n3", "n4", "n5"], global_batch_size=48, micro_batch_size=1)
    assert [(x["node"], x["check"]) for x in p["refused"]] == [("job", "global_batch_size")]
    msg = p["batch_problem"]
    assert msg == p["refused"][0]["msg"]
    assert "launch_job.global_batch_size (48)" in msg and "= 40" in msg and "40 or 80" in msg
    assert p["steps"] == []


def test_no_batch_check_without_the_job_settings():
    p = plan_scale(["n1", "n2"], add=["n3", "n4", "n5"])
    assert p["batch_problem"] is None and p["refused"] == []


def test_the_plan_is_json():
    p = plan_scale(["n1", "n2"], add=["n3"])
    assert json.loads(json.dumps(p)) == p
