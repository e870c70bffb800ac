"""The release checks validate.yml runs before any change (ascend_release.run_end, check_run_agrees,
check_left_out, check_end_state, installed_from_cann_info): in range, out of range, missing, mixed across
nodes; each message names the host, the component, both versions and the vendor's rule."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.ascendops.cluster.plugins.filter.release import FilterModule, release_load
from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_release as r
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import parse_key_value

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# The fixture driver (24.1.rc1) declares compatible_version_fw=[7.0.0,7.2.99].
DRIVER = {"version": "24.1.rc1", "info": parse_key_value((FIXTURES / "driver_version.info").read_text())}
KERNELS = {"version": "8.0.0", "required": {"driver": ">=23.0, <=24.1.rc3"}}


def rel(name="910b-cann8.0.0"):
    return release_load(name)  # the collection's own releases/ (no directory given)


# ------------------------------------------------------------------------------ run_end

def test_a_node_ends_on_the_releases_versions_unless_the_site_set_one():
    end = r.run_end(rel(), {"driver": "25.0.rc1.1", "firmware": "", "cann_toolkit": None})
    assert end["driver"] == "25.0.rc1.1"  # set by the site
    assert end["firmware"] == "7.5.0.2.220" and end["cann_toolkit"] == "8.0.0"  # the release's
    assert "mcu" not in end  # null in the release: not managed


def test_the_filter_loads_the_collections_own_releases_and_each_call_gets_its_own_copy():
    a, b = rel(), rel()
    a["host"]["driver"] = "changed"
    assert b["host"]["driver"] == "24.1.rc1"
    assert b["file"].endswith("releases/910b-cann8.0.0.yml")


# ------------------------------------------------------------------------------ nodes of this run

def test_nodes_of_one_run_on_one_version_pass():
    end = r.run_end(rel())
    assert r.check_run_agrees({"n1": end, "n2": dict(end)}, "910b-cann8.0.0") == []


def test_a_version_set_for_some_nodes_only_is_refused_naming_both_versions_and_the_setting():
    end = r.run_end(rel())
    out = r.check_run_agrees({"n1": end, "n2": dict(end, driver="25.0.rc1.1")}, "910b-cann8.0.0")
    assert [f["component"] for f in out] == ["driver"]
    msg = out[0]["msg"]
    assert "24.1.rc1 on n1; 25.0.rc1.1 on n2" in msg
    assert "npu_driver_version set for some nodes only" in msg and "release 910b-cann8.0.0" in msg
    assert "CANN versions must not differ between nodes" in msg


def test_versions_that_only_differ_in_spelling_are_one_version():
    end = r.run_end(rel())
    assert r.check_run_agrees({"n1": end, "n2": dict(end, cann_toolkit="8.0.0.0")}, "x") == []


# ------------------------------------------------------------------------------ nodes left out (--limit)

def test_a_node_outside_the_run_on_another_driver_is_refused_naming_host_component_and_both_versions():
    ends = {"n1": r.run_end(rel())}
    out = r.check_left_out({"n2": {"driver": "23.0.0", "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0"}}, ends,
                           "910b-cann8.0.0")
    assert [(f["host"], f["component"], f["found"], f["expected"]) for f in out] == [
        ("n2", "driver", "23.0.0", "24.1.rc1")]
    msg = out[0]["msg"]
    assert msg.startswith("n2: driver 23.0.0 is installed there (outside this run: --limit)")
    assert "end on driver 24.1.rc1 (release 910b-cann8.0.0)" in msg and "add n2 to --limit" in msg


def test_a_node_outside_the_run_on_the_same_versions_passes():
    ends = {"n1": r.run_end(rel())}
    assert r.check_left_out({"n2": {"driver": "24.1.rc1", "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0"}},
                            ends, "x") == []


def test_a_node_outside_the_run_with_nothing_installed_is_not_another_version():
    ends = {"n1": r.run_end(rel())}
    assert r.check_left_out({"n2": {"driver": None, "cann_toolkit": None, "cann_kernels": None}}, ends, "x") == []


def test_mixed_nodes_outside_the_run_each_named():
    ends = {"n1": r.run_end(rel())}
    out = r.check_left_out({"n2": {"driver": "24.1.rc1", "cann_toolkit": "8.0.RC3", "cann_kernels": "8.0.RC3"},
                            "n3": {"driver": "23.0.0", "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0"}},
                           ends, "x")
    assert [(f["host"], f["component"]) for f in out] == [
        ("n2", "cann_toolkit"), ("n2", "cann_kernels"), ("n3", "driver")]


def test_installed_versions_are_read_from_a_cann_info_result():
    result = {"driver_version": "23.0.0",
              "active": {"installed": True, "version": "8.0.RC3", "kernels": {"installed": False, "version": None}}}
    assert r.installed_from_cann_info(result) == {"driver": "23.0.0", "cann_toolkit": "8.0.RC3",
                                                  "cann_kernels": None}
    assert r.installed_from_cann_info({"driver_version": None, "active": {"installed": False}}) == {
        "driver": None, "cann_toolkit": None, "cann_kernels": None}


# ------------------------------------------------------------------------------ a node's vendor records

def test_end_firmware_inside_the_installed_drivers_range_passes():
    end = {"driver": "24.1.rc1", "firmware": "7.1.0.3.220", "cann_kernels": "8.0.0"}
    assert r.check_end_state("n1", end, DRIVER, {}, KERNELS) == []


def test_end_firmware_outside_the_installed_drivers_range_is_refused():
    end = {"driver": "24.1.rc1", "firmware": "7.5.0.2.220"}
    out = r.check_end_state("n1", end, DRIVER, {}, {})
    assert [f["component"] for f in out] == ["firmware"]
    assert "n1: firmware 7.5.0.2.220 is outside driver 24.1.rc1's compatible_version_fw=[7.0.0,7.2.99]" in out[0]["msg"]


def test_the_end_driver_outside_the_kept_firmwares_compatible_version_drv_is_refused():
    """The other side of the pair: the firmware's own version.info names the drivers it runs with."""
    end = {"driver": "25.0.rc1.1", "firmware": "7.5.0.2.220"}
    info = {"Version": "7.5.0.2.220", "compatible_version_drv": "[23.0.0,24.1.99],[24.1.rc1,24.1.rc9]"}
    firmware = {"version": "7.5.0.2.220", "info": info}
    out = r.check_end_state("n1", end, {}, firmware, {})
    assert [f["component"] for f in out] == ["driver"]
    assert ("n1: driver 25.0.rc1.1 is outside firmware 7.5.0.2.220's compatible_version_drv=[23.0.0,24.1.99],"
            "[24.1.rc1,24.1.rc9]") in out[0]["msg"]
    assert r.check_end_state("n1", dict(end, driver="24.1.rc2"), {}, firmware, {}) == []
    # a firmware the run replaces, or one whose record names no range, is not judged by its record
    assert r.check_end_state("n1", dict(end, firmware="7.7.0.1.231"), {}, firmware, {}) == []
    assert r.check_end_state("n1", end, {}, {"version": "7.5.0.2.220", "info": {}}, {}) == []


def test_a_driver_that_declares_no_firmware_range_or_is_replaced_is_not_judged_here():
    end = {"driver": "24.1.rc1", "firmware": "7.5.0.2.220"}
    assert r.check_end_state("n1", end, {"version": "24.1.rc1", "info": {"Version": "24.1.rc1"}}, {}, {}) == []
    # the run installs another driver and its package's record was not read: the installed driver's range
    # (which would refuse 7.5.0.2.220) says nothing about the new driver
    assert r.check_end_state("n1", dict(end, driver="25.0.rc1.1"), DRIVER, {}, {}) == []


# The driver package a run installs (25.0.rc1.1), its ./driver/version.info as read through makeself's --tar.
NEW_DRIVER_RECORD = ("Version=25.0.rc1.1\nascendhal_version=7.35.23\nInnerversion=V100R001C21SPC001B230\n"
                     "compatible_version=[V100R001C15],[V100R001C17],[V100R001C21]\n"
                     "compatible_version_fw=[7.5.0,7.7.99]\n")


def test_a_driver_upgrade_judges_the_end_firmware_by_the_new_drivers_package_range():
    end = {"driver": "25.0.rc1.1", "firmware": "7.7.0.1.231"}
    # in range of the new driver's record (outside the installed 24.1.rc1's [7.0.0,7.2.99])
    assert r.check_end_state("n1", end, DRIVER, {}, {}, None, NEW_DRIVER_RECORD) == []
    assert r.check_end_state("n1", end, DRIVER, {}, {}, None, parse_key_value(NEW_DRIVER_RECORD)) == []
    # out of range of the new driver's record (inside the installed driver's)
    out = r.check_end_state("n1", dict(end, firmware="7.1.0.3.220"), DRIVER, {}, {}, None, NEW_DRIVER_RECORD)
    assert [f["component"] for f in out] == ["firmware"]
    assert out[0]["expected"] == "[7.5.0,7.7.99]" and out[0]["found"] == "7.1.0.3.220"
    assert out[0]["msg"].startswith("n1: firmware 7.1.0.3.220 is outside driver 25.0.rc1.1's "
                                    "compatible_version_fw=[7.5.0,7.7.99] (version.info)")
    # a fresh node (no driver yet) is judged by the package too
    out = r.check_end_state("n1", dict(end, firmware="7.1.0.3.220"), {"version": None, "info": {}}, {}, {},
                            None, NEW_DRIVER_RECORD)
    assert [f["component"] for f in out] == ["firmware"]


def test_a_driver_upgrade_whose_package_record_is_missing_or_declares_no_range_is_not_judged():
    end = {"driver": "25.0.rc1.1", "firmware": "7.1.0.3.220"}
    no_range = "\n".join(line for line in NEW_DRIVER_RECORD.splitlines() if "compatible_version_fw" not in line)
    for record in (None, "", no_range):
        assert r.check_end_state("n1", end, DRIVER, {}, {}, None, record) == []
    # a node that keeps its driver is judged by the installed record, whatever a package says
    keep = {"driver": "24.1.rc1", "firmware": "7.5.0.2.220"}
    assert [f["component"] for f in r.check_end_state("n1", keep, DRIVER, {}, {}, None, NEW_DRIVER_RECORD)] == [
        "firmware"]


def test_end_driver_outside_the_installed_canns_required_range_is_refused():
    end = {"driver": "25.0.rc1.1", "cann_toolkit": "8.0.0", "cann_kernels": "8.0.0"}
    out = r.check_end_state("n1", end, {}, {}, KERNELS)
    assert [f["component"] for f in out] == ["driver"]
    assert out[0]["msg"].startswith("n1: CANN 8.0.0 needs NPU driver >=23.0, <=24.1.rc3 "
                                    "(required_package_driver_version) but the driver this node ends on is 25.0.rc1.1")


def test_end_driver_inside_the_range_or_a_cann_the_run_replaces_passes():
    assert r.check_end_state("n1", {"driver": "24.1.rc1", "cann_kernels": "8.0.0"}, {}, {}, KERNELS) == []
    assert r.check_end_state("n1", {"driver": "25.0.rc1.1", "cann_kernels": "8.2.RC1"}, {}, {}, KERNELS) == []


def test_nothing_installed_yet_passes():
    assert r.check_end_state("n1", r.run_end(rel()), {"version": None, "info": {}}, {"version": None},
                             {"version": None, "required": {}}) == []


def test_the_filters_are_registered():
    names = FilterModule().filters()
    for name in ("release_run_end", "release_run_agrees", "release_left_out", "release_end_state",
                 "release_installed", "release_image_label"):
        assert name in names


def test_a_new_cann_is_judged_by_the_range_its_packages_declare():
    end = {"driver": "24.1.rc1", "cann_toolkit": "8.2.RC1", "cann_kernels": "8.2.RC1"}
    package = {"version": "8.2.RC1", "required": {"driver": ">=25.0.rc1"}}
    out = r.check_end_state("n1", end, {}, {}, KERNELS, package)  # installed: 8.0.0, the run installs 8.2.RC1
    assert [f["component"] for f in out] == ["driver"]
    assert out[0]["msg"].startswith("n1: CANN 8.2.RC1 needs NPU driver >=25.0.rc1 (required_package_driver_version) "
                                    "but the driver this node ends on is 24.1.rc1")
    assert r.check_end_state("n1", dict(end, driver="25.0.rc1.1"), {}, {}, KERNELS, package) == []
    # packages of another CANN than the one the node ends on say nothing about it
    assert r.check_end_state("n1", end, {}, {}, KERNELS, dict(package, version="8.1.RC1")) == []


def test_an_image_built_from_another_release_is_named_by_its_label():
    sim = rel("sim")
    label = r.image_label(sim)
    assert FilterModule().filters()["release_image_label"](label, sim, "n1") == []
    out = FilterModule().filters()["release_image_label"](label, rel("910b-cann8.2.rc1"), "n1")
    keys = [f["component"] for f in out]
    assert "image release" in keys and "image torch_npu" in keys
    want = "was built with release sim but release 910b-cann8.2.rc1 names 910b-cann8.2.rc1"
    assert any(want in f["msg"] for f in out)
