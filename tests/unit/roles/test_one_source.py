"""Values with one source in the collection: devices per node (NPUs, or chips on A3) are derived once,
in the ascend role (ascend_devices_per_node); the roles default to that setting."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
FORMULA = "== 'a3' else 1"


def test_the_devices_per_node_formula_is_written_once():
    places = sorted(str(p.relative_to(ROOT)) for d in ("roles", "playbooks", "plugins", "inventories")
                    for p in (ROOT / d).rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml", ".j2", ".py")
                    and FORMULA in p.read_text())
    # the default and its mirror in the argument spec (scripts/check-argument-specs.py keeps them equal)
    assert places == ["roles/ascend/defaults/main.yml", "roles/ascend/meta/argument_specs.yml"]


def test_the_roles_default_to_the_collection_wide_setting():
    def defaults(role):
        return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())

    assert defaults("roce")["roce_devices_per_node"] == "{{ ascend_devices_per_node }}"
    assert defaults("launch")["launch_devices_per_server"] == "{{ ascend_devices_per_node }}"
    launch_vars = yaml.safe_load((ROOT / "roles/launch/vars/main.yml").read_text())
    assert launch_vars["__launch_node_devices"] == "{{ ascend_devices_per_node }}"
    # launch reads ascend_devices_per_node from the ascend role's defaults: its dependency.
    meta = yaml.safe_load((ROOT / "roles/launch/meta/main.yml").read_text())
    assert "ascendops.cluster.ascend" in [d["role"] for d in meta["dependencies"]]
