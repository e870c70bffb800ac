# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of ascendops.cluster.packages_check (documented in plugins/modules/packages_check.py): the package
source settings, the manifest and every package's sha256, checked in one task on the controller."""

from __future__ import annotations

import os

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible_collections.ascendops.cluster.plugins.filter.packages import (
    package_setting_names,
    package_settings_ok,
    package_settings_problem,
)
from ansible_collections.ascendops.cluster.plugins.module_utils import package_manifest as pm
from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import Sha256Cache, default_cache_file


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("packages", "package_settings", "source", "package_dir", "mirror_url", "manifest",
                             "var_prefix", "defaults", "architecture", "read", "cache_file", "pins",
                             "release"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        host = task_vars.get("inventory_hostname", "localhost")
        source = str(args.get("source") or "")
        package_dir = str(args.get("package_dir") or "")
        mirror_url = str(args.get("mirror_url") or "").rstrip("/")
        manifest = str(args.get("manifest") or "")
        own = {"package_source": source, "package_dir": package_dir, "mirror_url": mirror_url,
               "package_manifest": manifest}
        result.update(changed=False, sums={})

        # [the caller's value, the collection-wide one]: a caller's value that differs was set somewhere.
        defaults = dict(args.get("defaults") or {})
        values = {key: [own[key], str(defaults.get(key, own[key]) or "")] for key in own}

        def host_vars():
            # Only on a refusal: naming the settings as the user wrote them reads the host's variables.
            return (task_vars.get("hostvars") or {}).get(host, {})

        def names(show_default=True):
            return package_setting_names(values, host_vars(), args.get("var_prefix"), show_default)

        # The roles' settings checks refuse the same first (vars/main.yml __<role>_packages_problem), on the
        # controller for every host at once in playbooks/validate.yml; this task checks a role run alone too.
        if not package_settings_ok(values):
            return self._fail(result, package_settings_problem(values, host_vars(), host, args.get("var_prefix")))
        if not boolean(args.get("read", True), strict=False):
            return result
        packages = args.get("packages")
        if not isinstance(packages, list):
            return self._fail(result, f"{host}: packages_validate.yml needs __common_packages, a list of package "
                                      "file names.")
        packages = [str(p) for p in packages]
        # A refusal names the directory setting as the user wrote it (read only then).
        where = {"manifest": manifest, "location": mirror_url if source == "mirror" else package_dir,
                 "dir_name": lambda: names()["package_dir"], "release": str(args.get("release") or "")}
        pins = args.get("pins") or {}
        if not isinstance(pins, dict):
            return self._fail(result, f"{host}: the release's packages (pins) must map file names to sha256s.")
        pins = {str(k): str(v).strip().lower() for k, v in pins.items()}
        if source == "mirror":
            url = f"{mirror_url}/{manifest}"
            read = self._execute_module(module_name="ansible.builtin.uri", task_vars=task_vars,
                                        module_args={"url": url, "return_content": True})
            if read.get("failed"):
                return self._fail(result, f"{host}: cannot read the package manifest {url} ({names()['mirror_url']}): "
                                  f"{read.get('msg', 'failed')}")
            text, reads = read.get("content", ""), None
        else:
            path = os.path.join(package_dir, manifest)
            if not (os.path.isdir(package_dir) and os.path.isfile(path)):
                problem = pm.missing_manifest_problem(host, package_dir, manifest, os.path.isdir(package_dir),
                                                      names(), names(False))
                return self._fail(result, problem)
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            try:
                reads = self._hash(packages, package_dir, args.get("cache_file"))
            except OSError as exc:
                return self._fail(result, f"{host}: cannot read {exc.filename} ({names()['package_dir']}): "
                                          f"{exc.strerror}")
        try:
            sums = pm.sha256sums(text)
        except ValueError as exc:
            return self._fail(result, f"{host}: {manifest} of {where['location']} cannot be read: {exc}")
        problems = pm.package_problems(host, packages, args.get("package_settings") or {}, sums, reads, where,
                                       args.get("architecture") or "unknown", pins)
        if problems:
            return self._fail(result, " | ".join(problems))
        result["sums"] = {name: sums[name] for name in packages if name in sums}
        return result

    @staticmethod
    def _fail(result, msg):
        result.update(failed=True, msg=msg)
        return result

    @staticmethod
    def _hash(packages, package_dir, cache_file):
        """exists and sha256 of each package (kept in the controller's sha256 cache while unchanged); where a
        dangling symbolic link points."""
        cache = Sha256Cache(default_cache_file() if cache_file is None else cache_file)
        reads = []
        try:
            for name in packages:
                path = os.path.join(package_dir, name)
                read = dict(cache.digest(path))
                read["path"] = path
                read["link_target"] = os.path.realpath(path) if not read["exists"] and os.path.islink(path) else ""
                reads.append(read)
        finally:
            cache.save()
        return reads
