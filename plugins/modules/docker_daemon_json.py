#!/usr/bin/python
# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: docker_daemon_json
short_description: Merge settings into Docker's daemon.json without clobbering the site's other keys
version_added: "0.1.0"
description:
  - Reads C(/etc/docker/daemon.json) (or O(path)), merges O(settings) into it and writes it back
    only when the parsed content changes. Keys not named in O(settings) stay as they are.
  - A mapping value over a mapping in the file is merged key by key (C(runtimes) keeps the site's
    other runtimes); any other value replaces the file's value (lists are replaced whole); a
    null value removes the key.
  - The comparison is on the parsed JSON, so a file that says the same with other spacing or key
    order is left untouched (and a handler that restarts the engine is not notified).
  - A file that is not a JSON object is refused and left alone.
  - "What the change needs: RV(restart_required) is true when a changed key is one dockerd does not
    apply on a reload (C(systemctl reload docker)); C(live-restore), C(runtimes), C(default-runtime),
    C(labels), C(registry-mirrors) and the other reloadable keys need only a reload."
author:
  - ascendops engineering (@ascendops)
extends_documentation_fragment:
  - ascendops.cluster.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  path:
    description: The daemon.json file. Its directory is created (mode 0755) when missing.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description: daemon.json keys to set (null removes a key).
    type: dict
    required: true
  backup:
    description: Keep a timestamped copy of the file before changing it.
    type: bool
    default: false
  mode:
    description:
      - Permissions of the file. Unset keeps an existing file's mode, and a new file gets C(0600),
        the mode the Ascend Docker Runtime installer leaves it with.
    type: raw
seealso:
  - name: dockerd daemon configuration file
    description: The keys daemon.json accepts.
    link: https://docs.docker.com/reference/cli/dockerd/#daemon-configuration-file
"""

EXAMPLES = r"""
- name: Ascend runtime as the default, log rotation, a site key left alone
  ascendops.cluster.docker_daemon_json:
    settings:
      runtimes:
        ascend:
          path: /usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime
          runtimeArgs: []
      default-runtime: ascend
      log-driver: json-file
      log-opts: {max-size: 100m, max-file: "5"}
  register: daemon

- name: Restart docker only for keys a reload does not apply
  ansible.builtin.systemd_service:
    name: docker
    state: "{{ 'restarted' if daemon.restart_required else 'reloaded' }}"
  when: daemon.changed

- name: Drop a key the site no longer wants
  ascendops.cluster.docker_daemon_json:
    settings:
      registry-mirrors: null
"""

RETURN = r"""
changed:
  description: Whether the file changed (or would, in check mode).
  returned: always
  type: bool
config:
  description: The file's content after the merge.
  returned: always
  type: dict
  sample: {"default-runtime": "ascend", "bip": "172.30.0.1/16"}
path:
  description: The file.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
changed_keys:
  description: Top-level keys the merge adds, changes or removes.
  returned: always
  type: list
  elements: str
  sample: [live-restore, log-opts]
restart_required:
  description: A changed key needs an engine restart (a reload does not apply it).
  returned: always
  type: bool
backup_file:
  description: The backup copy, when O(backup) made one.
  returned: when a backup was made
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.docker_daemon_json import (  # noqa: E402
    DEFAULT_PATH,
    DaemonJsonTask,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default=DEFAULT_PATH),
            settings=dict(type="dict", required=True),
            backup=dict(type="bool", default=False),
            mode=dict(type="raw"),
        ),
        supports_check_mode=True,
    )
    DaemonJsonTask(module).run()


if __name__ == "__main__":
    main()
