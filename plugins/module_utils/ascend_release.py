# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release manifests (``releases/<name>.yml``) and the vendor's compatibility rules between versions.

A release names every version that must move in lockstep: the host's driver, firmware, MCU, CANN
toolkit and kernels (ops from 8.5) and Ascend Docker Runtime, CANN's Python dependency ranges, and the
trainer image (its CANN, Python, torch, torch_npu, DeepSpeed, transformers, numpy, protobuf, base image
and reference). ``releases/_torch_npu.yml`` is Ascend/pytorch's torch_npu <-> torch <-> CANN table.

Checks return *findings*: ``{"host", "component", "expected", "found", "rule", "msg"}``; ``msg`` is one
sentence naming the host, the component, both versions and the vendor's rule. An empty list means the
rule holds. Ranges of the vendor's records are read by ``cann_info`` (``parse_range``/``in_range``,
``parse_required``), the same code the cann role's checks use. Runs on the controller (filters).
"""

from __future__ import annotations

import copy
import json
import os
import re

from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_formats import parse_key_value
from ansible_collections.ascendops.cluster.plugins.module_utils.ascend_version import (
    is_valid_version,
    versions_equal,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.cann_info import (
    driver_fit,
    in_range,
    parse_kernels_info,
    parse_range,
    parse_required,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import file_identity

COMPAT_FILE = "_torch_npu.yml"
SERVER_MODELS = ("910b", "a3", "310p")
# Host components a node reports (npu_info / cann_info) and a release names.
HOST_COMPONENTS = ("driver", "firmware", "mcu", "cann_toolkit", "cann_kernels", "docker_runtime")
IMAGE_KEYS = ("cann", "python", "torch", "torch_npu", "deepspeed", "transformers", "numpy", "protobuf")
# The image label that embeds the release an image was built from (build-image.sh writes it).
IMAGE_LABEL = "ascendops.release"
_PY_VERSION_RE = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[\w.]+)?$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


class ReleaseError(ValueError):
    """A release manifest that cannot be used; the message names the file and the key."""


# ------------------------------------------------------------------------------ Python versions

def _pyver(text):
    """PEP 440 ``Version`` of a Python package version (``2.6.0``, ``2.4.0.post2``, ``2.13.0+cpu``)."""
    from packaging.version import InvalidVersion, Version  # ansible-core's own dependency

    try:
        return Version(str(text))
    except InvalidVersion:
        raise ValueError(f"{text!r} is not a Python package version") from None


def same_release(a, b):
    """Two Python package versions name the same release, local tags (``+cpu``) aside."""
    try:
        return _pyver(a).public == _pyver(b).public
    except ValueError:
        return str(a).strip() == str(b).strip()


def in_pyrange(version, spec):
    """True/False whether a Python package version is inside ``spec`` (``">=1.19.2, <2.0"``);
    None when that cannot be told."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return _pyver(version) in SpecifierSet(str(spec))
    except (InvalidSpecifier, ValueError):
        return None


# ------------------------------------------------------------------------------ loading

def _fail(source, key, problem):
    raise ReleaseError(f"{source}: {key}: {problem}")


def _ascend_version(source, key, value, optional=False):
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        _fail(source, key, f"must be a version string (quoted in YAML), got {value!r}")
    if not is_valid_version(value):
        _fail(source, key, f"{value!r} is not an Ascend version (e.g. 24.1.rc1, 7.5.0.2.220, 8.2.RC1)")
    return value.strip()


def _python_version(source, key, value, optional=False):
    if value is None and optional:
        return None
    if not isinstance(value, str) or not _PY_VERSION_RE.match(value.strip()):
        _fail(source, key, f"must be a Python package version string (e.g. 2.6.0, 2.4.0.post2), got {value!r}")
    return value.strip()


def _mapping(source, key, value):
    if not isinstance(value, dict):
        _fail(source, key, f"must be a mapping, got {type(value).__name__}")
    return value


def _unknown(source, prefix, data, allowed):
    extra = sorted(set(data) - set(allowed))
    if extra:
        _fail(source, f"{prefix}{extra[0]}", f"unknown key (known: {', '.join(allowed)})")


def validate_release(data, source="<release>"):
    """Check a parsed release manifest; return it normalised. Raises ReleaseError naming source and key."""
    data = _mapping(source, "(top level)", data)
    _unknown(source, "", data, ("name", "description", "server_model", "host", "cann_python", "image", "packages"))
    name = data.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        _fail(source, "name", f"must be a release name (letters, digits, . _ -), got {name!r}")
    stem = os.path.splitext(os.path.basename(source))[0]
    if source.endswith((".yml", ".yaml")) and stem != name:
        _fail(source, "name", f"{name!r} differs from the file name {stem!r}: name the file <name>.yml")
    model = data.get("server_model")
    if model not in SERVER_MODELS:
        _fail(source, "server_model", f"must be one of {', '.join(SERVER_MODELS)}, got {model!r}")
    host = _mapping(source, "host", data.get("host"))
    _unknown(source, "host.", host, HOST_COMPONENTS)
    out_host = {}
    for key in HOST_COMPONENTS:
        if key not in host:
            _fail(source, f"host.{key}", "missing" + (" (null when not managed)" if key == "mcu" else ""))
        out_host[key] = _ascend_version(source, f"host.{key}", host[key], optional=(key == "mcu"))
    if not versions_equal(out_host["cann_toolkit"], out_host["cann_kernels"]):
        _fail(source, "host.cann_kernels", f"{out_host['cann_kernels']} differs from host.cann_toolkit "
              f"{out_host['cann_toolkit']}: CANN's toolkit and kernels (ops) packages are one version")
    cann_python = _mapping(source, "cann_python", data.get("cann_python"))
    _unknown(source, "cann_python.", cann_python, ("numpy", "protobuf"))
    for key in ("numpy", "protobuf"):
        spec = cann_python.get(key)
        if not isinstance(spec, str) or in_pyrange("1.0", spec) is None:
            _fail(source, f"cann_python.{key}", f"must be a version range such as '>=1.19.2, <2.0', got {spec!r}")
    image = _mapping(source, "image", data.get("image"))
    _unknown(source, "image.", image, ("trainer", "reference", "base", "digest") + IMAGE_KEYS + ("pins",))
    out_image = {"trainer": image.get("trainer", True)}
    if not isinstance(out_image["trainer"], bool):
        _fail(source, "image.trainer", f"must be true or false, got {out_image['trainer']!r}")
    for key in ("reference", "base"):
        value = image.get(key)
        if not isinstance(value, str) or not value.strip() or " " in value.strip():
            _fail(source, f"image.{key}", f"must be an image reference (name:tag), got {value!r}")
        out_image[key] = value.strip()
    # The registry image's digest (optional): nodes that pull it pull name@digest, so a tag moved upstream is
    # never deployed and every node runs the same image.
    digest = image.get("digest")
    if digest is not None and not (isinstance(digest, str) and _DIGEST_RE.match(digest.strip())):
        _fail(source, "image.digest", f"must be the image's registry digest (sha256:<64 hex digits>), got {digest!r}")
    out_image["digest"] = digest.strip() if digest is not None else None
    out_image["cann"] = _ascend_version(source, "image.cann", image.get("cann"), optional=True)
    py = image.get("python")
    if not isinstance(py, str) or not re.match(r"^3\.\d+$", py):
        _fail(source, "image.python", f"must be a Python major.minor such as '3.11', got {py!r}")
    out_image["python"] = py
    for key in ("torch", "deepspeed", "transformers", "numpy", "protobuf"):
        out_image[key] = _python_version(source, f"image.{key}", image.get(key))
    out_image["torch_npu"] = _python_version(source, "image.torch_npu", image.get("torch_npu"), optional=True)
    if (out_image["cann"] is None) != (out_image["torch_npu"] is None):
        _fail(source, "image.torch_npu", "an NPU image names both its CANN and its torch_npu; a CPU image neither")
    pins = image.get("pins") or {}
    _mapping(source, "image.pins", pins)
    for pkg, version in pins.items():
        if str(pkg).lower().replace("_", "-") in IMAGE_KEYS + ("torch-npu",):
            _fail(source, f"image.pins.{pkg}", f"set image.{pkg} instead")
        _python_version(source, f"image.pins.{pkg}", version)
    out_image["pins"] = {str(k): str(v) for k, v in pins.items()}
    return {"name": name, "description": str(data.get("description") or ""), "server_model": model,
            "host": out_host, "cann_python": {k: cann_python[k] for k in ("numpy", "protobuf")},
            "image": out_image, "packages": _package_pins(source, data.get("packages")), "file": source}


def _package_pins(source, pins):
    """``packages``: {vendor package file name: its sha256}, pinned by the release (optional). The packages
    checks refuse a manifest or a package file that disagrees, so a mirror serving the manifest and the packages
    from one place cannot swap both."""
    if pins is None:
        return {}
    _mapping(source, "packages", pins)
    out = {}
    for file_name, digest in pins.items():
        name = str(file_name)
        if not name or "/" in name or name != name.strip() or any(ord(c) < 32 for c in name):
            _fail(source, f"packages.{name}", "must be a package file name (no directory), e.g. "
                  "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run")
        text = str(digest or "").strip().lower()
        if not _SHA256_RE.match(text):
            _fail(source, f"packages.{name}", f"must be the package's sha256 (64 hex digits), got {digest!r}")
        out[name] = text
    return out


def validate_table(data, source="<table>"):
    """Check the torch_npu table; return its ``pairs`` (each ``{torch_npu, torch, cann: [...]}``)."""
    data = _mapping(source, "(top level)", data)
    if not isinstance(data.get("source"), str) or not data["source"].strip():
        _fail(source, "source", "name where the table comes from (Ascend/pytorch's compatibility list)")
    pairs = data.get("pairs")
    if not isinstance(pairs, list) or not pairs:
        _fail(source, "pairs", "must be a non-empty list")
    seen = set()
    out = []
    for i, row in enumerate(pairs):
        row = _mapping(source, f"pairs[{i}]", row)
        npu = _python_version(source, f"pairs[{i}].torch_npu", row.get("torch_npu"))
        torch = _python_version(source, f"pairs[{i}].torch", row.get("torch"))
        cann = row.get("cann")
        if not isinstance(cann, list) or not cann:
            _fail(source, f"pairs[{i}].cann", "must be a non-empty list of CANN versions")
        cann = [_ascend_version(source, f"pairs[{i}].cann", c) for c in cann]
        if npu in seen:
            _fail(source, f"pairs[{i}].torch_npu", f"{npu} is listed twice")
        seen.add(npu)
        out.append({"torch_npu": npu, "torch": torch, "cann": cann})
    return {"source": data["source"].strip(), "pairs": out, "file": source}


def _read_yaml(path):
    import yaml

    # libyaml's parser where PyYAML has it (the wheels do): a release is read by every task that
    # templates ascend_release, several times a run.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.load(handle, Loader=loader)  # noqa: S506 - a safe loader, C or Python
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot be read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ReleaseError(f"{path}: not valid YAML ({exc})") from None


def release_path(name_or_path, releases_dir):
    """The manifest file of a release given by name (``releases_dir/<name>.yml``) or by path."""
    text = str(name_or_path or "").strip()
    if not text:
        raise ReleaseError("ascend_release: empty; give a release name (a file in releases/) or a path")
    if os.sep in text or text.endswith((".yml", ".yaml")):
        return text
    path = os.path.join(releases_dir, text + ".yml")
    if not os.path.isfile(path):
        raise ReleaseError(f"ascend_release: no release {text!r} ({path} does not exist); known: "
                           f"{', '.join(list_releases(releases_dir)) or 'none'}")
    return path


def list_releases(releases_dir):
    """Names of the releases in a directory (files ``<name>.yml`` not starting with ``_``)."""
    try:
        names = os.listdir(releases_dir)
    except OSError:
        return []
    return sorted(n[:-4] for n in names if n.endswith(".yml") and not n.startswith("_"))


# Validated releases of this process, by path, with the files' identity (sha256_cache.file_identity):
# a file written since is read again (a run loads a few releases at most: the one installed and an upgrade's target).
_RELEASES = {}


def _identity(path):
    """sha256_cache's rule for an unchanged file (device, inode, size, mtime and ctime); None if absent."""
    try:
        return tuple(file_identity(os.stat(path)))
    except OSError:
        return None


def release_files(name_or_path, releases_dir):
    """(manifest, torch_npu table) of a release: the table next to the manifest, else releases_dir's."""
    path = release_path(name_or_path, releases_dir)
    table_path = os.path.join(os.path.dirname(path) or ".", COMPAT_FILE)
    if not os.path.isfile(table_path):
        table_path = os.path.join(releases_dir, COMPAT_FILE)
    return path, table_path


def load_release(name_or_path, releases_dir):
    """The validated release (plus ``table``: the torch_npu table of ``releases_dir``)."""
    path, table_path = release_files(name_or_path, releases_dir)
    identity = (_identity(path), _identity(table_path))
    kept = _RELEASES.get((path, table_path))
    if None not in identity and kept is not None and kept[0] == identity:
        return copy.deepcopy(kept[1])
    release = validate_release(_read_yaml(path), path)
    release["table"] = validate_table(_read_yaml(table_path), table_path)
    if None not in identity:
        _RELEASES[(path, table_path)] = (identity, copy.deepcopy(release))
    return release


# ------------------------------------------------------------------------------ findings

def finding(host, component, expected, found, rule, msg):
    return {"host": host, "component": component, "expected": expected, "found": found, "rule": rule, "msg": msg}


def check_firmware(host, driver_version, driver_info, firmware_version):
    """The firmware within ``compatible_version_fw`` of the driver's ``version.info``."""
    spec = None
    for key, value in (driver_info or {}).items():
        if key.lower() == "compatible_version_fw":
            spec = str(value).strip()
    rule = "the driver's version.info compatible_version_fw"
    if not firmware_version:
        return []
    if not spec:
        return [finding(host, "firmware", None, firmware_version, rule,
                        f"{host}: firmware {firmware_version}: driver {driver_version}'s version.info declares no "
                        "compatible_version_fw, so the pair cannot be checked")]
    verdict = in_range(firmware_version, spec)
    if verdict is True:
        return []
    if verdict is None:
        return [finding(host, "firmware", spec, firmware_version, rule,
                        f"{host}: firmware {firmware_version}: cannot tell whether it is inside driver "
                        f"{driver_version}'s compatible_version_fw={spec} (a version that does not compare)")]
    return [finding(host, "firmware", spec, firmware_version, rule,
                    f"{host}: firmware {firmware_version} is outside driver {driver_version}'s "
                    f"compatible_version_fw={spec} (version.info): install a firmware in that range with this "
                    "driver, or the driver of the firmware's HDK release")]


def check_driver_for_firmware(host, driver_version, firmware_version, firmware_info):
    """The driver within ``compatible_version_drv`` of the firmware's own ``version.info`` (the other side of
    the pair; a record without that key is not checked)."""
    spec = next((str(v).strip() for k, v in (firmware_info or {}).items() if k.lower() == "compatible_version_drv"),
                None)
    if not spec or not driver_version:
        return []
    rule = "the firmware's version.info compatible_version_drv"
    verdict = in_range(driver_version, spec)
    if verdict is True:
        return []
    if verdict is None:
        return [finding(host, "driver", spec, driver_version, rule,
                        f"{host}: driver {driver_version}: cannot tell whether it is inside firmware "
                        f"{firmware_version}'s compatible_version_drv={spec} (a version that does not compare)")]
    return [finding(host, "driver", spec, driver_version, rule,
                    f"{host}: driver {driver_version} is outside firmware {firmware_version}'s "
                    f"compatible_version_drv={spec} (its version.info): install a driver in that range, or the "
                    "firmware of the driver's HDK release")]


def check_cann_driver(host, cann_version, required, driver_version, what="CANN",
                      driver_label="the installed driver"):
    """The driver within the ``required_package_driver_version`` range of a CANN package (``required``:
    ``{name: range}`` from ``cann_info.parse_required``, or a version.info text/dict). The verdict is
    ``cann_info.driver_fit``'s, the one the cann role's own check (cann_info's compatibility) gives."""
    if isinstance(required, str):
        required = parse_kernels_info(required)["required"]
    elif any(str(k).lower().startswith("required_package_") for k in (required or {})):
        required = parse_required(required)
    spec = (required or {}).get("driver")
    status, sentence = driver_fit(cann_version, spec, driver_version, what, driver_label)
    if status == "ok":
        return []
    fix = {"outside": ": install a driver in that range first, or pick a release whose CANN supports this driver",
           "missing": ": install the NPU driver first (npu_driver stage)",
           "unknown": ""}[status]
    return [finding(host, "driver", spec, driver_version, f"{what} {cann_version}'s required_package_driver_version",
                    f"{host}: {sentence}{fix}")]


def torch_npu_row(table, torch_npu):
    for row in (table or {}).get("pairs", []):
        if same_release(row["torch_npu"], torch_npu):
            return row
    return None


def check_torch_npu(host, image, table):
    """torch_npu paired with the image's torch and CANN per the table."""
    npu, torch, cann = image.get("torch_npu"), image.get("torch"), image.get("cann")
    if not npu:
        return []
    source = (table or {}).get("source", "the torch_npu compatibility table")
    rule = f"torch_npu compatibility table ({source})"
    row = torch_npu_row(table, npu)
    if row is None:
        return [finding(host, "torch_npu", None, npu, rule,
                        f"{host}: torch_npu {npu} is not in the torch_npu compatibility table ({source}): pick a "
                        "listed torch_npu, or add its row from that source")]
    out = []
    if not same_release(row["torch"], torch):
        out.append(finding(host, "torch", row["torch"], torch, rule,
                           f"{host}: torch {torch} does not match torch_npu {npu}, which is built for torch "
                           f"{row['torch']} ({source})"))
    if not any(versions_equal(c, cann) for c in row["cann"]):
        out.append(finding(host, "image CANN", ", ".join(row["cann"]), cann, rule,
                           f"{host}: CANN {cann} is not a CANN of torch_npu {npu} (it pairs with CANN "
                           f"{', '.join(row['cann'])}; {source})"))
    return out


def check_cann_python(host, image, cann_python):
    """The image's numpy and protobuf inside CANN's Python dependency ranges (only an image with CANN)."""
    if not image.get("cann"):
        return []
    out = []
    for pkg in ("numpy", "protobuf"):
        spec, version = (cann_python or {}).get(pkg), image.get(pkg)
        if spec and version and in_pyrange(version, spec) is not True:
            out.append(finding(host, pkg, spec, version, f"CANN {image['cann']}'s Python dependency list",
                               f"{host}: {pkg} {version} is outside CANN {image['cann']}'s range {spec} (CANN's "
                               f"install guide, dependency list): pin {pkg} inside it in the image"))
    return out


def check_trainer_torch(host, image, min_torch="2.6"):
    """The trainer (transformers 5) needs torch >= ``min_torch``; a release may say it has no trainer image."""
    if not image.get("trainer", True):
        return []
    try:
        ok = _pyver(image["torch"]).release[:2] >= _pyver(min_torch).release[:2]
    except ValueError:
        ok = False
    if ok:
        return []
    return [finding(host, "torch", f">={min_torch}", image.get("torch"), "the trainer's pins (transformers 5)",
                    f"{host}: torch {image.get('torch')} is older than {min_torch}, which the trainer's "
                    f"transformers 5 needs: pick a CANN that torch_npu pairs with torch >= {min_torch} "
                    "(8.2.RC1 or later)")]


def check_release(release, host="release"):
    """Every rule that a release manifest can be checked against on its own."""
    image = release["image"]
    name = f"{host} ({release['name']})" if host == "release" else host
    return (check_torch_npu(name, image, release.get("table"))
            + check_cann_python(name, image, release["cann_python"])
            + check_trainer_torch(name, image))


def check_nodes_agree(end_versions):
    """Nodes that would end on different versions: ``{host: {component: version}}`` -> one finding per
    component whose hosts disagree (``host`` of the finding lists every host with its version)."""
    out = []
    components = sorted({c for versions in (end_versions or {}).values() for c in (versions or {})})
    for comp in components:
        groups = {}
        for host in sorted(end_versions):
            version = (end_versions[host] or {}).get(comp)
            key = None
            for seen in groups:
                if versions_equal(seen, version):
                    key = seen
            groups.setdefault(key if key is not None else version, []).append(host)
        if len(groups) > 1:
            parts = "; ".join(f"{v if v is not None else 'none'} on {', '.join(h)}" for v, h in groups.items())
            out.append(finding(", ".join(sorted(end_versions)), comp, None, parts,
                               "one version on every node (HCCL EI0008: CANN versions differ between nodes)",
                               f"{comp} would differ between nodes: {parts}; run on every node (no --limit) or "
                               "finish the failed batch first"))
    return out


# Components every node of one job must carry at the same version (driver and CANN: HCCL connects the
# nodes' CANN runtimes, and each CANN declares the drivers it runs on).
AGREE_COMPONENTS = ("driver", "cann_toolkit", "cann_kernels")
AGREE_RULE = "one driver and CANN version on every node of a job (HCCL: CANN versions must not differ between nodes)"
# The role variable a site sets to leave the release for one component.
SETTINGS = {"driver": "npu_driver_version", "firmware": "npu_driver_firmware_version", "cann_toolkit": "cann_version",
            "cann_kernels": "cann_version", "docker_runtime": "container_runtime_ascend_runtime_version"}


def run_end(release, overrides=None):
    """``{component: version}`` a node of this run ends on: the release's host versions, with the versions the
    site set itself (``overrides``: ``{component: version}``, empty values ignored)."""
    out = {k: v for k, v in release["host"].items() if v is not None}
    out.update({k: str(v) for k, v in (overrides or {}).items() if v not in (None, "")})
    return out


def check_run_agrees(ends, release_name, components=AGREE_COMPONENTS):
    """The nodes of this run would end on different versions (a version set for some nodes only):
    ``ends``: ``{host: {component: version}}``."""
    out = []
    for comp in components:
        groups = {}
        for host in sorted(ends or {}):
            version = (ends[host] or {}).get(comp)
            key = next((seen for seen in groups if versions_equal(seen, version)), version)
            groups.setdefault(key, []).append(host)
        if len(groups) > 1:
            parts = "; ".join(f"{v if v is not None else 'none'} on {', '.join(h)}" for v, h in groups.items())
            setting = SETTINGS.get(comp, comp)
            out.append(finding(", ".join(sorted(ends)), comp, None, parts, AGREE_RULE,
                               f"{comp} would differ between the nodes of this run: {parts} (release "
                               f"{release_name}, {setting} set for some nodes only; {AGREE_RULE}): set {setting} "
                               "for every node or for none"))
    return out


def check_left_out(installed, ends, release_name, components=AGREE_COMPONENTS):
    """Nodes outside this run (``--limit``) that carry another driver/CANN than the nodes of this run end on.
    ``installed``: ``{host: {component: version}}`` of the nodes left out (None: nothing installed, which is
    not a different version); ``ends``: ``{host: {component: version}}`` of the nodes of this run."""
    out = []
    for host in sorted(installed or {}):
        for comp in components:
            have = (installed[host] or {}).get(comp)
            wants = []
            for versions in (ends or {}).values():
                want = (versions or {}).get(comp)
                if want and not any(versions_equal(w, want) for w in wants):
                    wants.append(want)
            if not have or not wants or any(versions_equal(have, w) for w in wants):
                continue
            want_text = " / ".join(wants)
            out.append(finding(host, comp, want_text, have, AGREE_RULE,
                               f"{host}: {comp} {have} is installed there (outside this run: --limit) but the nodes "
                               f"of this run end on {comp} {want_text} (release {release_name}); {AGREE_RULE}: run "
                               f"on every node (add {host} to --limit), or bring {host} to {want_text} first"))
    return out


def installed_from_cann_info(result):
    """``{driver, cann_toolkit, cann_kernels}`` installed, from a cann_info result (install records only)."""
    active = (result or {}).get("active") or {}
    return {"driver": (result or {}).get("driver_version"),
            "cann_toolkit": active.get("version") if active.get("installed") else None,
            "cann_kernels": ((active.get("kernels") or {}).get("version")
                             if (active.get("kernels") or {}).get("installed") else None)}


def _declares_fw(info):
    return any(str(k).lower() == "compatible_version_fw" for k in (info or {}))


def check_end_state(host, end, driver, firmware, kernels, package=None, driver_package=None):
    """The versions a node of this run ends on against the vendor's records it has now: ``end``
    (``{component: version}``, run_end); ``driver``: ``{version, info}`` installed (its version.info);
    ``firmware``: ``{version, info}`` installed (its version.info; the end driver must be inside its
    ``compatible_version_drv`` when the node keeps that firmware); ``kernels``: ``{version, required}`` of the
    installed CANN kernels.
    The firmware the node ends on within the end driver's compatible_version_fw: the installed driver's record
    when the node keeps that driver, else (``driver_package``: the version.info of the driver package this run
    installs, as text or parsed) the new driver's; a record without that key is not checked. The end driver
    within the required_package_driver_version of the CANN it ends on: the installed one's, or (``package``:
    ``{version, required}`` read from the CANN packages this run installs) the new one's."""
    out = []
    drv_version, drv_info = (driver or {}).get("version"), (driver or {}).get("info") or {}
    if end.get("driver") and end.get("firmware"):
        if drv_version and versions_equal(drv_version, end["driver"]):
            fw_info = drv_info
        elif isinstance(driver_package, str):
            fw_info = parse_key_value(driver_package)
        else:
            fw_info = dict(driver_package or {})
        if _declares_fw(fw_info):
            out += check_firmware(host, end["driver"], fw_info, end["firmware"])
        fw_version, fw_record = (firmware or {}).get("version"), (firmware or {}).get("info") or {}
        if fw_version and versions_equal(fw_version, end["firmware"]):
            out += check_driver_for_firmware(host, end["driver"], fw_version, fw_record)
    k_version = (kernels or {}).get("version")
    cann = end.get("cann_kernels") or end.get("cann_toolkit")
    pkg_version = (package or {}).get("version")
    if cann and end.get("driver"):
        if k_version and versions_equal(k_version, cann):
            required = (kernels or {}).get("required") or {}
        elif pkg_version and versions_equal(pkg_version, cann):
            required = (package or {}).get("required") or {}
        else:
            required = {}
        out += check_cann_driver(host, cann, required, end["driver"], what="CANN",
                                 driver_label="the driver this node ends on")
    return out


def end_versions(installed, expected, hosts_in_run, failed=()):
    """The versions each node would end on: a node the run reaches (and that does not fail) ends on
    ``expected``; a node left out (``--limit``, a later batch) or failed keeps what it has.
    ``installed``: ``{host: {component: version}}``; ``expected``: ``{component: version}`` or
    ``{host: {component: version}}`` (per-host overrides)."""
    out = {}
    reached = set(hosts_in_run or ()) - set(failed or ())
    for host, versions in (installed or {}).items():
        if host in reached:
            want = expected.get(host, {}) if expected and all(isinstance(v, dict) for v in expected.values()) \
                else (expected or {})
            out[host] = dict(versions or {}, **{k: v for k, v in want.items() if v is not None})
        else:
            out[host] = dict(versions or {})
    return out


def image_label(release):
    """The label value (JSON) that embeds a release in the trainer image: the release name, the image's
    versions, its extra pins and (an image with CANN) CANN's numpy/protobuf ranges, which
    payload/check-image-env.py --release checks inside the built image."""
    image = release["image"]
    data = {"release": release["name"]}
    data.update({k: image.get(k) for k in IMAGE_KEYS})
    data["pins"] = dict(image.get("pins") or {})
    data["cann_python"] = dict(release["cann_python"]) if image.get("cann") else {}
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


# The CPU index of PyTorch: torch_npu's install guide takes x86_64 torch from there (+cpu wheels).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def image_build(release, arch="aarch64"):
    """How payload/build-image.sh builds the release's trainer image (nothing is built here):
    ``{image, base, build_args, pins, label}``. ``build_args`` are the Containerfile's ARGs:
    BASE_IMAGE, TORCH_SPEC (torch from its wheel: x86_64 takes the +cpu wheel of PyTorch's CPU
    index, as torch_npu's install guide does), TORCH_NPU_SPEC, PIN_SPECS (pins that replace the lines of
    payload/requirements.txt), TORCH_INDEX_URL and RELEASE_LABEL."""
    image = release["image"]
    if not image["trainer"]:
        raise ReleaseError(f"{release.get('file', release['name'])}: image.trainer: release {release['name']} has "
                           "no trainer image (its torch is older than the trainer needs); pick another release")
    torch = image["torch"]
    extra_index = ""
    if image["torch_npu"] and arch == "x86_64" and "+" not in torch:
        torch, extra_index = torch + "+cpu", TORCH_CPU_INDEX
    pins = {k: image[k] for k in ("deepspeed", "transformers", "numpy", "protobuf")}
    pins.update(image.get("pins") or {})
    label = image_label(release)
    args = {
        "BASE_IMAGE": image["base"],
        "PYTHON": "python3",
        "TORCH_SPEC": f"torch=={torch}",
        "TORCH_NPU_SPEC": f"torch-npu=={image['torch_npu']}" if image["torch_npu"] else "",
        "PIN_SPECS": " ".join(f"{k}=={v}" for k, v in sorted(pins.items())),
        "TORCH_INDEX_URL": extra_index,
        "RELEASE_LABEL": label,
    }
    all_pins = dict(pins, torch=torch)
    if image["torch_npu"]:
        all_pins["torch-npu"] = image["torch_npu"]
    return {"image": image["reference"], "base": image["base"], "build_args": args, "pins": all_pins,
            "label": label}


def check_image_label(host, label, release):
    """An image's embedded release (label ``ascendops.release``) against the release."""
    ref = release["image"]["reference"]
    rule = f"image label {IMAGE_LABEL} (written by payload/build-image.sh)"
    if not label:
        return [finding(host, "image label", release["name"], None, rule,
                        f"{host}: image {ref} carries no {IMAGE_LABEL} label: rebuild it with "
                        f"payload/build-image.sh RELEASE={release['name']}")]
    try:
        data = json.loads(label) if isinstance(label, str) else dict(label)
    except (TypeError, ValueError):
        return [finding(host, "image label", release["name"], label, rule,
                        f"{host}: image {ref}'s {IMAGE_LABEL} label is not JSON: {label!r}")]
    out = []
    for key in IMAGE_KEYS + ("release",):
        # Releases that name the same image pins share one image (releases/sim-previous.yml and sim.yml):
        # an image built from the other is this release's image too, so its name alone is no finding.
        if key == "release" and not out and all(k in data for k in IMAGE_KEYS):
            continue
        want = release["name"] if key == "release" else release["image"].get(key)
        have = data.get(key)
        if want is None or have is None or key in ("release", "python"):
            equal = want == have
        elif key == "cann":
            equal = versions_equal(want, have)
        else:  # Python package versions: a local tag (+cpu) aside
            equal = same_release(want, have)
        if not equal:
            out.append(finding(host, f"image {key}", want, have, rule,
                               f"{host}: image {ref} was built with {key} {have} but release {release['name']} "
                               f"names {want}: rebuild the image from this release or pick the release it was "
                               "built from"))
    return out


# ------------------------------------------------------------------------------ installed vs release

def expected_versions(release):
    """``{component: version}`` a node of the release must end on (host components, plus the image)."""
    out = {k: v for k, v in release["host"].items() if v is not None}
    out["image"] = release["name"]
    return out


def compare(host, installed, expected, not_read=()):
    """Rows ``{host, component, installed, expected, status}`` (status ``ok`` | ``mismatch`` |
    ``missing`` | ``not read`` (a component in ``not_read``: the caller has no way to read it on the node,
    e.g. the MCU) | ``unknown`` (nothing expected)), mismatches and missing first, then by component.
    ``installed``/``expected``: ``{component: version or None}``."""
    rows = []
    for comp in sorted(set(installed or {}) | set(expected or {})):
        have, want = (installed or {}).get(comp), (expected or {}).get(comp)
        if want in (None, ""):
            status = "unknown"
        elif comp in (not_read or ()):
            status, have = "not read", None
        elif have in (None, ""):
            status = "missing"
        else:
            status = "ok" if versions_equal(str(have), str(want)) else "mismatch"
        rows.append({"host": host, "component": comp, "installed": have, "expected": want, "status": status})
    order = {"mismatch": 0, "missing": 1, "not read": 2, "unknown": 3, "ok": 4}
    return sorted(rows, key=lambda r: (order[r["status"]], r["component"]))


__all__ = [
    "ReleaseError", "validate_release", "validate_table", "load_release", "list_releases", "release_path",
    "check_firmware", "check_cann_driver", "check_torch_npu", "check_cann_python", "check_trainer_torch",
    "check_release", "check_nodes_agree", "run_end", "check_run_agrees", "check_left_out", "check_end_state",
    "installed_from_cann_info", "check_image_label", "image_label", "expected_versions", "compare", "parse_range",
    "in_pyrange", "same_release",
]
