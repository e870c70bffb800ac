"""Check mode changed nothing on the node."""

from ascend_verify import events


def test_nothing_installed(host):
    assert not host.file("/usr/local/Ascend").exists
    assert not host.file("/etc/ascend_install.info").exists
    assert not host.file("/dev/davinci_manager").exists
    assert [e for e in events(host) if e.startswith("install")] == []


def test_nothing_staged_or_configured(host):
    assert not host.file("/var/cache/ascendops").exists
    assert not host.user("HwHiAiUser").exists
    assert not host.package("dkms").is_installed
    assert not host.file("/etc/sysctl.d/90-ascendops.conf").exists
    assert not host.file("/etc/security/limits.d/90-ascendops.conf").exists
