"""The launch role follows the shared_storage role: the same default path (tests/playbooks/test_launch_shared_paths.py
runs the derivation)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def load(role, kind):
    return yaml.safe_load((ROOT / "roles" / role / kind / "main.yml").read_text())


def test_launch_falls_back_to_the_shared_storage_roles_default_path():
    path = load("shared_storage", "defaults")["shared_storage_path"]
    derived = load("launch", "defaults")["launch_shared_storage_path"]
    assert f"shared_storage_path | default('{path}')" in derived
    assert "(shared_storage_type | default('none')) == 'none'" in derived
    assert load("shared_storage", "defaults")["shared_storage_type"] == "none"
