"""The day-2 filter scale_resume (plugins/filter/day2.py): resume_state with the lines the plan prints."""

from ansible_collections.ascendops.cluster.plugins.filter.day2 import FilterModule, scale_resume
from ansible_collections.ascendops.cluster.plugins.module_utils.scale_plan import plan_scale


def test_scale_resume_is_registered():
    assert FilterModule().filters()["scale_resume"] is scale_resume


def test_scale_resume_half_started_job_lines_and_stop_targets():
    plan = plan_scale(["n1", "n2"], add=["n3"], devices_per_node=1)
    new = ["10.1.0.1", "10.1.0.2", "10.1.0.3"]
    found = {"n1": {"servers": new, "running": False, "stopped_by": "add"},
             "n2": {"servers": new, "running": False, "stopped_by": "add"},
             "n3": {"servers": new, "running": True, "stopped_by": None}}
    r = scale_resume(plan, found, ["n1", "n2"], {"n1": "10.1.0.1", "n2": "10.1.0.2", "n3": "10.1.0.3"}, 1, "add",
                     "ansible-playbook add_node.yml -e nodes=n3")
    assert r["state"] == "started_partial"
    assert r["stop"] == ["n1", "n2", "n3"]
    assert r["lines"][0].startswith("Found: the job was started at world size 3 on n3 only")
    assert r["lines"][-1].endswith("ansible-playbook add_node.yml -e nodes=n3")


def test_scale_resume_done_prints_only_what_was_found():
    plan = plan_scale(["n1", "n2"], remove=["n2"], dead=["n2"], devices_per_node=1)
    r = scale_resume(plan, {"n1": {"servers": ["n1"], "running": True}}, ["n1", "n2"], None, "1", "remove", "c")
    assert r["state"] == "done" and r["stop"] == []
    assert r["lines"] == ["Found: already done: the job runs on n1 at world size 1 with their rank table; "
                          "nothing to do"]
