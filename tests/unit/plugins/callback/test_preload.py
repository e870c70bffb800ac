"""The preload callback (plugins/callback/preload.py): filter and test plugins imported in the main
process, so the process forked for each task does not import them again."""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[4]

# A fresh interpreter: the collection loader set up as ansible-playbook sets it up, the callback
# loaded by its name, then the modules the playbook's start left imported.
SCRIPT = r"""
import json, sys
from ansible.plugins.loader import callback_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
prefix = "ansible_collections.ascendops.cluster.plugins.filter."
before = sorted(m for m in sys.modules if m.startswith(prefix))
callback = callback_loader.get("ascendops.cluster.preload")
callback.v2_playbook_on_start(None)
after = sorted(m for m in sys.modules if m.startswith(prefix))
builtin = ("ansible.plugins.filter.core_", "ansible.plugins.test.core_")
core = [m.rsplit("_", 1)[0] for m in sys.modules if m.startswith(builtin)]
print(json.dumps({"before": before, "after": after, "core": core, "type": callback.CALLBACK_TYPE}))
"""


def test_playbook_start_imports_every_filter_file_of_the_collection_and_the_builtin_ones():
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO / ".collections")],
                         capture_output=True, text=True, check=True, cwd=REPO)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    files = sorted(p.stem for p in (REPO / "plugins" / "filter").glob("*.py") if p.stem != "__init__")
    assert seen["before"] == []
    assert [m.rsplit(".", 1)[1] for m in seen["after"]] == files
    assert sorted(seen["core"]) == ["ansible.plugins.filter.core", "ansible.plugins.test.core"]
    assert seen["type"] == "aggregate"  # it prints nothing: the stdout callback stays the user's


def test_the_repository_and_molecule_enable_it():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "ansible.cfg")
    assert "ascendops.cluster.preload" in cfg["defaults"]["callbacks_enabled"].split(",")
    molecule = yaml.safe_load((REPO / ".config" / "molecule" / "config.yml").read_text())
    # (beside Ansible's junit callback, whose files scripts/failure-digest.py reads)
    assert molecule["provisioner"]["env"]["ANSIBLE_CALLBACKS_ENABLED"].split(",") == [
        "ascendops.cluster.preload", "ansible.builtin.junit"]


PLAYBOOK = r"""
- hosts: localhost
  gather_facts: false
  vars:
    items: [b, a, c]
    derived: "{{ items | sort | join('-') }}"
    backslash: "{{ 'a_b' | regex_replace('^(.*)_(.*)$', '\\2\\1') }}"
  tasks:
    - name: Templates, filters, tests, loops and lookups
      ansible.builtin.debug:
        msg: >-
          {% for x in items | sort %}{{ x | upper }}{% if not loop.last %},{% endif %}{% endfor %}
          {{ derived }} {{ backslash }} {{ 3 is number }} {{ lookup('ansible.builtin.env', 'HOME') | length > 0 }}
          {{ 'x' if items | ascendops.cluster.setting_name({}) == 'c' else 'y' }} {{ undefined_var | default('dflt') }}
    - name: Conditionals
      ansible.builtin.debug:
        msg: "{{ item }}"
      loop: [1, 2, 3]
      when: item is odd and derived == 'a-b-c'
    - name: A runtime error is reported as without the cache
      ansible.builtin.debug:
        msg: "{{ items | nosuchfilter }}"
      ignore_errors: true
"""


def _run_playbook(tmp_path, cache):
    book = tmp_path / "book.yml"
    book.write_text(PLAYBOOK)
    env = {**__import__("os").environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ASCENDOPS_JINJA_CACHE": cache,
           "ANSIBLE_CALLBACKS_ENABLED": "ascendops.cluster.preload", "ANSIBLE_NOCOLOR": "1"}
    out = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(book)],
                         capture_output=True, text=True, cwd=REPO, env=env, check=False)
    return out.returncode, out.stdout, out.stderr


def test_the_jinja_code_cache_changes_no_result_and_is_used(tmp_path):
    cache = tmp_path / "jinja"
    off = _run_playbook(tmp_path, "0")
    cold = _run_playbook(tmp_path, str(cache))
    kept = sorted(p.name for p in cache.rglob("*") if p.is_file())
    warm = _run_playbook(tmp_path, str(cache))
    assert off[0] == 0 and "A,B,C a-b-c ba True True y dflt" in off[1]
    assert "No filter named 'nosuchfilter'" in off[1] + off[2]
    assert off == cold == warm
    assert len(kept) >= 5  # the templates and conditionals of the play
    assert sorted(p.name for p in cache.rglob("*") if p.is_file()) == kept  # the warm run compiled nothing new


FREEZE_SCRIPT = r"""
import gc, json, sys
from ansible.plugins.loader import callback_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
callback = callback_loader.get("ascendops.cluster.preload")
before = gc.get_freeze_count()
callback.v2_playbook_on_play_start(None)
print(json.dumps({"before": before, "after": gc.get_freeze_count()}))
"""


def test_each_play_start_freezes_the_objects_the_forked_task_processes_inherit(monkeypatch):
    # gc.freeze: a forked process's garbage collector no longer walks (and writes to) what the main
    # process held when the play started; ASCENDOPS_GC_FREEZE=0 leaves the collector alone.
    counts = {}
    for setting in ("", "0"):
        monkeypatch.setenv("ASCENDOPS_GC_FREEZE", setting)
        out = subprocess.run([sys.executable, "-c", FREEZE_SCRIPT, str(REPO / ".collections")],
                             capture_output=True, text=True, check=True, cwd=REPO)
        counts[setting] = json.loads(out.stdout.strip().splitlines()[-1])
    assert counts[""]["before"] == 0 and counts[""]["after"] > 1000
    assert counts["0"]["after"] == 0
