# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for performance baselines (module_utils/baseline.py): record the first measurement of a
cluster, compare later ones against it."""

from __future__ import annotations

from ansible_collections.ascendops.cluster.plugins.module_utils import baseline as _b


def baseline_evaluate(store, kind, current, context=None, warn=0.1, fail=0.3, update=False):
    """{store: the baseline file's new content, result: the comparison} (see module_utils/baseline.py)."""
    new_store, result = _b.evaluate(store, kind, current, context or {}, float(warn), float(fail), bool(update))
    return {"store": new_store, "result": result, "lines": _b.summary_lines(result)}


class FilterModule:
    """Performance baseline filters."""

    def filters(self):
        return {"baseline_evaluate": baseline_evaluate, "collective_metrics": _b.collective_metrics,
                "training_metrics": _b.training_metrics}
