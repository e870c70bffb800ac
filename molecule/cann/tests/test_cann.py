"""CANN: the current version installed fresh, then the next one beside it with latest moved; refusals installed
nothing. Versions from releases/sim.yml and sim/packages/cann-sets.yml."""

from ascend_verify import CURRENT, NEWDRIVER_CANN, NEXT_CANN, installs, key_values

TK = "/usr/local/Ascend/ascend-toolkit"


def _arch(host):
    return host.run("uname -m").stdout.strip()


def test_install_history(host):
    cann = [i for i in installs(host) if i[0] in ("toolkit", "kernels")]
    # each version installed once, with --install (beside), toolkit before its kernels; the
    # refused newer-driver CANN and the mismatched kernels never reached an installer
    assert cann == [
        ("toolkit", CURRENT["cann"], "install"),
        ("kernels", CURRENT["cann"], "install"),
        ("toolkit", NEXT_CANN, "install"),
        ("kernels", NEXT_CANN, "install"),
    ]


def test_latest_points_at_the_new_version_and_the_old_one_is_kept(host):
    latest = host.file(f"{TK}/latest")
    assert latest.is_symlink and latest.linked_to == f"{TK}/{NEXT_CANN}"
    for version in (CURRENT["cann"], NEXT_CANN):
        info = key_values(host, f"{TK}/{version}/{_arch(host)}-linux/ascend_toolkit_install.info")
        assert info["version"] == version and info["version_dir"] == version
        kernels = key_values(host, f"{TK}/{version}/opp_kernel/version.info")
        # Version= is a build number; the package version is version_dir
        assert kernels["version_dir"] == version and kernels["Version"] != version
    assert not host.file(f"{TK}/{NEWDRIVER_CANN}").exists


def test_login_shell_has_the_toolkit_environment(host):
    assert host.file("/etc/profile.d/ascend-cann.sh").contains(f"{TK}/set_env.sh")
    env = host.run("env -i PATH=/usr/bin:/bin HOME=/root bash -lc env")
    assert env.rc == 0, env.stderr
    values = dict(line.split("=", 1) for line in env.stdout.splitlines() if "=" in line)
    assert values["ASCEND_TOOLKIT_HOME"] == f"{TK}/latest"
    assert values["ASCEND_OPP_PATH"] == f"{TK}/latest/opp"
    assert f"{TK}/latest/lib64" in values["LD_LIBRARY_PATH"].split(":")


def test_packages_staged_once(host):
    staged = host.run("ls /var/cache/ascendops/packages").stdout.split()
    assert f"Ascend-cann-toolkit_{CURRENT['cann']}_linux-{_arch(host)}.run" in staged
    assert f"Ascend-cann-toolkit_{NEXT_CANN}_linux-{_arch(host)}.run" in staged
