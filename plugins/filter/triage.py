# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/collect.yml: the cluster's triage summary from what every node's
ascend_collect returned, and its Markdown rendering (summary.json, summary.md)."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils.triage import render_markdown
from ansible_collections.ascendops.cluster.plugins.module_utils.triage import triage as _triage


def triage(nodes):
    """{node: the `triage` record of ascend_collect, or none/empty for a node that was not reached}
    -> {schema, verdict {node, nodes, layer, basis, reason, evidence}, nodes, timeline, codes, layers}."""
    return _triage({str(k): (v or None) for k, v in dict(nodes or {}).items()})


def triage_markdown(summary, title="ascendops triage"):
    """summary.md of a triage summary."""
    return render_markdown(summary, title)


class FilterModule:
    """Log triage filters."""

    def filters(self):
        return {"triage": triage, "triage_markdown": triage_markdown}
