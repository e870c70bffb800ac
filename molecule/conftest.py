"""Fixtures for the testinfra verifiers; helpers live in ascend_verify.py beside this file."""

import os
import sys

import pytest
import testinfra
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _instances():
    """Names of the scenario's instances, from the inventory molecule wrote for it."""
    inventory = os.environ.get("MOLECULE_INVENTORY_FILE", "")
    if not os.path.isfile(inventory):
        raise pytest.UsageError("the verifiers run under molecule: MOLECULE_INVENTORY_FILE is not set")
    with open(inventory, encoding="utf-8") as f:
        names = sorted((yaml.safe_load(f).get("all") or {}).get("hosts") or {})
    if not names:
        raise pytest.UsageError(f"no instances in {inventory}")
    return names


def pytest_generate_tests(metafunc):
    # Instances are podman containers: testinfra's podman backend runs each check with one
    # `podman exec` instead of an ansible ad-hoc call (about ten times faster).
    if "node" in metafunc.fixturenames:
        metafunc.parametrize("node", _instances(), scope="module")


@pytest.fixture(scope="module")
def host(node):
    return testinfra.get_host(f"podman://{node}")


@pytest.fixture()
def expected_npus():
    """NPUs per simulated node (the molecule base config's npu_driver_expected_npus)."""
    return 2
