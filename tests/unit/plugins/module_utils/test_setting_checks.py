"""Settings that would make the collection touch what it does not own (module_utils/setting_checks.py and
the filters over it): control characters, path settings, bind-mount sources."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.settings import (
    FilterModule,
    setting_path_problems,
    setting_text_problems,
)
from ansible_collections.ascendops.cluster.plugins.module_utils import setting_checks as sc

# ---------------------------------------------------------------- control characters


@pytest.mark.parametrize("value, what", [
    ("img:1\nExecStartPost=/bin/sh -c id", "a newline at character 6"),
    ("a\rb", "a carriage return at character 2"),
    ("a\x00b", "a NUL at character 2"),
    ("\x1b[31m", "an escape at character 1"),
    ("x\x7f", "a DEL at character 2"),
    ("x\x85", "a control character (U+0085) at character 2"),
    ("x\u2028y", "a line separator (U+2028) at character 2"),
    ("x\x0bz", "a control character (U+000B) at character 2"),
])
def test_a_control_character_is_refused_naming_the_variable_and_the_character(value, what):
    assert sc.control_char_problems("launch_image", value) == [f"launch_image holds {what}"]


def test_the_value_itself_is_never_shown():
    secret = "hunter2\nEVIL=1"
    out = setting_text_problems({"launch_job": {"extra_env": {"DB_PASS": secret}}})
    assert out == ["launch_job.extra_env.DB_PASS holds a newline at character 8"]
    assert "hunter2" not in out[0]


@pytest.mark.parametrize("value", ["registry.example/trainer:1.2", "tab\tis fine", "üñí code", "", 42, None, True])
def test_ordinary_values_pass(value):
    assert sc.control_char_problems("x", value) == []


def test_nested_values_are_named_by_their_path_and_skip_leaves_out_a_subtree():
    settings = {
        "launch_container_extra_args": ["--shm-size", "64g\n"],
        "launch_job": {"name": "j", "config": {"data": {"prompt": "line 1\nline 2"}}, "extra_env": {"K\n": "v"}},
    }
    out = setting_text_problems(settings, skip=["launch_job.config"])
    assert out == ["launch_container_extra_args[1] holds a newline at character 4",
                   "launch_job.extra_env has a key with a newline at character 2"]
    assert "launch_job.config.data.prompt holds a newline at character 7" in setting_text_problems(settings)


# ---------------------------------------------------------------- path settings


@pytest.mark.parametrize("value", [
    "/", "//", "/etc", "/etc/", "/usr", "/usr/local", "/usr/lib", "/usr/lib64", "/bin", "/sbin", "/lib", "/lib64",
    "/lib32", "/boot", "/dev", "/proc", "/sys", "/run", "/var", "/var/lib", "/var/log", "/var/tmp", "/home", "/root",
    "/tmp", "/tmp/", "/mnt", "/opt", "/srv", "/./var//lib/",
])
def test_the_root_and_system_directories_themselves_are_refused(value):
    out = sc.path_problems("launch_status_dir", value)
    assert len(out) == 1 and out[0].startswith("launch_status_dir is ")
    if sc.normalize(value) != "/":
        assert f"the system directory {sc.normalize(value)} itself" in out[0]
        assert "name a directory below it" in out[0]


@pytest.mark.parametrize("value", [
    "/var/lib/ascendops", "/var/lib/ascendops/status", "/home/ai/checkpoints", "/tmp/x", "/mnt/ascendops",
    "/etc/ascendops", "/usr/local/Ascend", "/var/cache/ascendops/packages", "/data/llama3", "/srv/ascend/packages",
    "/var/lib/docker", "/etc/docker/daemon.json", "/lib-data", "/var/lib/ascendops/run.lock",
])
def test_directories_below_the_system_ones_pass(value):
    assert sc.path_problems("x", value) == []


@pytest.mark.parametrize("value, expected", [
    ("var/lib/ascendops", "x must be an absolute path, is 'var/lib/ascendops'"),
    ("", "x must be an absolute path, is empty"),
    ("/var/lib/ascendops/../../../etc", "x must not have '..' components"),
    ("/srv/data\n", "x holds a newline at character 10"),
    (["/a"], "x must be an absolute path, is list"),
])
def test_relative_dotdot_empty_and_non_text_paths_are_refused(value, expected):
    out = sc.path_problems("x", value)
    assert len(out) == 1 and out[0].startswith(expected)


def test_lists_are_named_per_item_and_empty_may_mean_none():
    out = setting_path_problems({"launch_driver_mounts": ["/usr/local/dcmi", "/"],
                                 "launch_metrics_textfile_dir": "", "launch_job_dir": ""},
                                allow_empty=["launch_metrics_textfile_dir"])
    assert out == ["launch_driver_mounts[1] is / : name a directory of its own (e.g. /var/lib/ascendops/...)",
                   "launch_job_dir must be an absolute path, is empty"]


def test_the_filters_are_registered():
    filters = FilterModule().filters()
    assert filters["setting_text_problems"] is setting_text_problems
    assert filters["setting_path_problems"] is setting_path_problems


# ---------------------------------------------------------------- bind mounts into the job's container


@pytest.mark.parametrize("spec", [
    "/etc/ascend-sim:/etc/ascend-sim:ro", "/var/lib/ascend-sim:/var/lib/ascend-sim", "/opt/x:/opt/x:ro",
    "/data/shared:/data", "/home/ai/models:/models:ro", "/mnt/nfs/x:/x:rw",
])
def test_volumes_of_the_sites_own_directories_pass(spec):
    assert sc.volume_problems("v", spec) == []


@pytest.mark.parametrize("spec, expected", [
    ("/:/host", "the host path is / "),
    ("/etc:/etc:ro", "the system directory /etc itself"),
    ("/var/run/docker.sock:/var/run/docker.sock", "/var/run (the kernel's, the devices', the engine's or root's own)"),
    ("/run/containerd/containerd.sock:/c.sock:ro", "/run (the kernel's"),
    ("/dev/mem:/dev/mem", "/dev (the kernel's"),
    ("/proc/1/root:/h:ro", "/proc (the kernel's"),
    ("/var/lib/docker/volumes:/v", "/var/lib/docker (the kernel's"),
    ("/root/.ssh:/k:ro", "/root (the kernel's"),
    ("/etc/shadow:/s", "a host path under /etc is mounted read-only only: add :ro"),
    ("/usr/local/bin:/b", "the system directory /usr/local/bin itself"),
    ("/usr/local/bin/x:/b", "a host path under /usr is mounted read-only only"),
    ("/data:/data:z", "the only mount options accepted are ro and rw"),
    ("/data:/data:ro,rshared", "the only mount options accepted are ro and rw"),
    ("data:/data", "must be HOST_PATH:CONTAINER_PATH[:ro|rw], both absolute"),
    ("/data", "must be HOST_PATH:CONTAINER_PATH"),
    ("/data:/", "the container path must be a directory other than /"),
    ("/srv/../etc:/e", "must not have '..' components"),
])
def test_volumes_reaching_the_system_are_refused(spec, expected):
    out = " ".join(sc.volume_problems("v", spec))
    assert expected in out, out
