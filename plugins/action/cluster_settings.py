# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of ascendops.cluster.cluster_settings (documented in plugins/modules/cluster_settings.py): the settings
the user set on every host of a list, checked against the roles' argument specs in one task on the controller,
and named variables resolved in each host's own context.

Why an action: the check was two tasks on every host (validate_argument_spec, then an assert), and playbooks/
plan.yml needed a third (each node's part of the RoCE plan, templated in the host's context). A task on every
host costs a forked worker and the task's variables, which carry the play's host lists: on 1,024 hosts each
such task took about 50 CPU seconds. Here each host's variables are read once (hostvars' raw view: the
inventory, facts, set_fact, -e), the roles' defaults and vars put under them (what the roles bring to the
host's task context), and every value templated in that context; hosts that set the same values share one
argument-spec validation (module_utils/cluster_settings.py).

``checks``: the roles' settings checks (each role's vars/main.yml __<role>_settings_failure: the message of the
first of its checks that fails on the host, '' where all pass), rendered for every host in its own context once
the argument specs passed, in the order given: the first non-empty one is the host's refusal (as when each was
an ``assert`` task on every host, run in that order), and every failing host is reported. playbooks/validate.yml
had one such task per role on every host.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.ascendops.cluster.plugins.module_utils import cluster_settings as cs


def _load(loader, path, trusted):
    """A role's YAML file ({} when absent); templates in it trusted (role defaults and vars are code)."""
    if not os.path.isfile(path):
        return {}
    try:
        data = loader.load_from_file(path, trusted_as_template=trusted)
    except TypeError:  # ansible-core before 2.19: every loaded string is a template already
        data = loader.load_from_file(path)
    return dict(data or {})


def _render(templar, context, host, name, errors, bind=False):
    """``name``'s value in ``context``, rendered; None, with the reason added to ``errors``, where it fails.
    ``bind``: ``templar`` is shared by the hosts (one Jinja environment: its filters and compiled templates are
    looked up once, not once per host) and is given ``context`` first."""
    if bind and templar.available_variables is not context:
        templar.available_variables = context
    try:
        return templar.template(context[name])
    except AnsibleError as exc:
        errors.append(f"{host}: {name} cannot be rendered: {exc}")
        return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(("hosts", "roles", "context_roles", "roles_path", "text_skip", "resolve", "checks"))

    def _role_files(self, roles_path, roles):
        """Each role's argument-spec options (main), and the defaults then vars of all of ``roles``, merged."""
        specs, layer = {}, {}
        for role in roles:
            meta = _load(self._loader, os.path.join(roles_path, role, "meta", "argument_specs.yml"), False)
            specs[role] = dict(((meta.get("argument_specs") or {}).get("main") or {}).get("options") or {})
        for kind in ("defaults", "vars"):
            for role in roles:
                layer.update(_load(self._loader, os.path.join(roles_path, role, kind, "main.yml"), True))
        return specs, layer

    @staticmethod
    def _check(contexts, checks):
        """Each host's first failing check (its message, rendered in the host's context), host by host."""
        msgs = []
        for host, (context, templar, bind) in contexts.items():
            for name in checks:
                if name not in context:
                    msgs.append(f"{host}: the check {name} is not defined (its role is not in context_roles)")
                    break
                errors = []
                text = _render(templar, context, host, name, errors, bind)
                if errors or (text is not None and str(text).strip()):
                    msgs.extend(errors or [str(text).strip()])
                    break
        return msgs

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        hosts = [str(h) for h in (args.get("hosts") or [])]
        roles = [str(r) for r in (args.get("roles") or [])]
        context_roles = list(dict.fromkeys(["ascend", *roles, *[str(r) for r in (args.get("context_roles") or [])]]))
        roles_path = str(args.get("roles_path") or "")
        resolve = [str(n) for n in (args.get("resolve") or [])]
        checks = [str(n) for n in (args.get("checks") or [])]
        skip = [str(s) for s in (args.get("text_skip") or [])]
        if not roles_path or not os.path.isdir(roles_path):
            raise AnsibleError(f"cluster_settings: roles_path {roles_path!r} is not a directory")
        specs, layer = self._role_files(roles_path, context_roles)
        specs = {role: specs[role] for role in roles}
        hostvars = task_vars.get("hostvars")
        if hostvars is None or not hasattr(hostvars, "raw_get"):
            raise AnsibleError("cluster_settings: no hostvars in the task's variables")

        host_values, values, errors, contexts = {}, {}, [], {}
        shared = self._templar.copy_with_new_env(available_variables={})
        for host in hosts:
            raw = hostvars.raw_get(host)
            if not isinstance(raw, dict):
                errors.append(f"{host}: not in the inventory")
                continue
            if host == task_vars.get("inventory_hostname") and all(n in task_vars for n in checks):
                # The host this task runs on: its own task context (play, role and include vars too), as the
                # per-host check read it (a role run alone checks its host this way).
                context, templar, bind = task_vars, self._templar, False
            else:
                context = dict(layer)
                context.update(raw)
                # The checks read hostvars[inventory_hostname] (what the user set, without the defaults).
                context.setdefault("hostvars", hostvars)
                templar, bind = shared, True
            contexts[host] = (context, templar, bind)
            host_values[host] = {role: {name: _render(templar, context, host, name, errors, bind)
                                        for name in spec if name in raw}
                                 for role, spec in specs.items()}
            values[host] = {name: _render(templar, context, host, name, errors, bind)
                            for name in resolve if name in context}
        msgs = errors or cs.settings_problems(specs, host_values, skip)
        if not msgs and checks:
            msgs = self._check(contexts, checks)
        result.update(changed=False, values=values)
        if msgs:
            result.update(failed=True, problems=msgs, msg="\n".join(msgs))
        else:
            result["msg"] = (f"the settings of {', '.join(roles) or 'no role'} pass on {len(hosts)} hosts"
                             + (f", and their checks ({len(checks)})" if checks else ""))
        return result
