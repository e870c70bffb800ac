#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: packages_check
short_description: Check vendor packages against their sha256sum manifest, on the controller, in one task
version_added: "0.1.0"
description:
  - Checks the package source settings, reads the sha256sum manifest (from O(package_dir) on the controller,
    or from O(mirror_url) through the node, as M(ansible.builtin.uri) would) and, for a controller source,
    every package's SHA-256, kept in the controller's sha256 cache while a file is unchanged (gigabytes are
    not read again on a re-run).
  - Fails, naming the host, each package, the setting the user wrote and the fix, when a setting is unusable, the
    manifest is missing or malformed, a package is not listed in it, its manifest entry differs from the sha256
    the release pins (O(pins)), or a package is missing, a dangling link or corrupt. Returns the manifest's
    digests of the packages otherwise. Changes nothing.
  - An action plugin; it runs on the controller (a mirror's manifest is read by the node).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  packages:
    description: The package file names to check (needed with O(read)).
    type: list
    elements: str
  package_settings:
    description: "For messages: C({file: the setting that chose it}), e.g. C(cann_version 8.0.0)."
    type: dict
    default: {}
  source:
    description: Where the packages are, C(controller) or C(mirror) (the caller's package_source setting).
    type: str
    required: true
  package_dir:
    description: The directory on the controller that holds the packages and the manifest.
    type: path
  mirror_url:
    description: The mirror's base URL (with O(source=mirror)).
    type: str
  manifest:
    description: The manifest's file name (sha256sum output), e.g. C(SHA256SUMS).
    type: str
    required: true
  var_prefix:
    description:
      - The caller's variable prefix, to name its settings in messages (C(npu_driver) names C(npu_driver_package_dir)).
    type: str
    default: ascend
  defaults:
    description:
      - The collection-wide values (keys C(package_source), C(package_dir), C(mirror_url), C(package_manifest)).
      - A message names the role's variable where it differs from these, else the collection-wide C(ascend_*) one.
    type: dict
    default: {}
  architecture:
    description: The node's architecture, for messages about a package missing from the manifest.
    type: str
    default: unknown
  read:
    description: Read the manifest and the packages; false checks the settings only.
    type: bool
    default: true
  cache_file:
    description: The controller's sha256 cache; default C($XDG_CACHE_HOME/ascendops/sha256.json); empty keeps nothing.
    type: str
  pins:
    description:
      - "C({file: sha256}) the release pins (the C(packages) key of C(releases/<name>.yml)). A package whose entry in
        the manifest differs from its pin is refused naming both sums, whatever the source: a mirror serves the
        manifest and the packages from one place, the release file comes with the collection."
    type: dict
    default: {}
  release:
    description: The release's name, for messages about a pin.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Packages | Check the packages against the manifest
  ascendops.cluster.packages_check:
    packages: [Ascend-hdk-910b-npu-driver_24.1.0_linux-aarch64.run]
    source: controller
    package_dir: /srv/ascend/packages
    manifest: SHA256SUMS
  register: checked
"""

RETURN = r"""
sums:
  description: "The manifest's SHA-256 of each package, C({file: digest}) (empty with O(read=false))."
  returned: success
  type: dict
"""
