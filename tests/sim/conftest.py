"""Fixtures for the NPU stand-in and package-builder unit tests (SIMULATION ONLY code under test).

Everything runs on the host inside temporary directories: ``ASCEND_SIM_ROOT`` prefixes every path
the stand-ins and installers touch, users come from ``$ASCEND_SIM_ROOT/etc/passwd``, and the
driver's prerequisites (lspci, ifconfig, dkms) are stub scripts on ``PATH``.
"""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from simhelpers import (  # noqa: E402
    CURRENT,
    OTHER_ARCH,
    PREREQ_TOOLS,
    PYTHON3,
    Node,
    PackageSets,
    build_all,
    build_set,
    make_node,
)


@pytest.fixture(scope="session")
def packages(tmp_path_factory) -> PackageSets:
    """The current, previous and a foreign-arch package set, built once per session."""
    base = tmp_path_factory.mktemp("packages")
    build_all(base)
    return PackageSets(
        current=base / "current",
        previous=base / "previous",
        other_arch=build_set(tmp_path_factory.mktemp("packages-other-arch"), CURRENT, OTHER_ARCH, only="driver"),
    )


@pytest.fixture(scope="session")
def bare_bin(tmp_path_factory):
    """A PATH directory with every system command except lspci, ifconfig and dkms."""
    d = tmp_path_factory.mktemp("bare-bin")
    os.symlink(PYTHON3, d / "python3")
    for sysdir in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not os.path.isdir(sysdir):
            continue
        for name in os.listdir(sysdir):
            target = d / name
            if name in PREREQ_TOOLS or os.path.lexists(target):
                continue
            os.symlink(os.path.join(sysdir, name), target)
    return d


@pytest.fixture
def node(tmp_path) -> Node:
    return make_node(tmp_path)


@pytest.fixture(scope="session")
def booted_template(tmp_path_factory, packages) -> Node:
    """Driver and firmware (current) installed, then booted: a working 2-NPU node (built once)."""
    n = make_node(tmp_path_factory.mktemp("booted-template"))
    r = n.install(packages.pkg("driver"), "--full", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    r = n.install(packages.pkg("firmware"), "--full", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    r = n.sim("boot")
    assert r.returncode == 0, r.stderr
    return n


@pytest.fixture
def booted_node(tmp_path, booted_template) -> Node:
    """A private copy of the booted template (cp -a keeps the device nodes)."""
    n = make_node(tmp_path)
    subprocess.run(["cp", "-a", f"{booted_template.root}/.", str(n.root)], check=True)
    return n


