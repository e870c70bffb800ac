#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: docker_archive_info
short_description: Read the image ID and tags of a container image archive (docker save format)
version_added: "0.1.0"
description:
  - Reads C(manifest.json) of an image archive written by C(docker save) or C(podman save) (what
    C(docker load) reads) and returns the image ID Docker gives the loaded image (C(sha256:) + the
    SHA-256 of its config) and its tags, without a container engine.
  - Run it where the archive is (the controller, with C(delegate_to)) to know before copying
    whether a node already holds the image.
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Read-only; it runs the same in check mode.
  diff_mode:
    support: none
options:
  path:
    description: The archive (tar, optionally compressed).
    type: path
    required: true
  image:
    description:
      - The image reference wanted (C(name:tag)); the task fails when the archive does not hold it.
      - Optional when the archive holds one image.
    type: str
"""

EXAMPLES = r"""
- name: Image ID of the trainer archive on the controller
  ascendops.cluster.docker_archive_info:
    path: /srv/images/ascendops-trainer.tar
    image: localhost/ascendops-trainer:latest
  delegate_to: localhost
  run_once: true
  register: trainer_archive
"""

RETURN = r"""
id:
  description: Image ID of the wanted image (C(sha256:<hex>)).
  returned: success
  type: str
  sample: sha256:4b825dc642cb6eb9a060e54bf8d69288fbee4904
repo_tags:
  description: Tags of the wanted image.
  returned: success
  type: list
  elements: str
  sample: [localhost/ascendops-trainer:latest]
labels:
  description: Labels of the wanted image (its config's C(Labels)), e.g. C(ascendops.release).
  returned: success
  type: dict
  sample: {ascendops.release: '{"release":"sim","cann":null}'}
images:
  description: Every image in the archive (C(id), C(repo_tags), C(layers), C(labels)).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.docker_archive import DockerArchiveInfo  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            image=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    DockerArchiveInfo(module).run()


if __name__ == "__main__":
    main()
