# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
version_added: "0.1.0"
short_description: Load the filter and test plugins once on the controller, before any task runs
description:
  - ansible-playbook runs every task of every host in a process forked from the controller's main
    process. A filter or test plugin that the main process has not imported is imported again in each
    of those processes, from source (collection plugins have no bytecode cache), every time a task uses
    one.
  - Looking up one of this collection's filters imports every filter file of the collection and the
    module_utils they use, so each task that uses one paid for all of them (about 0.13 s a task on a
    2-core controller, a quarter of a no-op C(site.yml) run).
  - This callback imports them in the main process when the playbook starts, so every forked process
    starts with them loaded. It changes no output and no result.
  - Enable it with C(callbacks_enabled = ascendops.cluster.preload) in C(ansible.cfg) (the repository's
    ansible.cfg does) or C(ANSIBLE_CALLBACKS_ENABLED).
requirements:
  - Enabled in callbacks_enabled (ansible.cfg) or ANSIBLE_CALLBACKS_ENABLED.
"""

from ansible.plugins.callback import CallbackBase  # noqa: E402
from ansible.plugins.loader import filter_loader, test_loader  # noqa: E402

# One name from each set of Jinja plugins the roles use. A lookup of a collection's filter loads every
# filter file of that collection (ansible-core's Jinja2Loader reads them all to find the name); a
# lookup of a builtin one loads the builtin filter (or test) files.
PRELOAD = (
    (filter_loader, "ansible.builtin.to_json"),
    (test_loader, "ansible.builtin.version"),
    (filter_loader, "ascendops.cluster.path_is"),
)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "ascendops.cluster.preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        for loader, name in PRELOAD:
            try:
                loader.get(name)
            except Exception as exc:  # a speed-up only: a failure here must not stop the playbook
                self._display.vvv(f"ascendops.cluster.preload: {name} not preloaded: {exc}")
