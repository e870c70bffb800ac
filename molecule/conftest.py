"""Fixtures for the testinfra verifiers; helpers live in ascend_verify.py beside this file."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture()
def expected_npus():
    """NPUs per simulated node (the molecule base config's npu_driver_expected_npus)."""
    return 2
