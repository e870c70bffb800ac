"""rank_table: the HCCL rank table from the inventory, the plan and the device addresses read back."""

import json
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.rank_table import (
    FilterModule,
    RankTableError,
    build_rank_table,
    check_rank_table,
    rank_table,
    rank_table_node_rank,
    rank_table_nodes,
    read_rank_table,
    server_sort_key,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "rank_table"
CASES = json.loads((FIXTURES / "cases.json").read_text())


def devices(prefix, n=2, **extra):
    return [dict({"device_id": str(i), "phy_id": str(i), "address": f"{prefix}.{i + 1}", "netmask": "255.255.0.0",
                  "link": "UP", "health": "Success"}, **extra) for i in range(n)]


def hostvars(n_devices=2):
    return {
        "node2": {"ansible_host": "10.0.0.10", "roce_devices": devices("29.1.10", n_devices),
                  "roce_device_addresses": [f"29.1.10.{i + 1}" for i in range(n_devices)]},
        "node1": {"ansible_host": "10.0.0.9", "roce_devices": devices("29.1.9", n_devices),
                  "roce_device_addresses": [f"29.1.9.{i + 1}" for i in range(n_devices)]},
    }


def test_builds_the_documented_1_0_layout_in_numeric_server_order():
    table = rank_table(["node2", "node1"], hostvars(), devices_per_server=2)
    assert table == {
        "version": "1.0", "server_count": "2", "status": "completed",
        "server_list": [
            {"server_id": "10.0.0.9", "host_ip": "10.0.0.9", "device": [
                {"device_id": "0", "device_ip": "29.1.9.1", "rank_id": "0"},
                {"device_id": "1", "device_ip": "29.1.9.2", "rank_id": "1"}]},
            {"server_id": "10.0.0.10", "host_ip": "10.0.0.10", "device": [
                {"device_id": "0", "device_ip": "29.1.10.1", "rank_id": "2"},
                {"device_id": "1", "device_ip": "29.1.10.2", "rank_id": "3"}]}]}


def test_order_is_stable_whatever_the_inventory_or_fact_order():
    hv = hostvars(4)
    hv["node1"]["roce_devices"].reverse()
    assert rank_table(["node1", "node2"], hv) == rank_table(["node2", "node1"], hostvars(4))


def test_server_sort_key_is_numeric_for_addresses_and_puts_names_last():
    ids = ["node-b", "10.0.0.10", "fd00::1", "10.0.0.9", "9.0.0.1", "node-a"]
    assert sorted(ids, key=server_sort_key) == ["9.0.0.1", "10.0.0.9", "10.0.0.10", "fd00::1", "node-a", "node-b"]


def test_plan_and_hardware_must_agree_and_the_message_names_node_and_npu():
    hv = hostvars()
    hv["node2"]["roce_devices"][1]["address"] = "29.1.10.99"
    with pytest.raises(RankTableError, match=r"node2 NPU 1: the plan says 29.1.10.2 but the device reports 29.1.10.99"):
        rank_table(["node1", "node2"], hv)


def test_planned_device_missing_on_the_node_is_named():
    hv = hostvars()
    hv["node1"]["roce_devices"].pop()
    with pytest.raises(RankTableError, match=r"node1 NPU 1: planned address 29.1.9.2 but the node reports no such"):
        rank_table(["node1", "node2"], hv)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("link", "DOWN", "node2 NPU 0: device NIC link is DOWN"),
    ("health", "Fault", "node2 NPU 0: device network health is Fault"),
    ("address", "", "node2 NPU 0: the device NIC has no address"),
    ("address", "not-an-ip", "node2 NPU 0: device address 'not-an-ip' is not an IP address"),
])
def test_bad_device_is_named(field, value, message):
    hv = hostvars()
    hv["node2"]["roce_devices"][0][field] = value
    with pytest.raises(RankTableError, match=message):
        rank_table(["node1", "node2"], hv)


@pytest.mark.parametrize(("netdetect", "refused"), [
    ("", None),  # no net-detect address on the port (flat L2 fabric): Init is its normal state
    (None, None),
    ("29.1.0.1", r"node2 NPU 0: device network health is Init \(address 29.1.10.1, net-detect address 29.1.0.1 "
                 r"has not answered\)"),
    ("absent", r"node2 NPU 0: device network health is Init \(address 29.1.10.1\)"),  # not known: refused
])
def test_net_health_init_passes_only_without_a_netdetect_address(netdetect, refused):
    hv = hostvars()
    dev = hv["node2"]["roce_devices"][0]
    dev["health"] = "Init"
    if netdetect != "absent":
        dev["netdetect"] = netdetect
    if refused:
        with pytest.raises(RankTableError, match=refused):
            rank_table(["node1", "node2"], hv)
    else:
        assert rank_table(["node1", "node2"], hv)
    dev.update(health="Fault", netdetect="")
    with pytest.raises(RankTableError, match="node2 NPU 0: device network health is Fault"):
        rank_table(["node1", "node2"], hv)


def test_device_count_must_match_the_npus_per_node():
    with pytest.raises(RankTableError, match=r"node1: 2 devices .* but 8 expected per server"):
        rank_table(["node1", "node2"], hostvars(), devices_per_server=8)


def test_address_used_on_two_nodes_is_refused():
    hv = hostvars()
    hv["node2"]["roce_devices"][0]["address"] = "29.1.9.1"
    hv["node2"]["roce_device_addresses"][0] = "29.1.9.1"
    with pytest.raises(RankTableError, match=r"node2 NPU 0: device address 29.1.9.1 is also used by node1 NPU 0"):
        rank_table(["node1", "node2"], hv)


def test_missing_fact_names_the_host_and_the_stage():
    hv = hostvars()
    del hv["node2"]["roce_devices"]
    with pytest.raises(RankTableError, match=r"node2: fact roce_devices is missing"):
        rank_table(["node1", "node2"], hv)


def test_plan_source_previews_without_facts():
    hv = hostvars()
    for h in hv.values():
        del h["roce_devices"]
    table = rank_table(["node1", "node2"], hv, source="plan")
    assert [d["device_ip"] for s in table["server_list"] for d in s["device"]] == [
        "29.1.9.1", "29.1.9.2", "29.1.10.1", "29.1.10.2"]


@pytest.mark.parametrize("empty", [None, []])
def test_hardware_alone_is_enough_when_there_is_no_plan(empty):
    hv = hostvars()
    for h in hv.values():
        h["roce_device_addresses"] = empty
    assert check_rank_table(rank_table(["node1", "node2"], hv))["devices"] == 4


def a3_hostvars(n_devices=2):
    """hostvars whose devices carry the super_device_id npu-smi spod-info reported (SDID)."""
    hv = hostvars(n_devices)
    for k, name in enumerate(("node1", "node2")):
        for d in hv[name]["roce_devices"]:
            d["super_device_id"] = str(16777216 + 65536 * k + int(d["device_id"]))
    return hv


def test_version_1_2_has_super_device_ids_and_the_super_pod_list():
    table = rank_table(["node1", "node2"], a3_hostvars(4), version="1.2", super_pod_id="7")
    assert table["super_pod_list"] == [{"super_pod_id": "7",
                                        "server_list": [{"server_id": "10.0.0.9"}, {"server_id": "10.0.0.10"}]}]
    assert set(table["server_list"][0]["device"][0]) == {"device_id", "super_device_id", "device_ip", "rank_id"}


def test_version_1_2_keeps_super_device_ids_read_from_the_hardware():
    table = rank_table(["node1", "node2"], a3_hostvars(), version="1.2")
    assert [d["super_device_id"] for s in table["server_list"] for d in s["device"]] == [
        "16777216", "16777217", "16842752", "16842753"]


def test_version_1_2_without_the_hardware_sdid_is_refused_never_computed():
    with pytest.raises(RankTableError, match="node1 NPU 0: no super_device_id read from the hardware.*spod-info"):
        rank_table(["node1", "node2"], hostvars(), version="1.2")


def test_version_1_2_preview_from_the_plan_marks_the_sdid_unread():
    table = rank_table(["node1", "node2"], hostvars(), version="1.2", source="plan")
    assert table["server_list"][0]["device"][1]["super_device_id"] == "unread:10.0.0.9:1"


def test_unknown_version_is_refused():
    with pytest.raises(RankTableError, match="version '2.0' is not supported"):
        rank_table(["node1"], hostvars(), version="2.0")


def test_every_value_is_a_string():
    def walk(v):
        if isinstance(v, dict):
            return all(walk(x) for x in v.values())
        if isinstance(v, list):
            return all(walk(x) for x in v)
        return isinstance(v, str)
    assert walk(rank_table(["node1", "node2"], a3_hostvars(), version="1.2"))


def test_same_host_address_twice_is_refused():
    with pytest.raises(RankTableError, match="same host address 10.0.0.9"):
        build_rank_table([{"name": "a", "host_ip": "10.0.0.9", "devices": devices("29.1.1")},
                          {"name": "b", "host_ip": "10.0.0.9", "devices": devices("29.1.2")}])


def test_node_rank_follows_the_table_order():
    table = rank_table(["node2", "node1"], hostvars())
    assert rank_table_node_rank(table, "10.0.0.9") == 0
    assert rank_table_node_rank(json.dumps(table), "10.0.0.10") == 1
    with pytest.raises(RankTableError, match="10.0.0.1 is not a server"):
        rank_table_node_rank(table, "10.0.0.1")


def test_nodes_by_host_are_what_each_node_found_on_its_own():
    # four hosts, inventory order not address order: each node's part by key is what the per-node search
    # (rank_table_node_rank, then that server's devices) gave every node before
    hv = {f"node{i}": {"ansible_host": f"10.0.0.{ip}", "roce_devices": devices(f"29.1.{ip}", 8)}
          for i, ip in ((1, 12), (2, 9), (3, 10), (4, 100))}
    names = list(hv)
    table = rank_table(names, hv, devices_per_server=8)
    nodes = rank_table_nodes(table, {name: hv[name]["ansible_host"] for name in names})
    assert list(nodes) == names
    for name in names:
        rank = rank_table_node_rank(table, hv[name]["ansible_host"])
        assert nodes[name] == {"node_rank": rank, "devices": table["server_list"][rank]["device"]}
    assert [nodes[name]["node_rank"] for name in names] == [2, 0, 1, 3]
    assert nodes["node4"]["devices"][0]["rank_id"] == "24"
    assert rank_table_nodes(json.dumps(table), {"node2": "10.0.0.9"}) == {"node2": nodes["node2"]}
    with pytest.raises(RankTableError, match="node9: host 10.0.0.1 is not a server"):
        rank_table_nodes(table, {"node1": "10.0.0.12", "node9": "10.0.0.1"})


def test_plans_by_host_give_the_same_preview_as_each_hosts_plan_var():
    hv = hostvars(2)
    by_var = rank_table(["node1", "node2"], hv, source="plan")
    plans = {name: [{"device_id": str(i), "address": a} for i, a in enumerate(hv[name]["roce_device_addresses"])]
             for name in hv}
    for name in hv:
        hv[name]["roce_device_addresses"] = ["192.0.2.1", "192.0.2.2"]  # not read when plans are given
    assert rank_table(["node1", "node2"], hv, source="plan", plans=plans) == by_var
    with pytest.raises(RankTableError, match="node2: no planned device addresses in the plans given"):
        rank_table(["node1", "node2"], hv, source="plan", plans={"node1": plans["node1"]})


def test_nodes_by_container_ip_in_a_foreign_table():
    text = (FIXTURES / "foreign_1.0_mindie.json").read_text()
    nodes = rank_table_nodes(text, {"a": "172.17.0.11", "b": "10.0.0.12"})
    assert (nodes["a"]["node_rank"], nodes["b"]["node_rank"]) == (rank_table_node_rank(text, "172.17.0.11"),
                                                                  rank_table_node_rank(text, "10.0.0.12"))


@pytest.mark.parametrize("name", sorted(CASES["valid"]))
def test_valid_fixtures_pass_the_check(name):
    expected = CASES["valid"][name]
    summary = check_rank_table((FIXTURES / name).read_text())
    assert (summary["version"], summary["servers"], summary["devices"]) == (
        expected["version"], expected["servers"], expected["devices"])


@pytest.mark.parametrize("name", sorted(CASES["invalid"]))
def test_invalid_fixtures_fail_the_check(name):
    with pytest.raises(RankTableError, match=CASES["invalid"][name]["error"]):
        check_rank_table((FIXTURES / name).read_text())


def test_generated_table_round_trips_through_json():
    table = rank_table(["node1", "node2"], hostvars(8), devices_per_server=8)
    assert check_rank_table(json.dumps(table, indent=2), servers=2, devices_per_server=8)["ranks"] == 16
    with pytest.raises(RankTableError, match="expected 3"):
        check_rank_table(table, servers=3)


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {"rank_table", "rank_table_check", "rank_table_read",
                                             "rank_table_node_rank", "rank_table_nodes",
                                             "rank_table_super_device_ids", "rank_table_super_pod_id"}


@pytest.mark.parametrize("name", sorted(CASES["foreign"]))
def test_reader_accepts_tables_other_tools_write(name):
    expected = CASES["foreign"][name]
    summary = read_rank_table((FIXTURES / name).read_text())
    assert (summary["version"], summary["servers"], summary["devices"]) == (
        expected["version"], expected["servers"], expected["devices"])
    # our own check keeps our order
    with pytest.raises(RankTableError, match="ascending server_id"):
        check_rank_table((FIXTURES / name).read_text())


def test_node_rank_by_container_ip_in_a_foreign_table():
    text = (FIXTURES / "foreign_1.0_mindie.json").read_text()
    assert rank_table_node_rank(text, "172.17.0.11") == 1
    assert rank_table_node_rank(text, "10.0.0.12") == 0


def test_reader_still_refuses_broken_tables():
    table = json.loads((FIXTURES / "foreign_1.0_mindie.json").read_text())
    table["server_list"][0]["container_ip"] = "not-an-ip"
    with pytest.raises(RankTableError, match="container_ip 'not-an-ip'"):
        read_rank_table(table)
    table = json.loads((FIXTURES / "foreign_1.0_mindie.json").read_text())
    table["server_list"][0]["device"][0]["rank_id"] = "1"
    with pytest.raises(RankTableError, match="rank_id must run 0..3 once each; got"):
        read_rank_table(table)


def test_super_device_ids_from_npu_info_chips_by_position():
    from ansible_collections.ascendops.cluster.plugins.filter.rank_table import rank_table_super_device_ids
    chips = [{"npu_id": n, "chip_id": c, "super_device_id": str(100 + 2 * n + c)} for n in range(2) for c in range(2)]
    devs = [{"device_id": str(i), "address": f"29.1.1.{i + 1}"} for i in range(4)]
    out = rank_table_super_device_ids(devs, chips)
    assert [d["super_device_id"] for d in out] == ["100", "101", "102", "103"]
    assert out[0]["address"] == "29.1.1.1"
    with pytest.raises(RankTableError, match="NPU 3 .npu 1 chip 1.: no SDID read"):
        rank_table_super_device_ids(devs, chips[:3] + [{"npu_id": 1, "chip_id": 1}])
    with pytest.raises(RankTableError, match="NPU 3: npu-smi lists 3 chips"):
        rank_table_super_device_ids(devs, chips[:3])


# ---- the SuperPoD of each server (issue 43 item 6): from the hardware, the setting wins

def test_servers_of_different_super_pods_get_their_own_entries():
    from ansible_collections.ascendops.cluster.plugins.filter.rank_table import rank_table as build

    hv = a3_hostvars(2)
    hv["node1"]["__launch_super_pod_id"] = "3"
    hv["node2"]["__launch_super_pod_id"] = "1"
    table = build(["node1", "node2"], hv, version="1.2", super_pod_id_var="__launch_super_pod_id")
    assert table["super_pod_list"] == [{"super_pod_id": "1", "server_list": [{"server_id": "10.0.0.10"}]},
                                       {"super_pod_id": "3", "server_list": [{"server_id": "10.0.0.9"}]}]
    assert check_rank_table(table)["servers"] == 2
    hv["node2"]["__launch_super_pod_id"] = "3"
    table = build(["node1", "node2"], hv, version="1.2", super_pod_id_var="__launch_super_pod_id")
    assert table["super_pod_list"] == [{"super_pod_id": "3",
                                        "server_list": [{"server_id": "10.0.0.9"}, {"server_id": "10.0.0.10"}]}]


def test_super_pod_id_from_every_chip_the_setting_wins():
    from ansible_collections.ascendops.cluster.plugins.filter.rank_table import rank_table_super_pod_id

    chips = [{"npu_id": n, "chip_id": c, "super_pod_id": "2"} for n in range(2) for c in range(2)]
    assert rank_table_super_pod_id(chips, "", "node1") == "2"
    assert rank_table_super_pod_id(chips, None, "node1") == "2"
    assert rank_table_super_pod_id(chips, "5", "node1") == "5"
    assert rank_table_super_pod_id([], 0, "node1") == "0"  # 0 is a super pod id, not "unset"
    with pytest.raises(RankTableError, match=r"node1: npu-smi info -t spod-info printed no Super Pod ID for "
                                             r"NPU 1 chip 0; set launch_super_pod_id"):
        rank_table_super_pod_id(chips[:2] + [{"npu_id": 1, "chip_id": 0}], "", "node1")
    with pytest.raises(RankTableError, match=r"node1: the chips report different Super Pod IDs \(NPU 0 chip 0: 2, "
                                             r"NPU 0 chip 1: 2, NPU 1 chip 0: 4\)"):
        rank_table_super_pod_id(chips[:2] + [{"npu_id": 1, "chip_id": 0, "super_pod_id": "4"}], "", "node1")
    with pytest.raises(RankTableError, match="no chips listed"):
        rank_table_super_pod_id([], "", "node1")
