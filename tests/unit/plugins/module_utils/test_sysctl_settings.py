"""Kernel parameters set together (plugins/module_utils/sysctl_settings.py): file lines, key paths, values."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils.sysctl_settings import (
    file_values,
    normalize_value,
    proc_path,
    render_file,
    same_value,
)


@pytest.mark.parametrize(("key", "path"), [
    ("net.core.somaxconn", "/proc/sys/net/core/somaxconn"),
    ("net.ipv4.conf.eth0/100.rp_filter", "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"),
    ("net/ipv4/conf/eth0.100/rp_filter", "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"),
    (" vm.swappiness ", "/proc/sys/vm/swappiness"),
])
def test_proc_path_follows_sysctl_separators(key, path):
    assert proc_path(key, "/proc/sys") == path


@pytest.mark.parametrize(("value", "text"), [
    (True, "1"), (False, "0"), ("yes", "1"), ("Off", "0"), (65535, "65535"), (" 4096 87380 1 ", "4096 87380 1"),
])
def test_values_are_written_as_sysctl_does(value, text):
    assert normalize_value(value) == text


def test_values_compare_field_by_field():
    assert same_value("4096\t87380\t134217728", "4096 87380 134217728")
    assert not same_value("4096 87380", "4096 87380 134217728")
    assert not same_value(None, "1")


def test_render_keeps_other_lines_and_rewrites_only_what_differs():
    text = "# site comment\nnet.core.somaxconn = 65535\nvm.swappiness=10\nnet.ipv4.tcp_max_syn_backlog=1024\n"
    out = render_file(text, {"net.core.somaxconn": "65535", "net.ipv4.tcp_max_syn_backlog": "65535",
                             "net.ipv4.ip_local_reserved_ports": "60000-60015"})
    assert out.splitlines() == ["# site comment", "net.core.somaxconn = 65535", "vm.swappiness=10",
                                "net.ipv4.tcp_max_syn_backlog=65535", "net.ipv4.ip_local_reserved_ports=60000-60015"]


def test_render_drops_later_lines_of_a_key_that_would_win_at_boot():
    text = "net.core.somaxconn=65535\nnet.core.somaxconn=128\n"
    assert file_values(text) == {"net.core.somaxconn": "128"}
    assert render_file(text, {"net.core.somaxconn": "65535"}) == "net.core.somaxconn=65535\n"


def test_render_of_a_file_that_says_it_already_is_the_same_text():
    text = "net.core.rmem_max=268435456\nnet.ipv4.tcp_rmem=4096 87380 268435456\n"
    assert render_file(text, {"net.core.rmem_max": "268435456", "net.ipv4.tcp_rmem": "4096 87380 268435456"}) == text


def test_render_of_a_new_file():
    assert render_file("", {"a.b": "1", "c.d": "2"}) == "a.b=1\nc.d=2\n"
