"""roce_plan's per-host split and fingerprint, and roce_ping_plan's peer choice (full, ring, sample)."""

import itertools

import jinja2
import pytest
from ansible.plugins.filter.core import FilterModule as CoreFilters
from ansible.plugins.filter.mathstuff import FilterModule as MathFilters
from ansible_collections.ascendops.cluster.plugins.filter.roce_plan import FilterModule, roce_ping_plan, roce_plan


def cluster(hosts, devices=8):
    return [{"host": f"node{i + 1}", "devices": devices, "model": "910b", "address_base": "10.20.0.0",
             "address_offset": 10 + devices * i, "netmask": "255.255.0.0", "gateway": "10.20.0.1", "tls": False}
            for i in range(hosts)]


def jinja(expression, **variables):
    """An expression evaluated as the roles evaluated it before the plan was split by host (Jinja with
    ansible-core's own filters)."""
    env = jinja2.Environment()
    env.filters.update({"hash": CoreFilters().filters()["hash"], "zip": MathFilters().filters()["zip"]})
    return env.compile_expression(expression)(**variables)


# The expressions of roles/roce (tasks/plan.yml, vars/main.yml) before the split, kept here as the reference.
OLD_MY_PLAN = "plan.devices | selectattr('host', 'equalto', inventory_hostname) | list"
OLD_PEERS = ("plan.devices | rejectattr('host', 'equalto', inventory_hostname)"
             " | selectattr('device_id', 'in', my_plan | map(attribute='device_id') | list) | list")
OLD_FINGERPRINT = ("plan.devices | map(attribute='host') | zip(plan.devices | map(attribute='device_id'),"
                   " plan.devices | map(attribute='address'), plan.devices | map(attribute='netmask'))"
                   " | map('join', ' ') | sort | join(',') | hash('sha1')")


def test_by_host_is_the_old_per_host_selection_for_four_hosts():
    plan = roce_plan(cluster(4))
    assert plan["errors"] == []
    assert list(plan["by_host"]) == ["node1", "node2", "node3", "node4"]
    for host in plan["by_host"]:
        old = jinja(OLD_MY_PLAN, plan=plan, inventory_hostname=host)
        assert len(old) == 8
        assert plan["by_host"][host] == old


def test_fingerprint_is_the_old_one_so_the_node_records_stay_valid():
    nodes = cluster(4)
    nodes[2]["host"] = "Node3"  # Jinja's sort ignores case
    nodes[3]["netmask"] = ""  # the old expression joined the None of a missing netmask
    plan = roce_plan(nodes)
    assert plan["fingerprint"] == jinja(OLD_FINGERPRINT, plan=plan)
    assert plan["fingerprint"] != roce_plan(cluster(4))["fingerprint"]


def test_node_without_devices_has_an_empty_part():
    nodes = cluster(2)
    nodes[1]["devices"] = 0
    plan = roce_plan(nodes)
    assert plan["by_host"]["node2"] == []
    assert len(plan["by_host"]["node1"]) == 8


def test_host_networks_found_by_address_in_node_order():
    nodes = cluster(3, devices=2)
    nodes[2]["host_networks"] = ["eth1 10.20.0.0/255.255.255.248", "eth0 198.18.0.3/255.255.0.0"]
    nodes[0]["host_networks"] = ["ib0 10.0.0.0/255.0.0.0"]
    errors = roce_plan(nodes)["errors"]
    assert errors == [
        "node1 NPU 0: address 10.20.0.10 is inside host NIC ib0 subnet 10.0.0.0/8 of node1",
        "node1 NPU 1: address 10.20.0.11 is inside host NIC ib0 subnet 10.0.0.0/8 of node1",
        "node2 NPU 0: address 10.20.0.12 is inside host NIC ib0 subnet 10.0.0.0/8 of node1",
        "node2 NPU 1: address 10.20.0.13 is inside host NIC ib0 subnet 10.0.0.0/8 of node1",
        "node3 NPU 0: address 10.20.0.14 is inside host NIC ib0 subnet 10.0.0.0/8 of node1",
        "node3 NPU 1: address 10.20.0.15 is inside host NIC ib0 subnet 10.0.0.0/8 of node1",
    ]
    nodes[0]["host_networks"] = []
    nodes[2]["host_networks"] = ["eth1 10.20.0.8/255.255.255.248"]
    assert roce_plan(nodes)["errors"] == [
        f"{host} NPU {i}: address 10.20.0.{10 + 2 * n + i} is inside host NIC eth1 subnet 10.20.0.8/29 of node3"
        for n, host in enumerate(("node1", "node2", "node3")) for i in (0, 1) if 10 + 2 * n + i <= 15]


def pairs(ping_plan):
    """{(source host, target host, device_id)} of every ping."""
    return {(host, peer["host"], peer["device_id"]) for host, peers in ping_plan["by_host"].items() for peer in peers}


def test_full_is_the_old_matrix():
    plan = roce_plan(cluster(4))
    ping = roce_ping_plan(plan, "full")
    assert ping["strategy"] == "full"
    for host in plan["by_host"]:
        old = jinja(OLD_PEERS, plan=plan, inventory_hostname=host, my_plan=plan["by_host"][host])
        assert ping["by_host"][host] == old
        assert len(old) == 3 * 8
    assert ping["fingerprint"] == plan["fingerprint"]
    assert ping["pings"] == 4 * 3 * 8 and ping["nodes"] == 4 and ping["max_per_node"] == 24


def test_ring_pings_the_previous_and_next_node_on_the_same_rail():
    plan = roce_plan(cluster(5, devices=2))
    ping = roce_ping_plan(plan, "ring")
    assert [(p["host"], p["device_id"]) for p in ping["by_host"]["node1"]] == [
        ("node5", "0"), ("node2", "0"), ("node5", "1"), ("node2", "1")]
    assert [(p["host"], p["device_id"]) for p in ping["by_host"]["node3"]] == [
        ("node2", "0"), ("node4", "0"), ("node2", "1"), ("node4", "1")]
    assert ping["pings"] == 5 * 2 * 2
    assert ping["fingerprint"] != plan["fingerprint"]


@pytest.mark.parametrize("hosts,expected", [(1, 0), (2, 1), (3, 2)])
def test_ring_of_small_clusters_has_no_self_pair_and_no_repeat(hosts, expected):
    ping = roce_ping_plan(roce_plan(cluster(hosts, devices=2)), "ring")
    for host, peers in ping["by_host"].items():
        assert len(peers) == 2 * expected
        assert all(p["host"] != host for p in peers)


def test_sample_is_ring_plus_k_distinct_peers_of_the_rail():
    plan = roce_plan(cluster(20))
    ring = roce_ping_plan(plan, "ring")
    ping = roce_ping_plan(plan, "sample", sample_peers=3, seed="run-1")
    assert ping["strategy"] == "sample"
    assert pairs(ring) <= pairs(ping)
    for host, peers in ping["by_host"].items():
        assert len(peers) == 8 * (2 + 3)
        for device_id in map(str, range(8)):
            targets = [p["host"] for p in peers if p["device_id"] == device_id]
            assert len(targets) == len(set(targets)) == 5
            assert host not in targets
    assert ping["max_per_node"] == 40 and ping["pings"] == 20 * 40


def test_sample_is_deterministic_for_a_seed_and_differs_between_seeds():
    plan = roce_plan(cluster(20))
    assert pairs(roce_ping_plan(plan, "sample", seed="2026-12-06")) == pairs(
        roce_ping_plan(plan, "sample", seed="2026-12-06"))
    assert pairs(roce_ping_plan(plan, "sample", seed="2026-12-06")) != pairs(
        roce_ping_plan(plan, "sample", seed="2026-12-07"))


def test_sample_covers_every_pair_of_each_rail_over_runs():
    plan = roce_plan(cluster(12, devices=2))
    covered = set()
    runs = 0
    hosts = list(plan["by_host"])
    every = {(a, b, d) for a, b in itertools.permutations(hosts, 2) for d in ("0", "1")}
    while covered != every and runs < 100:
        covered |= pairs(roce_ping_plan(plan, "sample", sample_peers=2, seed=f"run-{runs}"))
        runs += 1
    assert covered == every
    assert runs > 1  # one run does not ping every pair: the sample is smaller than the matrix


def test_sample_with_more_peers_than_the_rail_holds_is_full():
    plan = roce_plan(cluster(4))
    assert pairs(roce_ping_plan(plan, "sample", sample_peers=10, seed="x")) == pairs(roce_ping_plan(plan, "full"))


def test_auto_is_full_up_to_the_size_setting_then_sample():
    plan = roce_plan(cluster(4))
    assert roce_ping_plan(plan, "auto", full_max_hosts=4)["strategy"] == "full"
    assert roce_ping_plan(plan, "auto", full_max_hosts=3)["strategy"] == "sample"


def test_duration_estimate():
    plan = roce_plan(cluster(40))
    ping = roce_ping_plan(plan, "sample", sample_peers=4, count=3, forks=16)
    # 40 nodes, 16 at a time: 3 waves of 8 devices x 6 peers x 3 packets of a second
    assert ping["duration_s"] == 3 * 8 * 6 * 3
    assert roce_ping_plan(roce_plan(cluster(1)), "full")["duration_s"] == 0


@pytest.mark.parametrize("kwargs", [{"strategy": "mesh"}, {"sample_peers": -1}, {"count": 0}, {"forks": "x"}])
def test_bad_arguments_are_refused(kwargs):
    with pytest.raises(ValueError, match="roce_ping_plan"):
        roce_ping_plan(roce_plan(cluster(2)), **kwargs)


def test_filter_is_registered():
    assert FilterModule().filters()["roce_ping_plan"] is roce_ping_plan
