# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Name, in a refusal, the setting the user wrote: a role variable defaults to a collection-wide
``ascend_*`` one (npu_driver_mirror_url: "{{ ascend_mirror_url }}"), so a message about the role
variable should name whichever of the two the user set."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils import setting_checks as sc


def setting_name(names, host_vars, show_default=True, values=None):
    """The setting of ``names`` (most specific first, e.g. ['cann_package_dir', 'ascend_package_dir'])
    the user set: the first that ``host_vars`` (hostvars[inventory_hostname]: the inventory, -e, facts)
    holds or, with ``values`` (the names' values, same order), whose value differs from the next one's
    (it was set where hostvars cannot see: play, role or include vars). When none is set: the last (the
    collection-wide one), marked as its default unless ``show_default`` is false."""
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise ValueError("setting_name needs at least one variable name")
    values = list(values or [])
    for i, name in enumerate(names):
        try:
            if name in host_vars:
                return name
        except TypeError:
            pass
        if i + 1 < len(values) and i + 1 < len(names) and str(values[i]) != str(values[i + 1]):
            return name
    return f"{names[-1]} (its default)" if show_default else names[-1]


def setting_names(settings, host_vars, values=None, show_default=True):
    """setting_name for several settings at once: {key: [names]} -> {key: name}, with values {key: [values]}."""
    values = values or {}
    return {key: setting_name(names, host_vars, show_default, values.get(key)) for key, names in settings.items()}


def setting_text_problems(settings, skip=()):
    """Messages for every string of {name: value} (at any depth) holding a control character
    (module_utils/setting_checks.py), each naming where; [] when none does."""
    return sc.settings_control_char_problems(dict(settings or {}), skip)


def setting_path_problems(settings, allow_empty=()):
    """Messages for the path settings of {name: path or list of paths} that are relative, /, hold '..' or
    are a system directory itself (module_utils/setting_checks.py); [] when every one is fine."""
    return sc.settings_path_problems(dict(settings or {}), allow_empty)


class FilterModule:
    """Setting name filters."""

    def filters(self):
        return {"setting_name": setting_name, "setting_names": setting_names,
                "setting_text_problems": setting_text_problems, "setting_path_problems": setting_path_problems}
