"""Lookup file_sha256 through ansible-playbook (in a subprocess: importing controller plugins into the test
process changes how module warnings are reported for the module tests that run after it): every path's
hash, lists flattened, the cache file honoured, unknown options refused."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
pytestmark = pytest.mark.slow


def play(tmp_path, expr):
    path = tmp_path / "play.yml"
    path.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "lookup", "ansible.builtin.debug": {"msg": "RESULT {{ " + expr + " | to_json }}"}}]}]))
    py = sys.executable
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
               PATH=f"{Path(py).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(Path(py).parent / "ansible-playbook"), str(path), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={py}"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
    lines = [line for line in proc.stdout.splitlines() if "RESULT " in line]
    if proc.returncode != 0 or not lines:
        return proc.returncode, proc.stdout + proc.stderr
    text = lines[0].split("RESULT ", 1)[1].strip().rstrip('"')
    return 0, json.loads(text.encode().decode("unicode_escape"))


def test_lookup_hashes_every_path_and_keeps_them(tmp_path):
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    cache_file = tmp_path / "c" / "sha256.json"
    rc, got = play(tmp_path, f"query('ascendops.cluster.file_sha256', ['{a}', '{b}'], '{tmp_path / 'missing.run'}', "
                             f"cache_file='{cache_file}')")
    assert rc == 0, got
    assert [(g["exists"], g["sha256"]) for g in got] == [
        (True, hashlib.sha256(b"a").hexdigest()), (True, hashlib.sha256(b"b").hexdigest()), (False, None)]
    assert set(json.loads(cache_file.read_text())["files"]) == {str(a), str(b)}
    rc, again = play(tmp_path, f"query('ascendops.cluster.file_sha256', '{a}', cache_file='{cache_file}')")
    assert rc == 0 and again[0]["cached"], again


def test_lookup_refuses_unknown_options(tmp_path):
    rc, out = play(tmp_path, f"query('ascendops.cluster.file_sha256', '{tmp_path}', cache='x')")
    assert rc != 0 and "unknown option cache" in out
