"""scripts/check-ansible-doc.py finds every plugin in the sources and flags each one without a doc."""

import importlib
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_ansible_doc", REPO / "scripts" / "check-ansible-doc.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

FILTERS = '''
def _a(x):
    return x


class FilterModule:
    """Two filters in one file."""

    def filters(self):
        return {"alpha": _a, "beta_gamma": _a}
'''

DOC = "DOCUMENTATION:\n  name: {name}\n  short_description: x\n"


def _tree(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_every_name_a_filter_module_returns_is_found(tmp_path):
    root = _tree(tmp_path, {"plugins/filter/multi.py": FILTERS, "plugins/modules/thing_info.py": "",
                            "plugins/modules/__init__.py": "", "plugins/lookup/look.py": "",
                            "plugins/callback/cb.py": ""})
    found, errors = check.discover(root)
    assert errors == []
    assert sorted(found["filter"]) == ["alpha", "beta_gamma"]
    assert found["filter"]["beta_gamma"].name == "multi.py"
    assert list(found["module"]) == ["thing_info"]
    assert list(found["lookup"]) == ["look"]
    assert list(found["callback"]) == ["cb"]
    assert found["test"] == {}


def test_discovery_matches_what_the_real_filter_modules_return():
    found, errors = check.discover(REPO)
    assert errors == []
    returned = {}
    for path in sorted((REPO / "plugins" / "filter").glob("*.py")):
        mod = importlib.import_module(f"ansible_collections.ascendops.cluster.plugins.filter.{path.stem}")
        for name in mod.FilterModule().filters():
            returned[name] = path.name
    assert {n: p.name for n, p in found["filter"].items()} == returned
    assert "launch_plan" in returned and "setting_names" in returned  # a file's second and later names


def test_a_filter_list_that_is_not_a_literal_is_an_error(tmp_path):
    text = "class FilterModule:\n    def filters(self):\n        return dict(a=len)\n"
    root = _tree(tmp_path, {"plugins/filter/dyn.py": text})
    found, errors = check.discover(root)
    assert found["filter"] == {}
    assert len(errors) == 1 and "dyn.py: FilterModule.filters() does not return one dict literal" in errors[0]


def test_undocumented_filter_is_flagged_and_documented_ones_pass(tmp_path):
    root = _tree(tmp_path, {
        "plugins/filter/multi.py": FILTERS,
        "plugins/filter/alpha.yml": DOC.format(name="alpha"),
    })
    found, _errors = check.discover(root)
    errors = check.doc_file_errors(root, found)
    assert len(errors) == 1
    assert errors[0].startswith("filter beta_gamma (multi.py): undocumented")


def test_documentation_in_a_python_file_of_the_filter_name_counts(tmp_path):
    single = 'DOCUMENTATION = """x"""\n' + FILTERS.replace(', "beta_gamma": _a', "")
    root = _tree(tmp_path, {"plugins/filter/alpha.py": single})
    found, _errors = check.discover(root)
    assert check.doc_file_errors(root, found) == []


def test_doc_file_of_no_filter_is_flagged(tmp_path):
    root = _tree(tmp_path, {
        "plugins/filter/multi.py": FILTERS,
        "plugins/filter/alpha.yml": DOC.format(name="alpha"),
        "plugins/filter/beta_gamma.yml": DOC.format(name="beta_gamma"),
        "plugins/filter/renamed.yml": DOC.format(name="renamed"),
    })
    found, _errors = check.discover(root)
    assert check.doc_file_errors(root, found) == [
        "filter doc plugins/filter/renamed.yml: no FilterModule returns 'renamed'"]


def _result(rc, stdout="", stderr=""):
    return subprocess.CompletedProcess(["ansible-doc"], rc, stdout, stderr)


@pytest.mark.parametrize("result, expected", [
    (_result(1, stderr="[ERROR]: filter ascendops.cluster.a Missing documentation"),
     "filter a: ansible-doc failed (rc 1): [ERROR]: filter ascendops.cluster.a Missing documentation"),
    (_result(0, json.dumps({"ascendops.cluster.a": {"doc": {}}})),
     "filter a: ansible-doc gives no documentation (no short_description)"),
    (_result(0, json.dumps({"ascendops.cluster.a": {"doc": {"short_description": "x",
                                                             "filename": "/elsewhere/a.yml"}}})),
     "filter a: documented by /elsewhere/a.yml, not by this tree"),
])
def test_rendered_errors_name_the_plugin(tmp_path, result, expected):
    assert check.rendered_errors("filter", ["a"], result, tmp_path) == [expected]


def test_rendered_doc_from_this_tree_passes(tmp_path):
    doc = {"short_description": "x", "filename": str(tmp_path / "plugins" / "filter" / "a.yml")}
    assert check.rendered_errors("filter", ["a"], _result(0, json.dumps({"ascendops.cluster.a": {"doc": doc}})),
                                 tmp_path) == []
