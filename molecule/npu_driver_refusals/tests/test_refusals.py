"""After every refusal the node is exactly as prepare left it."""

import os
import pathlib

from ascend_verify import CURRENT, installs, key_values, npu_table


def test_only_the_prepare_installs_happened(host):
    assert installs(host) == [("driver", CURRENT["driver"], "full"), ("firmware", CURRENT["firmware"], "full")]


def test_node_still_healthy_on_current_versions(host, expected_npus):
    assert key_values(host, "/usr/local/Ascend/driver/version.info")["Version"] == CURRENT["driver"]
    version, npus = npu_table(host)
    assert version == CURRENT["driver"]
    assert len(npus) == expected_npus and all(n["health"] == "OK" for n in npus)


def test_no_previous_or_corrupt_package_staged(host):
    staged = host.run("ls /var/cache/ascendops/packages").stdout.split()
    assert sorted(staged) == sorted([
        f"Ascend-hdk-910b-npu-driver_{CURRENT['driver']}_linux-{host.system_info.arch}.run",
        f"Ascend-hdk-910b-npu-firmware_{CURRENT['firmware']}.run",
    ])
    manifest = pathlib.Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", "."), "sim/build/packages/current/SHA256SUMS")
    sums = {name: digest for digest, name in (line.split() for line in manifest.read_text().splitlines() if line)}
    for name in staged:
        on_node = host.run(f"sha256sum /var/cache/ascendops/packages/{name}").stdout.split()[0]
        assert on_node == sums[name], f"{name} staged on the node differs from the manifest"
