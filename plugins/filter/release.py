# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for release manifests (module_utils/ascend_release.py): load one, check a node against the
vendor's compatibility rules, compare installed versions with the release, find nodes that differ."""

from __future__ import annotations

import copy
import hashlib
import marshal
import os
import sys
import tempfile

from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_release as _r
from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import default_cache_file

# The collection's own releases/ (plugins/filter/ -> the collection root).
RELEASES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "releases")
# Loaded manifests by (file, mtime, table mtime): the roles' version defaults all refer to one release, which
# would otherwise be read and checked again at every template of one of them.
_CACHE = {}
# ansible-playbook templates in a fresh forked worker for each task and host, where _CACHE starts empty: the
# validated manifest is also kept on disk (marshal, keyed by both files' content), so a worker reads 2 KB
# instead of parsing and checking the YAML again (about 40 ms of CPU each, some 60 times in a no-op site.yml
# on 4 nodes). ASCENDOPS_RELEASE_CACHE=0 turns it off; an error reading or writing it is a miss, never a failure.
DISK_FORMAT = 3  # 2: the release's package pins (packages); 3: image.digest


def disk_directory(environ=None):
    """``$XDG_CACHE_HOME/ascendops/release``, beside file_sha256's cache."""
    return os.path.join(os.path.dirname(default_cache_file(environ)), "release")


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _disk_file(path, table):
    """The cache file of this manifest and table as they are now (None when either cannot be read)."""
    if os.environ.get("ASCENDOPS_RELEASE_CACHE", "1") == "0":
        return None
    digest = hashlib.sha256(f"{DISK_FORMAT}|{sys.version}|{os.path.abspath(path)}|{os.path.abspath(table)}".encode(
        "utf-8", "surrogateescape"))
    try:
        for name in (path, table):
            with open(name, "rb") as handle:
                digest.update(handle.read() + b"\0")
    except OSError:
        return None
    return os.path.join(disk_directory(), digest.hexdigest())


def _disk_load(cache_file):
    try:
        with open(cache_file, "rb") as handle:
            release = marshal.loads(handle.read())
        return release if isinstance(release, dict) else None
    except Exception:  # pylint: disable=broad-except  # a missing, partial or foreign file is a miss
        return None


def _disk_save(cache_file, release):
    try:
        data = marshal.dumps(release)
        os.makedirs(os.path.dirname(cache_file), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(cache_file), prefix=".release-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, cache_file)
    except Exception:  # pylint: disable=broad-except  # not cached (e.g. a value marshal cannot keep)
        pass


def release_load(name_or_path, releases_dir=""):
    """The validated release manifest (a name in releases_dir, default the collection's releases/, or a
    path), with its torch_npu table. A manifest that cannot be used raises ReleaseError (a ValueError)
    naming the file and the key."""
    releases_dir = str(releases_dir or "") or RELEASES_DIR
    path, table = _r.release_files(name_or_path, releases_dir)
    key = (os.path.abspath(path), _mtime(path), releases_dir, _mtime(table))
    if key not in _CACHE:
        cache_file = _disk_file(path, table)
        release = _disk_load(cache_file) if cache_file else None
        if release is None:
            release = _r.load_release(path, releases_dir)
            if cache_file:
                _disk_save(cache_file, release)
        _CACHE[key] = release
    return copy.deepcopy(_CACHE[key])


def _get(data, *keys):
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def release_check(node, release, host):
    """Findings for one node: its installed firmware against its driver's compatible_version_fw, its
    driver against the installed CANN's required_package_driver_version and against the trainer image's
    CANN's (``image_cann``: the CANN that training uses), its trainer image's label against the release (when
    ``image_label`` is in ``node``), and the release's own image pairing.

    ``node``: ``{driver: {version, info}, firmware: {version}, cann: {version, required},
    image_label: str|null, image_cann: {version, required (a dict or the kernels' version.info text)}}``
    (npu_info's ascend_npu fact carries driver and firmware)."""
    out = _r.check_firmware(host, _get(node, "driver", "version"), _get(node, "driver", "info"),
                            _get(node, "firmware", "version"))
    cann = _get(node, "cann", "version")
    if cann:
        out += _r.check_cann_driver(host, cann, _get(node, "cann", "required") or {},
                                    _get(node, "driver", "version"), what="installed CANN")
    image_cann = _get(node, "image_cann", "version")
    if image_cann:
        out += _r.check_cann_driver(host, image_cann, _get(node, "image_cann", "required") or {},
                                    _get(node, "driver", "version"), what="the trainer image's CANN")
    if release:
        if isinstance(node, dict) and "image_label" in node:
            out += _r.check_image_label(host, node.get("image_label"), release)
        out += _r.check_release(release, host)
    return out


def release_compare(installed, expected, host, not_read=None):
    """Rows {host, component, installed, expected, status}, mismatches first (see ascend_release.compare);
    components in ``not_read`` (that the caller cannot read on the node) are ``not read`` when expected."""
    return _r.compare(host, installed or {}, expected or {}, tuple(not_read or ()))


def release_expected(release):
    """{component: version} every node of the release must end on."""
    return _r.expected_versions(release)


def release_nodes_differ(versions, expected=None, hosts_in_run=None, failed=None):
    """Findings for components on which nodes would end on different versions. ``versions``:
    {host: {component: v}}, the versions each node ends on; with ``expected`` and ``hosts_in_run``
    they are what each node has now, and the nodes the run reaches (less ``failed``) end on
    ``expected`` while the others keep theirs (a --limit run, a failed batch)."""
    if expected is not None and hosts_in_run is not None:
        versions = _r.end_versions(versions, expected, hosts_in_run, failed or ())
    return _r.check_nodes_agree(versions or {})


def release_run_end(release, overrides=None):
    """{component: version} a node of this run ends on: the release's, with the versions the site set itself."""
    return _r.run_end(release, overrides or {})


def release_run_agrees(ends, release_name):
    """Findings for driver/CANN on which the nodes of this run would end differently ({host: end versions})."""
    return _r.check_run_agrees(ends or {}, release_name)


def release_left_out(installed, ends, release_name):
    """Findings for nodes outside this run ({host: installed versions}) that carry another driver/CANN than
    the nodes of this run end on ({host: end versions})."""
    return _r.check_left_out(installed or {}, ends or {}, release_name)


def release_end_state(end, host, driver=None, firmware=None, kernels=None, package=None, driver_package=None):
    """Findings for the versions a node ends on against the vendor records installed there (or, for a new CANN,
    read from its packages: ``package`` {version, required}; for a new driver, ``driver_package``: the
    version.info of its package): the firmware within the end driver's compatible_version_fw, the driver within
    the CANN's required_package_driver_version."""
    return _r.check_end_state(host, end or {}, driver or {}, firmware or {}, kernels or {}, package or {},
                              driver_package or None)


def release_image_label(label, release, host):
    """Findings for an image's ascendops.release label (JSON text) against the release."""
    return _r.check_image_label(host, label, release)


def release_installed(cann_info_result):
    """{driver, cann_toolkit, cann_kernels} installed on a node, from its cann_info result."""
    return _r.installed_from_cann_info(cann_info_result)


class FilterModule:
    """Release manifest filters."""

    def filters(self):
        return {"release_load": release_load, "release_check": release_check, "release_compare": release_compare,
                "release_expected": release_expected, "release_nodes_differ": release_nodes_differ,
                "release_run_end": release_run_end, "release_run_agrees": release_run_agrees,
                "release_left_out": release_left_out, "release_end_state": release_end_state,
                "release_installed": release_installed, "release_image_label": release_image_label}
