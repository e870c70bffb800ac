"""The trainer's rank-table reader and the collection's `rank_table` filter agree on one schema.

Both test suites read the same files, tests/fixtures/rank_table/*.json (cases.json says what each
holds): every valid table parses here with the expected servers, devices and ranks; the invalid ones
the reader is meant to refuse (bad JSON, status, server_count, rank numbering) raise RankTableError.
"""

import json
from pathlib import Path

import pytest

from ascendops_trainer.parallel import LaunchInfo, RankTableError, check_rank_table, parse_rank_table

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "rank_table"
CASES = json.loads((FIXTURES / "cases.json").read_text())


@pytest.mark.parametrize("name", sorted(CASES["valid"]))
def test_reader_accepts_every_valid_fixture(name):
    expected = CASES["valid"][name]
    servers = parse_rank_table((FIXTURES / name).read_text(), source=name)
    assert len(servers) == expected["servers"]
    assert sum(len(s["devices"]) for s in servers) == expected["devices"]
    raw = json.loads((FIXTURES / name).read_text())
    assert [s["server_id"] for s in servers] == [s["server_id"] for s in raw["server_list"]]


@pytest.mark.parametrize("name", sorted(CASES["valid"]))
def test_every_node_of_a_valid_fixture_matches_its_torchrun_launch(name):
    """node_rank = position in the table, nproc = devices per server: what the launch role passes."""
    servers = parse_rank_table((FIXTURES / name).read_text(), source=name)
    nproc = len(servers[0]["devices"])
    world = nproc * len(servers)
    for node_rank, server in enumerate(servers):
        for local in range(nproc):
            launch = LaunchInfo(node_rank * nproc + local, world, local, nproc, node_rank, torchrun=True)
            env = {"HCCL_IF_IP": server["host_ip"]}
            assert check_rank_table(servers, launch, env, source=name)["server_id"] == server["server_id"]


@pytest.mark.parametrize("name", sorted(n for n, c in CASES["invalid"].items() if c["payload_rejects"]))
def test_reader_refuses_the_invalid_fixtures_it_owns(name):
    with pytest.raises(RankTableError):
        parse_rank_table((FIXTURES / name).read_text(), source=name)
