#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: docker_tag_drift
short_description: Report a registry tag that moved away from the image a node holds under it (never pulls)
version_added: "0.1.0"
description:
  - Compares the digest the node's image was pulled by (its C(RepoDigests) for the image's repository) with the
    digest the registry now serves for the same C(name:tag), and reports a difference. Nothing is pulled, tagged
    or removed; the registry is only asked for the tag's manifest descriptor.
  - Both are read through the Docker Engine API on the engine's socket, C(GET /images/<name:tag>/json) and
    C(GET /distribution/<name:tag>/json) (Engine API 1.30+, Docker 17.06 and later, openEuler's docker-engine
    18.09 included), so no CLI plugin (buildx) or skopeo is needed and the engine's own registry settings
    (mirrors, proxy, certificates) apply. For a multi-arch tag both sides hold the digest of the index.
  - An image that records no digest of that repository (loaded from an archive, built on the node) cannot be
    compared - RV(state=unknown), not drift - and the registry is not asked.
  - A moved tag is a change in check mode (with a diff, before the node's digest, after the registry's), so a
    C(--check --diff) run and C(ascendops drift) list it; in a normal run it is a warning naming the node, the
    image, both digests and the fix, and the task is not changed.
  - An engine or registry that cannot be asked (no network, refused credentials, unknown tag) is a warning, never
    a failure - RV(state=unreachable).
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Read-only in both modes; check mode reports a moved tag as a change, a run as a warning.
  diff_mode:
    support: full
options:
  image:
    description: The image reference the node holds and the registry serves, C(name:tag).
    type: str
    required: true
  docker_host:
    description: The engine's API socket, C(unix:///path) (the only form supported).
    type: str
    default: unix:///var/run/docker.sock
  registry:
    description: Registry C(host[:port]) the credentials are for.
    type: str
    default: ""
  username:
    description: Registry user; empty asks anonymously. Sent to the engine with the request only, never stored.
    type: str
    default: ""
  password:
    description: Registry password (Ansible Vault).
    type: str
    default: ""
  timeout:
    description: Seconds to wait for the engine's answer (the engine waits for the registry).
    type: int
    default: 30
  node:
    description: The node's inventory name, for messages.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Report a trainer tag moved upstream (a warning; a change in --check)
  ascendops.cluster.docker_tag_drift:
    image: registry.example.com/ascendops/trainer:910b-cann8.2.rc1
    registry: registry.example.com
    username: "{{ vault_registry_user }}"
    password: "{{ vault_registry_password }}"
    node: "{{ inventory_hostname }}"
"""

RETURN = r"""
state:
  description:
    - C(same) the registry serves a digest the node's image was pulled by; C(moved) it serves another;
      C(unknown) the node's image records no digest of the repository (cannot tell); C(absent) the node holds no
      image under the name; C(unreachable) the engine or the registry could not be asked (see RV(msg)).
  returned: always
  type: str
  sample: moved
image:
  description: The image reference compared.
  returned: always
  type: str
  sample: registry.example.com/ascendops/trainer:910b-cann8.2.rc1
local_digests:
  description: The digests of the image's repository the node's image was pulled by.
  returned: always
  type: list
  elements: str
  sample: [sha256:8b5e5b1ab9b6ce5b7bb1ae2d18ad3d1c7a6f2ea3cb5a6d7c3b3a6c0b5c3d2e1f]
remote_digest:
  description: The registry's digest of the tag (an index's for a multi-arch tag); null when not read.
  returned: always
  type: str
  sample: sha256:0a3e6a3fb6d4c4f2a0c2b6b1f5d1e6a9c4b4e2f7d3c1a5b6e8f9a0b1c2d3e4f5
msg:
  description: What was found, naming the node and the image; for C(moved) both digests and the fix.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.image_digest import (  # noqa: E402
    DEFAULT_DOCKER_HOST,
    TagDrift,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            docker_host=dict(type="str", default=DEFAULT_DOCKER_HOST),
            registry=dict(type="str", default=""),
            username=dict(type="str", default=""),
            password=dict(type="str", default="", no_log=True),
            timeout=dict(type="int", default=30),
            node=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    TagDrift(module).run()


if __name__ == "__main__":
    main()
