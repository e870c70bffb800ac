"""scripts/check-argument-specs.py finds every way a role's spec and defaults drift apart."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_argument_specs", REPO / "scripts" / "check-argument-specs.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


def _role(tmp_path, defaults: str, spec: str | None, name: str = "r") -> Path:
    role = tmp_path / name
    (role / "defaults").mkdir(parents=True)
    (role / "defaults" / "main.yml").write_text(defaults)
    if spec is not None:
        (role / "meta").mkdir()
        (role / "meta" / "argument_specs.yml").write_text(spec)
    return role


SPEC = """
argument_specs:
  main:
    options:
      r_count: {type: int, default: 8}
      r_name: {type: str, default: "x"}
"""


def test_matching_role_passes(tmp_path):
    assert check.check_role(_role(tmp_path, "r_count: 8\nr_name: x\n", SPEC)) == []


def test_missing_and_extra_names_are_reported(tmp_path):
    errors = check.check_role(_role(tmp_path, "r_count: 8\nr_other: 1\n", SPEC))
    assert "r: r_other is in defaults/main.yml but not in meta/argument_specs.yml" in errors
    assert "r: r_name is in meta/argument_specs.yml but not in defaults/main.yml" in errors


def test_different_default_and_wrong_type_are_reported(tmp_path):
    errors = check.check_role(_role(tmp_path, "r_count: '8'\nr_name: y\n", SPEC))
    assert any("r_name: default 'x'" in e and "'y' in defaults" in e for e in errors)
    assert any("r_count: type int but defaults/main.yml holds str" in e for e in errors)


def test_role_without_spec_fails_unless_internal(tmp_path):
    assert check.check_role(_role(tmp_path, "a: 1\n", None, name="public"))
    assert check.check_role(_role(tmp_path, "a: 1\n", None, name="_common")) == []


def test_the_repository_roles_match():
    assert check.main([str(REPO / "roles")]) == 0


def test_templated_default_is_not_type_checked(tmp_path):
    """A default that is a template (a collection-wide setting) has no type until rendered."""
    role = tmp_path / "r"
    (role / "defaults").mkdir(parents=True)
    (role / "meta").mkdir()
    (role / "defaults" / "main.yml").write_text('r_n: "{{ ascend_npus_per_node }}"\n')
    (role / "meta" / "argument_specs.yml").write_text(
        'argument_specs:\n  main:\n    options:\n      r_n:\n'
        '        type: int\n        default: "{{ ascend_npus_per_node }}"\n')
    assert check.check_role(role) == []
