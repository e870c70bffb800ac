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
  - It also keeps the Python code Jinja compiles from each template and conditional (ansible-core compiles
    them again in every forked process, about a quarter of their CPU on a no-op C(site.yml)), on disk under
    C($XDG_CACHE_HOME/ascendops/jinja) (C(~/.cache/ascendops/jinja)), keyed by the source, the Python,
    Jinja and ansible-core versions, the template syntax settings and how each filter and test it calls is
    passed its arguments. Compiled code read back renders exactly as a fresh compile. The environment
    variable C(ASCENDOPS_JINJA_CACHE) names another directory, or C(0) turns it off. Past 20000 entries the
    cache is emptied at the end of a run and fills again.
  - When each play starts it freezes the objects that exist then (Python's C(gc.freeze)), so the garbage
    collector of a forked process does not walk them (walking writes to them, and the kernel copies each
    page written). C(ASCENDOPS_GC_FREEZE=0) turns it off.
  - Enable it with C(callbacks_enabled = ascendops.cluster.preload) in C(ansible.cfg) (the repository's
    ansible.cfg does) or C(ANSIBLE_CALLBACKS_ENABLED).
requirements:
  - Enabled in callbacks_enabled (ansible.cfg) or ANSIBLE_CALLBACKS_ENABLED.
"""

import gc  # noqa: E402
import os  # noqa: E402

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


# Past this many kept compiles the cache is emptied (plugin_utils/jinja_code_cache.py prune).
CODE_CACHE_LIMIT = 20000


def _code_cache_directory():
    setting = os.environ.get("ASCENDOPS_JINJA_CACHE", "")
    if setting == "0":
        return None
    from ansible_collections.ascendops.cluster.plugins.plugin_utils import jinja_code_cache

    return setting or jinja_code_cache.default_directory()


def _install_code_cache(display):
    """Jinja's compiled code kept across workers and runs (plugin_utils/jinja_code_cache.py), unless
    ASCENDOPS_JINJA_CACHE is 0 (or names another directory)."""
    try:
        directory = _code_cache_directory()
        if directory is None:
            return
        from ansible import release
        from ansible._internal._templating import _jinja_bits, _jinja_common
        from ansible_collections.ascendops.cluster.plugins.plugin_utils import jinja_code_cache

        def context():
            current = _jinja_bits._TemplateCompileContext.current(optional=True)
            return current.escape_backslashes if current is not None else None

        env_class = _jinja_bits.AnsibleEnvironment
        cache = jinja_code_cache.CodeCache(
            directory, context,
            f"ansible-core {release.__version__} embedded={_jinja_common._TemplateConfig.allow_embedded_templates}")
        if not getattr(env_class, "_ascendops_code_cache", False):
            jinja_code_cache.install(env_class, cache, lambda: not env_class._debuggable_template_source)
            env_class._ascendops_code_cache = True
    except Exception as exc:  # another ansible-core's internals: run without the cache
        display.vvv(f"ascendops.cluster.preload: no Jinja code cache: {exc}")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "ascendops.cluster.preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        _install_code_cache(self._display)
        for loader, name in PRELOAD:
            try:
                loader.get(name)
            except Exception as exc:  # a speed-up only: a failure here must not stop the playbook
                self._display.vvv(f"ascendops.cluster.preload: {name} not preloaded: {exc}")

    def v2_playbook_on_play_start(self, play):
        # Every task of every host runs in a process forked from this one. Objects that exist when a
        # play starts (the inventory, the variables, the loaded plugins and templates) are moved out of
        # the garbage collector's reach: a collection in a forked process no longer walks them, which
        # writes to their memory and makes the kernel copy those pages. They are still freed when no
        # longer referenced. ASCENDOPS_GC_FREEZE=0 leaves the collector as it is.
        if os.environ.get("ASCENDOPS_GC_FREEZE", "1") != "0":
            gc.freeze()

    def v2_playbook_on_stats(self, stats):
        try:
            directory = _code_cache_directory()
            if directory is not None:
                from ansible_collections.ascendops.cluster.plugins.plugin_utils import jinja_code_cache

                jinja_code_cache.prune(directory, CODE_CACHE_LIMIT)
        except Exception as exc:  # the cache only saves time
            self._display.vvv(f"ascendops.cluster.preload: Jinja code cache not pruned: {exc}")
