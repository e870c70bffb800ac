"""package_manifest: the one rule for package settings, the manifest and what is wrong with a package."""

from ansible_collections.ascendops.cluster.plugins.module_utils import package_manifest as pm

A, B = "a" * 64, "b" * 64
NAMES = {"package_source": "cann_package_source", "package_dir": "ascend_package_dir (its default)",
         "mirror_url": "ascend_mirror_url (its default)", "package_manifest": "ascend_package_manifest (its default)"}
SET = {k: v.replace(" (its default)", "") for k, v in NAMES.items()}
WHERE = {"manifest": "SHA256SUMS", "location": "/srv/pkgs", "dir_name": lambda: "ascend_package_dir"}


def test_settings_ok_needs_a_known_source_a_mirror_url_and_a_manifest():
    assert pm.settings_ok("controller", "", "SHA256SUMS")
    assert pm.settings_ok("mirror", "http://m", "SHA256SUMS")
    assert not pm.settings_ok("http", "", "SHA256SUMS")
    assert not pm.settings_ok("mirror", "", "SHA256SUMS")
    assert not pm.settings_ok("controller", "", "")


def test_settings_problem_names_what_the_user_wrote_and_the_fix():
    assert pm.settings_problem("n1", "http", "", NAMES, SET) == (
        "n1: cann_package_source is 'http': set it to controller (packages in a directory on the controller) "
        "or mirror (an HTTP(S) directory).")
    msg = pm.settings_problem("n1", "mirror", "", NAMES, SET)
    assert "ascend_mirror_url (its default) is empty: set ascend_mirror_url to the mirror's base URL" in msg
    assert "SHA256SUMS" in pm.settings_problem("n1", "controller", "", NAMES, SET)


def test_every_problem_of_the_packages_is_named_in_order():
    reads = [{"path": "/srv/pkgs/ok.run", "exists": True, "sha256": A},
             {"path": "/srv/pkgs/bad.run", "exists": True, "sha256": B},
             {"path": "/srv/pkgs/gone.run", "exists": False, "sha256": None},
             {"path": "/srv/pkgs/link.run", "exists": False, "sha256": None, "link_target": "/store/x.run"},
             {"path": "/srv/pkgs/unlisted.run", "exists": True, "sha256": A}]
    sums = {"ok.run": A, "bad.run": A, "gone.run": A, "link.run": A}
    out = pm.package_problems("n1", ["ok.run", "bad.run", "gone.run", "link.run", "unlisted.run"],
                              {"unlisted.run": "cann_version 9.9"}, sums, reads, WHERE, "aarch64")
    assert out == [
        f"n1: /srv/pkgs/bad.run (ascend_package_dir) is corrupt: its sha256 is {B}, the manifest says {A}. "
        "Fetch the package again (or fix SHA256SUMS).",
        "n1: /srv/pkgs/gone.run (ascend_package_dir) is missing. Fetch the package again (or fix SHA256SUMS).",
        "n1: /srv/pkgs/link.run (ascend_package_dir) is a symbolic link to /store/x.run, which does not exist "
        "(a dangling link). Point the link at the package file (ln -sfn /path/to/link.run /srv/pkgs/link.run), "
        "or put the package itself there.",
        "n1: unlisted.run (cann_version 9.9, architecture aarch64) is not listed in SHA256SUMS of /srv/pkgs. Add the "
        "package and its sha256 there, or set the version to one that is.",
    ]


def test_the_setting_names_are_read_only_for_a_problem_with_a_file():
    asked = []
    where = {**WHERE, "dir_name": lambda: asked.append(1) or "ascend_package_dir"}
    good = [{"path": "/srv/pkgs/ok.run", "exists": True, "sha256": A}]
    assert pm.package_problems("n1", ["ok.run"], {}, {"ok.run": A}, good, where, "x86_64") == [] and not asked


def test_a_mirror_checks_only_the_listing_the_nodes_check_the_content():
    assert pm.package_problems("n1", ["a.run"], {}, {"a.run": A}, None, WHERE, "x86_64") == []
    assert "not listed" in pm.package_problems("n1", ["b.run"], {}, {"a.run": A}, None, WHERE, "x86_64")[0]


def test_a_missing_manifest_says_whether_the_directory_is_there():
    there = pm.missing_manifest_problem("n1", "/srv/pkgs", "SHA256SUMS", True, NAMES, SET)
    assert "ascend_package_dir (its default) is /srv/pkgs, but that directory holds no SHA256SUMS" in there
    assert "(sha256sum *.run > SHA256SUMS), or set ascend_package_dir to the directory" in there
    assert "is not on the controller" in pm.missing_manifest_problem("n1", "/x", "SHA256SUMS", False, NAMES, SET)
