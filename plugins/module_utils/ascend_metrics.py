# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work of the ascend_metrics_textfile module: the training job's metrics (from the trainer's
per-node status file) and the NPUs' (npu_usage_info's reading) as Prometheus metric families,
written into node_exporter's textfile collector directory.

``training_families()`` and ``npu_families()`` are pure (unit-tested on the rendered text); the
``MetricsTextfile`` class reads the node and writes the file atomically (a temporary file in the
same directory, then a rename: node_exporter never reads half a file, and it ignores the temporary
name, which does not end in ``.prom``), changed only when the content differs.

Metric names and labels (README, "Prometheus metrics"):

* ``ascend_train_*`` (labels ``node``, ``job``): step, steps, loss, tokens per second per device,
  MFU, last checkpoint step and time, the status file's update time, the state (one series per
  state, 1 for the current one);
* ``ascend_npu_*`` (labels ``node``, ``npu``, and ``job`` when one is given): up, AI Core / AI CPU /
  control CPU usage, HBM used and total (bytes), temperature, power.

Times are Unix timestamps, never ages: the file then changes only when something happened, and
Prometheus computes an age as ``time() - ascend_train_last_checkpoint_timestamp_seconds``.
"""

from __future__ import annotations

import json
import os
import tempfile

from ansible_collections.ascendops.cluster.plugins.module_utils.npu_usage import NpuUsage
from ansible_collections.ascendops.cluster.plugins.module_utils.prometheus_textfile import Family, render, validate

TRAIN_STATES = ("starting", "running", "completed", "stopped", "failed")
MIB = 1024 * 1024


def read_status(path):
    """(status dict or None, error or None): the trainer's status file (schema 1)."""
    if not path or not os.path.exists(path):
        return None, None
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        return None, f"cannot read the status file {path}: {exc}"
    if not isinstance(data, dict) or data.get("schema") != 1:
        return None, f"{path} is not a trainer status file of schema 1"
    return data, None


def checkpoint_time(checkpoint_dir, tag):
    """The modification time of ``<checkpoint_dir>/<tag>`` (None when either is unknown or missing)."""
    if not checkpoint_dir or not tag or os.sep in str(tag) or str(tag) in (".", ".."):
        return None
    try:
        return int(os.stat(os.path.join(checkpoint_dir, str(tag))).st_mtime)
    except OSError:
        return None


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def training_families(status, node, job, checkpoint_mtime=None):
    """Metric families of the trainer's status record (None: no family has samples)."""
    status = status or {}
    job = job or status.get("job") or ""
    labels = {"node": node, "job": job}
    fams = [
        Family("ascend_train_step", "gauge", "Last optimizer step the trainer reported.")
        .add(labels, _number(status.get("step"))),
        Family("ascend_train_steps", "gauge", "Steps the job trains in all (train.steps).")
        .add(labels, _number(status.get("steps"))),
        Family("ascend_train_loss", "gauge", "Training loss at the last reported step.")
        .add(labels, _number(status.get("loss"))),
        Family("ascend_train_tokens_per_second_per_device", "gauge",
               "Training throughput in tokens per second per NPU device.")
        .add(labels, _number(status.get("tokens_per_s_per_device"))),
        Family("ascend_train_mfu_ratio", "gauge", "Model FLOPs utilisation (0 to 1) at the last reported step.")
        .add(labels, _number(status.get("mfu"))),
        Family("ascend_train_last_checkpoint_step", "gauge", "Step of the last checkpoint the trainer saved.")
        .add(labels, _number(status.get("last_checkpoint_step"))),
        Family("ascend_train_last_checkpoint_timestamp_seconds", "gauge",
               "Unix time the last checkpoint was written (its directory's modification time); "
               "age: time() - this.")
        .add(labels, checkpoint_mtime),
        Family("ascend_train_status_updated_timestamp_seconds", "gauge",
               "Unix time the trainer last wrote its status file.")
        .add(labels, _number(status.get("updated_at"))),
    ]
    state = status.get("state")
    state_fam = Family("ascend_train_state", "gauge", "The trainer's state: 1 for the current one, 0 for the others.")
    if state:
        for name in TRAIN_STATES + (() if state in TRAIN_STATES else (str(state),)):
            state_fam.add(dict(labels, state=name), 1 if name == state else 0)
    fams.append(state_fam)
    return fams


def npu_families(npus, node, job=""):
    """Metric families of npu_usage_info's ``npus`` (an NPU that could not be read: up 0, nothing else)."""
    up = Family("ascend_npu_up", "gauge", "1 when npu-smi answered for this NPU, 0 when it did not.")
    aicore = Family("ascend_npu_ai_core_usage_percent", "gauge", "AI Core usage in percent (npu-smi info -t usages).")
    aicpu = Family("ascend_npu_ai_cpu_usage_percent", "gauge", "AI CPU usage in percent.")
    ctrl = Family("ascend_npu_ctrl_cpu_usage_percent", "gauge", "Control CPU usage in percent.")
    used = Family("ascend_npu_hbm_used_bytes", "gauge",
                  "HBM in use (capacity x HBM Usage Rate; npu-smi prints a rate, good to 1 percent).")
    total = Family("ascend_npu_hbm_total_bytes", "gauge", "HBM capacity.")
    temp = Family("ascend_npu_temperature_celsius", "gauge", "Temperature of the NPU's hottest chip.")
    power = Family("ascend_npu_power_watts", "gauge",
                   "Power draw of the NPU (or of its card where only that is printed).")
    for npu in npus or []:
        labels = {"node": node, "npu": npu.get("npu_id")}
        if job:
            labels["job"] = job
        up.add(labels, 0 if npu.get("error") else 1)
        if npu.get("error"):
            continue
        aicore.add(labels, npu.get("ai_core_pct"))
        aicpu.add(labels, npu.get("aicpu_pct"))
        ctrl.add(labels, npu.get("ctrlcpu_pct"))
        if npu.get("hbm_total_mb") is not None:
            used.add(labels, int(npu["hbm_used_mb"]) * MIB if npu.get("hbm_used_mb") is not None else None)
            total.add(labels, int(npu["hbm_total_mb"]) * MIB)
        temp.add(labels, npu.get("temperature_c"))
        power.add(labels, npu.get("power_w"))
    return [up, aicore, aicpu, ctrl, used, total, temp, power]


def render_metrics(node, job, status=None, npus=None, checkpoint_mtime=None):
    """The whole textfile (validated before it is returned)."""
    text = render(training_families(status, node, job, checkpoint_mtime) + npu_families(npus, node, job))
    validate(text)
    return text


class MetricsTextfile:
    """One ascend_metrics_textfile run: read, render, compare, write (unless check mode)."""

    def __init__(self, module, npu_reader=None):
        self.module = module
        self.npu_reader = npu_reader

    def run(self):
        p = self.module.params
        directory = p["directory"]
        if not p["name"].endswith(".prom") or "/" in p["name"]:
            self.module.fail_json(msg=f"name: {p['name']!r} is not a file name ending in .prom (node_exporter's "
                                      "textfile collector reads only *.prom files); set name to e.g. ascendops.prom")
        try:
            mode = int(p["mode"], 8)
        except ValueError:
            self.module.fail_json(msg=f"mode: {p['mode']!r} is not an octal mode; set mode to e.g. \"0644\"")
        if not os.path.isdir(directory):
            self.module.fail_json(msg=f"the textfile collector directory {directory} does not exist: install "
                                      "node_exporter with its textfile collector (--collector.textfile.directory) "
                                      "or set the module's directory option to the directory it reads")
        dest = os.path.join(directory, p["name"])
        status, status_error = read_status(p["status_file"])
        job = p["job"] or (status or {}).get("job") or ""
        warnings = [status_error] if status_error else []
        npus, npu_error = [], None
        if p["npu"]:
            reading = (self.npu_reader or NpuUsage(self.module).gather)()
            npus = reading["npus"]
            if not reading["available"]:
                npu_error = reading["error"]
        mtime = checkpoint_time(p["checkpoint_dir"], (status or {}).get("last_checkpoint"))
        text = render_metrics(p["node"], job, status, npus, mtime)
        before = None
        if os.path.exists(dest):
            with open(dest) as handle:
                before = handle.read()
        changed = before != text or (os.stat(dest).st_mode & 0o7777) != mode
        if changed and not self.module.check_mode:
            self._write(directory, dest, text, mode)
        result = {"changed": changed, "path": dest, "metrics": text.count("# TYPE "),
                  "status_file_read": status is not None, "npu_error": npu_error}
        if self.module._diff:
            result["diff"] = {"before": before or "", "after": text,
                              "before_header": dest, "after_header": dest}
        for warning in warnings:
            self.module.warn(warning)
        self.module.exit_json(**result)

    def _write(self, directory, dest, text, mode):
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + self.module.params["name"] + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            # Ansible's atomic rename (as docker_daemon_json): it also sets the SELinux context; it keeps
            # an existing file's mode, so the mode is set after it.
            self.module.atomic_move(tmp, dest)
            os.chmod(dest, mode)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
