"""Performance baselines (module_utils/baseline.py and its filters): first measurement recorded,
later ones compared with warn/fail tolerances, only drops count, context changes shown."""

from __future__ import annotations

import pytest
from ansible_collections.ascendops.cluster.plugins.filter.baseline import FilterModule
from ansible_collections.ascendops.cluster.plugins.module_utils import baseline as b

REPORT = {"world_size": 16, "results": [
    {"size_bytes": 8192, "bus_bandwidth_gbs": 1.5, "check_result": "success"},
    {"size_bytes": 16777216, "bus_bandwidth_gbs": 180.0, "check_result": "success"},
    {"size_bytes": 1048576, "bus_bandwidth_gbs": 50.0, "check_result": "fail"}]}
CTX = {"driver": "24.1.rc1", "cann": "8.2.RC1", "world_size": 16}


def test_collective_metrics_keep_passed_sizes_only():
    assert b.collective_metrics(REPORT) == {"8192": 1.5, "16777216": 180.0}
    assert b.collective_metrics({}) == {}


def test_training_metrics_mean_over_nodes():
    m = b.training_metrics([{"tokens_per_s_per_device": 3000.0, "mfu": 0.40},
                            {"tokens_per_s_per_device": 2800.0, "mfu": 0.38}, {"state": "starting"}])
    assert m == pytest.approx({"tokens_per_s_per_device": 2900.0, "mfu": 0.39})


def test_first_measurement_becomes_the_baseline():
    store, r = b.evaluate({}, "collective", b.collective_metrics(REPORT), CTX, now="2026-12-01T00:00:00+00:00")
    assert r["verdict"] == "recorded"
    assert store["baselines"]["collective"] == {"metrics": {"8192": 1.5, "16777216": 180.0}, "context": CTX,
                                                "recorded_at": "2026-12-01T00:00:00+00:00"}


@pytest.mark.parametrize("now,verdict", [(180.0, "ok"), (200.0, "ok"), (165.0, "warn"), (120.0, "fail")])
def test_drops_beyond_the_tolerances_warn_or_fail_and_faster_is_fine(now, verdict):
    store = b.evaluate({}, "collective", {"16777216": 180.0}, CTX)[0]
    r = b.evaluate(store, "collective", {"16777216": now}, CTX, warn=0.05, fail=0.3)[1]
    assert r["verdict"] == verdict
    assert r["rows"][0]["ratio"] == pytest.approx(now / 180.0, abs=1e-4)


def test_context_changes_are_shown_and_update_rerecords():
    store = b.evaluate({}, "training", {"tokens_per_s_per_device": 3000.0}, CTX)[0]
    ctx2 = dict(CTX, cann="8.3.RC1", world_size=24)
    r = b.evaluate(store, "training", {"tokens_per_s_per_device": 2000.0, "mfu": 0.3}, ctx2)[1]
    assert r["verdict"] == "fail"
    assert r["changed"] == {"cann": {"baseline": "8.2.RC1", "now": "8.3.RC1"},
                            "world_size": {"baseline": 16, "now": 24}}
    assert [row["verdict"] for row in r["rows"]] == ["fail", "new"]
    lines = b.summary_lines(r)
    assert "  since the baseline, cann: 8.2.RC1 -> 8.3.RC1" in lines and any("(no baseline)" in ln for ln in lines)
    store2, r2 = b.evaluate(store, "training", {"tokens_per_s_per_device": 2000.0}, ctx2, update=True)
    assert r2["verdict"] == "recorded" and store2["baselines"]["training"]["context"] == ctx2
    assert store["baselines"]["training"]["metrics"] == {"tokens_per_s_per_device": 3000.0}  # input not mutated


def test_one_node_and_several_nodes_each_have_their_own_baseline():
    one = dict(CTX, nodes="1", world_size=2)
    two = dict(CTX, nodes="2", world_size=4)
    store = b.evaluate({}, "collective", {"262144": 0.9}, one)[0]
    assert list(store["baselines"]) == ["collective/single-node"]
    # A cluster far slower than one node's internal links: its own baseline, not a failure.
    store, r = b.evaluate(store, "collective", {"262144": 0.1}, two)
    assert r["verdict"] == "recorded"
    assert sorted(store["baselines"]) == ["collective", "collective/single-node"]
    assert b.evaluate(store, "collective", {"262144": 0.05}, two, fail=0.3)[1]["verdict"] == "fail"
    assert b.evaluate(store, "collective", {"262144": 0.9}, one)[1]["verdict"] == "ok"


def test_a_one_node_baseline_stored_under_the_kind_moves_to_its_slot():
    old = {"schema": 1, "baselines": {"collective": {"metrics": {"262144": 0.9}, "context": {"nodes": "1"},
                                                     "recorded_at": "2026-12-01T00:00:00+00:00"}}}
    store, r = b.evaluate(old, "collective", {"262144": 0.1}, {"nodes": "2"})
    assert r["verdict"] == "recorded"
    assert store["baselines"]["collective/single-node"]["metrics"] == {"262144": 0.9}
    assert store["baselines"]["collective"]["metrics"] == {"262144": 0.1}


def test_bad_tolerances_and_kinds_are_refused():
    with pytest.raises(ValueError, match="tolerances"):
        b.compare({"a": 1.0}, {"a": 1.0}, 0.5, 0.2)
    with pytest.raises(ValueError, match="unknown baseline kind"):
        b.evaluate({}, "disk", {"a": 1.0}, {})


def test_filter_returns_store_result_and_lines():
    f = FilterModule().filters()
    out = f["baseline_evaluate"]({}, "collective", f["collective_metrics"](REPORT), CTX)
    assert out["result"]["verdict"] == "recorded" and out["store"]["schema"] == 1
    assert out["lines"][0].startswith("collective: baseline recorded")
    none = f["baseline_evaluate"](out["store"], "collective", {}, CTX)
    assert none["result"]["verdict"] == "none"
