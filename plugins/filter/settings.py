# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Name, in a refusal, the setting the user wrote: a role variable defaults to a collection-wide
``ascend_*`` one (npu_driver_mirror_url: "{{ ascend_mirror_url }}"), so a message about the role
variable should name whichever of the two the inventory (or -e) set."""

from __future__ import annotations


def setting_name(names, host_vars, show_default=True):
    """The first of ``names`` (most specific first, e.g. ['cann_package_dir', 'ascend_package_dir'])
    that ``host_vars`` (hostvars[inventory_hostname]: the inventory, -e and facts, not role defaults)
    holds; when none is set, the last (the collection-wide one), marked as its default."""
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise ValueError("setting_name needs at least one variable name")
    for name in names:
        try:
            if name in host_vars:
                return name
        except TypeError:
            break
    return f"{names[-1]} (its default)" if show_default else names[-1]


class FilterModule:
    """Setting name filters."""

    def filters(self):
        return {"setting_name": setting_name}
