"""Fixtures for the module tests; the code lives in ascend_module_harness.py."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.tests.unit.plugins.modules.ascend_module_harness import (
    module_runner,
    package_maker,
)


@pytest.fixture
def run_module(monkeypatch):
    """run_module(main, args, check_mode=False, diff=False) -> result dict ("failed" set on failure)."""
    return module_runner(monkeypatch)


@pytest.fixture
def make_package(tmp_path):
    """make_package(file_name, kind, version, arch="aarch64", mode="ok", check_rc=0, executable=True)."""
    return package_maker(tmp_path)
