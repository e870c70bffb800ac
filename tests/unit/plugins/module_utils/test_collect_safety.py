"""The support bundle reaches only what it means to (module_utils/ascend_collect.py): a private directory, no
symbolic link followed, files 0600 from creation, secrets redacted by key, by shape and by value (issue 41)."""

from __future__ import annotations

import json
import os
import stat

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_collect import (
    REDACTED,
    CollectError,
    Collector,
    bundle_members,
    private_directory,
    read_member,
    redact,
)

# A corpus of secrets as they appear in the files and command outputs a bundle holds: each (text, secret).
CORPUS = [
    ("HF_TOKEN=hf_abcdefgh", "hf_abcdefgh"),
    ("DB_PASS: hunter22", None),  # not a secret key name: only redact_values catches it (below)
    ("WANDB_API_KEY=0123456789abcdef", "0123456789abcdef"),
    ("docker login --username bot --password s3cr3t-pw registry.example", "s3cr3t-pw"),
    ("docker login -u bot -p s3cr3t-pw2 registry.example", "s3cr3t-pw2"),
    ("ascendops --token=tok-98765 status", "tok-98765"),
    ('{"auths": {"registry.example": {"auth": "Ym90OnMzY3IzdA=="}}}', "Ym90OnMzY3IzdA=="),
    ('{"auths": {"r": {"identitytoken": "idt-12345"}}}', "idt-12345"),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y'", "eyJhbGciOiJIUzI1NiJ9.x.y"),
    ("token refresh: bearer abcdefghijklmnop", "abcdefghijklmnop"),
    ("mirror https://bot:pw-in-url@mirror.example/ascend", "pw-in-url"),
    ("aws_access_key_id = AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI/K7MDENG"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXk"),
]


@pytest.mark.parametrize("text,secret", [c for c in CORPUS if c[1]])
def test_redaction_by_key_and_shape(text, secret):
    out = redact(text)
    assert secret not in out and REDACTED in out, out


def test_redaction_by_value_reaches_what_no_key_names():
    text = "DB_PASS: hunter22\nstep 7 connected with hunter22 to db\nOMP_NUM_THREADS=1\n"
    assert "hunter22" in redact(text)  # no key names it a secret
    # "1", "INFO" and "120000" are not redacted by value: every such word of the logs would go
    out = redact(text + "HCCL_EXEC_TIMEOUT=120000 level INFO\n", ["hunter22", "1", "INFO", "120000"])
    assert "hunter22" not in out and out.count(REDACTED) == 2 and "OMP_NUM_THREADS=1" in out
    assert "HCCL_EXEC_TIMEOUT=120000 level INFO" in out


def test_what_is_no_secret_stays():
    text = "step 7/100 | loss 2.1 | tokens/s 1234\n-pfc -g\nnet health status: Success\nps -p 123\n"
    assert redact(text) == text


def _params(tmp_path, **extra):
    return dict({"npu_smi": "/bin/true", "hccn_tool": "/bin/true", "service": "ascendops-train",
                 "install_path": str(tmp_path), "journal_lines": 10, "triage_lines": 10, "files": [],
                 "log_dirs": [], "status_file": None, "extra_commands": {}, "max_file_bytes": 4096,
                 "max_total_bytes": 10 ** 6, "msnpureport_timeout_s": 5}, **extra)


def _run(argv, cwd=None):
    return 0, "ok DB_PASS: hunter22\n", ""


def test_links_planted_in_the_job_directories_are_not_followed(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    job = tmp_path / "job"
    job.mkdir()
    (job / "ascendops.env").write_text("MASTER_ADDR=10.0.0.1\n")
    (job / "rank_table.json").symlink_to(secret)  # the container can write here
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "host-0.log").write_text("[ERROR] x\n")
    (logs / "link.log").symlink_to(secret)
    (tmp_path / "userlog").symlink_to(tmp_path / "elsewhere")  # a user's log directory pointing elsewhere
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "id_rsa").write_text("not for the bundle\n")
    status = tmp_path / "status.json"
    status.symlink_to(secret)
    params = _params(tmp_path, files=[str(job / "*")], log_dirs=[str(logs), str(tmp_path / "userlog")],
                     status_file=str(status))
    bundle = tmp_path / "out" / "b.tar.gz"
    result = Collector(_run, params, []).collect(str(bundle))
    names = bundle_members(str(bundle))
    assert any(n.endswith("job/ascendops.env") for n in names) and any(n.endswith("host-0.log") for n in names)
    assert not any(n.endswith(("rank_table.json", "link.log", "id_rsa")) for n in names)
    index = json.loads(read_member(str(bundle), "index.json"))
    left = {os.path.basename(e["path"]): e["why"] for e in index["left_out"]}
    assert left["rank_table.json"] == left["link.log"] == left["userlog"] == "a symbolic link (not followed)"
    assert result["triage"]["status"] == ""  # the status file was a link: not read


def test_the_bundle_and_its_directory_are_private_from_creation(tmp_path):
    bundle = tmp_path / "out" / "b.tar.gz"
    Collector(_run, _params(tmp_path, redact_values=["hunter22"]), []).collect(str(bundle))
    assert stat.S_IMODE(os.stat(bundle.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(bundle).st_mode) == 0o600
    assert not (tmp_path / "out" / "b.tar.gz.tmp").exists()
    assert "hunter22" not in read_member(str(bundle), "npu_smi_info.txt")
    # an existing directory of this user, too open: made private
    os.chmod(bundle.parent, 0o755)
    Collector(_run, _params(tmp_path), []).collect(str(bundle))
    assert stat.S_IMODE(os.stat(bundle.parent).st_mode) == 0o700


def test_a_bundle_directory_that_is_a_link_is_refused_and_nothing_is_written_through_it(tmp_path):
    target = tmp_path / "etc"
    target.mkdir()
    (tmp_path / "out").symlink_to(target)
    with pytest.raises(CollectError, match=r"out is a symbolic link: the bundle is not written through it"):
        Collector(_run, _params(tmp_path), []).collect(str(tmp_path / "out" / "b.tar.gz"))
    assert list(target.iterdir()) == []


def test_a_bundle_directory_of_another_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the directory to another user")
    other = tmp_path / "other"
    other.mkdir()
    os.chown(other, 65534, 65534)
    with pytest.raises(CollectError, match=r"belongs to uid 65534, not to this run's user \(uid 0\)"):
        private_directory(str(other))


def test_a_stale_temporary_link_is_removed_not_followed(tmp_path):
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (out / "b.tar.gz.tmp").symlink_to(victim)
    Collector(_run, _params(tmp_path), []).collect(str(out / "b.tar.gz"))
    assert victim.read_text() == "keep me\n" and (out / "b.tar.gz").is_file()
