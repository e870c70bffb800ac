# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor packages' sha256sum manifest (``SHA256SUMS``) and the check of a package list against it.

One source for: the manifest's format (``sha256sums``), the package source settings
(``settings_problem``) and what is wrong with the packages a role is to install (``package_problems``).
The ``packages_check`` action (roles/ascend/tasks/packages_validate.yml) reads the files and the mirror
and calls these; the ``sha256sums`` filter is this parser too. Standard library only.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^(?P<digest>[0-9a-fA-F]{64}) [ *](?P<name>\S.*)$")

SOURCES = ("controller", "mirror")


def sha256sums(text):
    """Parse `sha256sum` output (`<hex>  <file>` or `<hex> *<file>` lines) into {file: digest}.

    Blank lines and `#` comments are skipped; a malformed line or a file listed twice with two
    different digests raises ValueError naming the line, so a damaged manifest is never half-trusted.
    """
    if text is None:
        raise ValueError("sha256sums: manifest is empty")
    result = {}
    for number, raw in enumerate(str(text).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise ValueError(f"sha256sums: line {number} is not '<sha256>  <file>': {raw!r}")
        name = match.group("name").split("/")[-1]
        digest = match.group("digest").lower()
        if result.get(name, digest) != digest:
            raise ValueError(f"sha256sums: {name} is listed twice with different digests")
        result[name] = digest
    return result


def settings_ok(source, mirror_url, manifest):
    """Whether the package source settings can be used at all (no file read)."""
    return source in SOURCES and (source != "mirror" or bool(mirror_url)) and bool(manifest)


def settings_problem(host, source, mirror_url, names, set_names):
    """The refusal of unusable package source settings, naming the settings as the user wrote them.

    ``names``: {package_source, mirror_url, package_manifest: the setting the user wrote, a default marked};
    ``set_names``: the same without the marker (what to set)."""
    if source not in SOURCES:
        return (f"{host}: {names['package_source']} is '{source}': set it to controller (packages in a directory "
                "on the controller) or mirror (an HTTP(S) directory).")
    if source == "mirror" and not mirror_url:
        return (f"{host}: {names['package_source']} is mirror but {names['mirror_url']} is empty: set "
                f"{set_names['mirror_url']} to the mirror's base URL (or {set_names['package_source']}: controller).")
    return f"{host}: {names['package_manifest']} is empty: name the sha256sum manifest (SHA256SUMS)."


def package_problems(host, packages, settings, manifest_sums, reads, where, arch, pins=None):
    """What is wrong with ``packages`` (file names), one message each (empty: all good).

    ``pins``: {file: sha256} the release pins (``packages`` of releases/<name>.yml), with ``where['release']``
    naming it: a package whose manifest entry, or whose file on the controller, has another sha256 is refused
    naming both sums (the manifest and the packages of a mirror come from one place; the pin does not).

    ``settings``: {file: the setting that chose it} for messages; ``manifest_sums``: the manifest read;
    ``reads``: None for a mirror (the nodes fetch and check each package), else one entry per package in
    order: {path, exists, sha256, link_target} (link_target: where a dangling symbolic link points);
    ``where``: {manifest, location: the directory or URL it came from, dir_name: a function giving the directory
    setting as the user wrote it, called only for a problem with a file}; ``arch``: the node's architecture."""
    out = []
    named = None
    for i, item in enumerate(packages):
        setting = (settings or {}).get(item, "")
        if item not in manifest_sums:
            out.append(f"{host}: {item} ({setting + ', ' if setting else ''}architecture {arch}) is not listed in "
                       f"{where['manifest']} of {where['location']}. Add the package and its sha256 there, or set the "
                       "version to one that is.")
            continue
        pin = (pins or {}).get(item)
        if pin and manifest_sums[item] != pin:
            release = where.get("release") or "(ascend_release)"
            out.append(f"{host}: {item} is listed in {where['manifest']} of {where['location']} with sha256 "
                       f"{manifest_sums[item]}, but the release {release} pins {pin} "
                       "(its packages key). The package or the manifest is not the one the release was tested with: "
                       "fetch both again from the vendor, or fix the pin in the release file.")
            continue
        if reads is None:
            continue
        read = reads[i]
        path = read["path"]
        if read["exists"] and read["sha256"] == manifest_sums[item]:
            continue
        named = named or where["dir_name"]()
        if not read["exists"] and read.get("link_target"):
            out.append(f"{host}: {path} ({named}) is a symbolic link to {read['link_target']}, which does not exist "
                       f"(a dangling link). Point the link at the package file (ln -sfn /path/to/{item} {path}), "
                       "or put the package itself there.")
        elif not read["exists"]:
            out.append(f"{host}: {path} ({named}) is missing. Fetch the package again (or fix {where['manifest']}).")
        else:
            out.append(f"{host}: {path} ({named}) is corrupt: its sha256 is {read['sha256']}, the manifest says "
                       f"{manifest_sums[item]}. Fetch the package again (or fix {where['manifest']}).")
    return out


def missing_manifest_problem(host, package_dir, manifest, dir_exists, names, set_names):
    """The refusal of a controller package directory without its manifest (or not there at all)."""
    what = (f"that directory holds no {manifest} ({set_names['package_manifest']})" if dir_exists
            else "that directory is not on the controller")
    return (f"{host}: {names['package_dir']} is {package_dir}, but {what}. Put the .run packages and their sha256sum "
            f"manifest there (sha256sum *.run > {manifest}), or set {set_names['package_dir']} to the directory that "
            f"holds them (or {set_names['package_source']}: mirror with {set_names['mirror_url']}).")
