"""setting_name: a refusal names the variable the user wrote (the role's own, else the ascend_* one)."""

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.settings import setting_name


def test_the_role_variable_when_the_user_set_it():
    assert setting_name(["cann_package_dir", "ascend_package_dir"], {"cann_package_dir": "/x"}) == "cann_package_dir"


def test_the_collection_wide_variable_when_the_user_set_only_it():
    host = {"ascend_package_dir": "/x", "inventory_hostname": "n1"}
    assert setting_name(["cann_package_dir", "ascend_package_dir"], host) == "ascend_package_dir"


def test_neither_set_names_the_collection_wide_default():
    assert setting_name(["cann_mirror_url", "ascend_mirror_url"], {}) == "ascend_mirror_url (its default)"
    assert setting_name(["cann_mirror_url", "ascend_mirror_url"], {}, False) == "ascend_mirror_url"
    assert setting_name("ascend_npus_per_node", {}) == "ascend_npus_per_node (its default)"


def test_most_specific_first():
    names = ["launch_devices_per_server", "ascend_devices_per_node", "ascend_npus_per_node"]
    assert setting_name(names, {"ascend_npus_per_node": 4, "launch_devices_per_server": 2}) == names[0]
    assert setting_name(names, {"ascend_npus_per_node": 4}) == "ascend_npus_per_node"


def test_no_names_is_an_error():
    with pytest.raises(ValueError):
        setting_name([], {})


def test_a_role_value_that_differs_was_set_where_hostvars_cannot_see():
    # e.g. include_role vars: {npu_driver_expected_npus: 8} while the inventory has ascend_npus_per_node: 2
    names = ["npu_driver_expected_npus", "ascend_npus_per_node"]
    host = {"ascend_npus_per_node": 2}
    assert setting_name(names, host, values=[8, 2]) == "npu_driver_expected_npus"
    assert setting_name(names, host, values=[2, 2]) == "ascend_npus_per_node"
    assert setting_name(names, host, values=["2", 2]) == "ascend_npus_per_node"
    # values shorter than names: the later names count only when hostvars holds them
    chain = ["launch_devices_per_server", "ascend_devices_per_node", "ascend_npus_per_node"]
    assert setting_name(chain, {}, False, values=[16, 16]) == "ascend_npus_per_node"
    assert setting_name(chain, {}, False, values=[4, 16]) == "launch_devices_per_server"


def test_several_settings_at_once():
    from ansible_collections.ascendops.cluster.plugins.filter.settings import setting_names

    settings = {"package_dir": ["cann_package_dir", "ascend_package_dir"],
                "mirror_url": ["cann_mirror_url", "ascend_mirror_url"]}
    values = {"package_dir": ["/other", "/srv/ascend/packages"], "mirror_url": ["", ""]}
    expected = {"package_dir": "cann_package_dir", "mirror_url": "ascend_mirror_url (its default)"}
    assert setting_names(settings, {}, values) == expected
    assert setting_names(settings, {}, values, False)["mirror_url"] == "ascend_mirror_url"
