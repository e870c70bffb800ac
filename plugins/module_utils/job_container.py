# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training job's container, specified once.

One ``ContainerSpec`` (engine, name, image, devices, mounts, environment file, network, IPC, user,
capabilities, security options, limits, labels, command) renders both the systemd unit that runs
the job (``unit()``, in the manner of containers.podman's quadlet: the unit is generated from the
same parameters as the run command) and the ``<engine> run`` argv of the collective pre-flight
(``argv()``). ``job_spec()`` builds the job's spec from the launch role's settings,
``job_env()`` its environment, ``container_user()`` decides whether the devices let it run as the
runtime user.

Least privilege, the same for every container of the job (and for container_runtime's verify,
through ``security_args()``): no capabilities (``--cap-drop ALL``), ``no-new-privileges``, the
runtime user's ids where the NPU device nodes allow, no ``--privileged``.
"""

from __future__ import annotations

import re
import shlex

from ansible_collections.ascendops.cluster.plugins.module_utils import setting_checks as sc

# The engine's default capabilities (chown, dac_override, fowner, setuid, net_raw, ...) are not
# needed to train: every one is dropped. no-new-privileges: no setuid binary can gain any back.
CAP_DROP = ("ALL",)
SECURITY_OPT = ("no-new-privileges",)
# Exit codes of the trainer and its launcher (ascendops-train launch): see job_state.EXIT_CODES.
DO_NOT_RETRY = (2, 3, 4)
STOPPED_EXIT = 143

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ULIMIT_RE = re.compile(r"^-?\d+(:-?\d+)?$")


# The unit's main process: it follows the detached container's output into the journal and exits with
# the container's exit code. When the engine restarts (live-restore keeps the container), the output
# stream breaks and the loop re-attaches once the engine answers again, so neither the unit nor the
# trainer restarts. "$1" the engine, "$2" the container name.
WAIT_SCRIPT = (
    'e=$1 n=$2 since=; '
    'while :; do '
    'if [ -n "$since" ]; then "$e" logs --follow --since "$since" "$n"; else "$e" logs --follow "$n"; fi; '
    'since=$(date +%s); '
    "s=$(\"$e\" inspect --format '{{.State.Running}} {{.State.ExitCode}}' \"$n\" 2>&1); "
    'case "$s" in '
    '"false "*) exit "${s#false }";; '
    '"true "*) ;; '
    '*"o such"*) echo "container $n is gone" >&2; exit 1;; '
    'esac; '
    'sleep 2; '
    'done'
)


class ContainerSpecError(ValueError):
    """A container specification that cannot be rendered."""


# launch_container_extra_args: the `<engine> run` options a training container may add, each with the
# rule of its value (None: the option takes no value). Anything else is refused: the role sets the
# container's identity, network, IPC, user, devices, mounts and security itself (--name, --rm, --network,
# --ipc, --user, --device, --privileged, --pid, --security-opt, --entrypoint, ...).
_SIZE_RE = re.compile(r"^[0-9]+(\.[0-9]+)?([bkmgtBKMGT]|[kmgtKMGT]i?[bB])?$")
_CPUS_RE = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_CPU_LIST_RE = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
_INT_RE = re.compile(r"^-?[0-9]+$")
_HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*:[0-9A-Fa-f.:]+$")
# Capabilities a training container may get back: locking memory for RDMA buffers, tracing its own
# processes (py-spy, gdb). Effective for a root container; the runtime user has none (no-new-privileges).
EXTRA_CAPS = ("IPC_LOCK", "SYS_PTRACE")
# Label keys of the role's own (the job's identity: status.yml, the clean-up and collect find it by them).
_OWN_LABEL_PREFIX = "ascendops."


def _size(value):
    return None if _SIZE_RE.match(value) else "a size such as 64g or 512m"


def _cap(value):
    cap = value.upper()
    cap = cap[4:] if cap.startswith("CAP_") else cap
    return None if cap in EXTRA_CAPS else f"only {' or '.join(EXTRA_CAPS)} (no other capability)"


def _env(value):
    name, sep = value.partition("=")[:2]
    if not _ENV_KEY_RE.match(name) or not sep:
        return "NAME=value with a shell-style NAME (letters, digits, '_'; a value of the host's is not passed)"
    return None


def _label(value):
    key, sep = value.partition("=")[:2]
    if not key or not sep or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_./-]*$", key):
        return "key=value"
    if key.startswith(_OWN_LABEL_PREFIX):
        return f"a key outside {_OWN_LABEL_PREFIX}* (the role's own labels name the job)"
    return None


def _ulimit(value):
    key, sep, limit = value.partition("=")
    return None if re.match(r"^[a-z]+$", key) and sep and _ULIMIT_RE.match(limit) else "name=soft[:hard] (-1 unlimited)"


def _match(regex, text):
    return lambda value: None if regex.match(value) else text


EXTRA_ARGS = {
    "--shm-size": _size,
    "--memory": _size,
    "--memory-swap": lambda v: None if v == "-1" or not _size(v) else "a size such as 64g, or -1",
    "--memory-reservation": _size,
    "--cpus": _match(_CPUS_RE, "a number of CPUs such as 32 or 7.5"),
    "--cpuset-cpus": _match(_CPU_LIST_RE, "CPU numbers such as 0-31 or 0,2,4"),
    "--cpuset-mems": _match(_CPU_LIST_RE, "NUMA node numbers such as 0-1"),
    "--pids-limit": _match(_INT_RE, "a number (-1 unlimited)"),
    "--ulimit": _ulimit,
    "--cap-add": _cap,
    "--env": _env,
    "--label": _label,
    "--add-host": _match(_HOST_RE, "name:address"),
    "--volume": None,  # volume_problems (setting_checks): it needs where the value sits
}
_SHORT = {"-e": "--env", "-l": "--label", "-m": "--memory", "-v": "--volume"}


def extra_args_problems(args, name="launch_container_extra_args"):
    """Messages for every ``<engine> run`` option of ``args`` (the site's list) outside the allow-list
    (EXTRA_ARGS) or with a value its rule refuses, each naming the option and its index in ``name``.
    Both ``--opt=value`` and ``--opt value`` forms (and ``-e``/``-l``/``-m``/``-v`` as ``-eX``, ``-e=X``,
    ``-e X``) are read. An item that is not an option (a stray value) is refused too: it would take the
    image's place on the command line."""
    if isinstance(args, (str, bytes, dict)) or args is None:
        return [f"{name} must be a list of options, e.g. ['--shm-size', '64g'], is {args!r}"]
    args = [str(a) for a in args]
    allowed = ", ".join(sorted(EXTRA_ARGS)) + " (-e, -l, -m, -v)"
    out, i = [], 0
    while i < len(args):
        arg, where = args[i], f"{name}[{i}]"
        found = sc.control_char(arg)
        if found:
            out.append(f"{where} holds {found[1]} at character {found[0] + 1}")
            i += 1
            continue
        if arg.startswith("--"):
            opt, sep, value = arg.partition("=")
        elif arg.startswith("-") and len(arg) > 1:
            opt, value = arg[:2], arg[2:]
            sep = "=" if value else ""
            value = value[1:] if value.startswith("=") else value
        else:
            out.append(f"{where} ({arg!r}) is not an option: every value follows its option")
            i += 1
            continue
        long_opt = _SHORT.get(opt, opt)
        if long_opt not in EXTRA_ARGS:
            out.append(f"{where}: {opt} is not accepted (the role sets the container's identity, network, user, "
                       f"devices, mounts and security itself); accepted: {allowed}")
            i += 1
            continue
        if not sep:
            if i + 1 >= len(args):
                out.append(f"{where}: {opt} needs a value")
                break
            value, i = args[i + 1], i + 1
            found = sc.control_char(value)
            if found:
                out.append(f"{name}[{i}] holds {found[1]} at character {found[0] + 1}")
                i += 1
                continue
        if long_opt == "--volume":
            out.extend(sc.volume_problems(f"{where} {opt}", value))
        else:
            problem = EXTRA_ARGS[long_opt](value)
            if problem:
                # an --env value may be a secret: only its name is shown
                shown = value.partition("=")[0] + "=..." if long_opt == "--env" else repr(value)
                out.append(f"{where}: {opt} {shown} must be {problem}")
        i += 1
    return out


def security_args(user=None, cap_add=()):
    """The least-privilege flags every container of the job runs with (and the verify container proves)."""
    args = []
    for cap in CAP_DROP:
        args += ["--cap-drop", cap]
    for cap in cap_add or ():
        args += ["--cap-add", str(cap)]
    for opt in SECURITY_OPT:
        args += ["--security-opt", opt]
    if user:
        args += ["--user", str(user)]
    return args


def _mode(value):
    if isinstance(value, int):
        return value
    return int(str(value), 8)


def _can_open(stat, uid, gid):
    """Whether uid/gid may read and write the node ``stat`` describes ({uid, gid, mode}) without capabilities."""
    mode = _mode(stat.get("mode", 0))
    if int(stat.get("uid", -1)) == int(uid):
        return mode & 0o600 == 0o600
    if int(stat.get("gid", -1)) == int(gid):
        return mode & 0o060 == 0o060
    return mode & 0o006 == 0o006


def container_user(device_stats, user_name=None, uid=None, gid=None):
    """Who the job's processes run as.

    ``device_stats``: the NPU device nodes the container gets, each {path, uid, gid, mode} (mode as
    an octal string as Ansible's stat gives it, or an int). The runtime user (``user_name`` with
    ``uid``/``gid``; none when not asked for or not on the node) is used when it can open every one
    of them; otherwise root, without capabilities, plus CAP_DAC_OVERRIDE only where root does not
    own a device node either. Returns {user ("uid:gid" or None for root), name, uid, gid, cap_add,
    reason}.
    """
    stats = list(device_stats or [])
    if user_name and user_name != "root" and uid is not None and gid is not None and int(uid) != 0:
        blocked = [s for s in stats if not _can_open(s, uid, gid)]
        if not blocked:
            return {"user": f"{int(uid)}:{int(gid)}", "name": user_name, "uid": int(uid), "gid": int(gid),
                    "cap_add": [], "reason": f"runs as {user_name} ({int(uid)}:{int(gid)}), which owns the NPU devices"}
        why = (f"{user_name} ({int(uid)}:{int(gid)}) cannot open "
               + ", ".join(f"{s.get('path')} ({s.get('uid')}:{s.get('gid')} {_mode(s.get('mode', 0)):04o})"
                           for s in blocked))
    elif user_name and user_name != "root":
        why = f"the runtime user {user_name} does not exist on this node"
    else:
        why = "root asked for (launch_container_user)"
    cap_add = [] if all(_can_open(s, 0, 0) for s in stats) else ["DAC_OVERRIDE"]
    return {"user": None, "name": "root", "uid": 0, "gid": 0, "cap_add": cap_add,
            "reason": f"runs as root without capabilities{' but DAC_OVERRIDE' if cap_add else ''}: {why}"}


def _systemd_word(arg):
    """One argument of an Exec= line: systemd specifiers (%) and variables ($) escaped, quoted when needed."""
    text = str(arg).replace("%", "%%").replace("$", "$$")
    if text and not re.search(r"[\s\"'\\;]", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ContainerSpec:
    """A container of the job: what runs, with which devices, mounts, environment and privileges."""

    FIELDS = ("engine", "name", "image", "command", "devices", "mounts", "env_file", "env", "network", "ipc",
              "user", "cap_add", "ulimits", "labels", "stop_timeout", "extra_args", "engine_path")

    def __init__(self, engine, name, image, command, devices=(), mounts=(), env_file=None, env=None,
                 network="host", ipc="host", user=None, cap_add=(), ulimits=None, labels=None,
                 stop_timeout=None, extra_args=(), engine_path=None):
        if engine not in ("docker", "podman"):
            raise ContainerSpecError(f"container engine {engine!r}: docker or podman")
        if not _NAME_RE.match(str(name or "")):
            raise ContainerSpecError(f"container name {name!r}: letters, digits, '.', '_' or '-'")
        if not image:
            raise ContainerSpecError("no image")
        if not command:
            raise ContainerSpecError("no command")
        self.engine = engine
        self.engine_path = engine_path or f"/usr/bin/{engine}"
        self.name = str(name)
        self.image = str(image)
        self.command = [str(c) for c in command]
        self.devices = []
        for dev in devices or ():
            if not str(dev).startswith("/dev/"):
                raise ContainerSpecError(f"device {dev!r} is not under /dev")
            if str(dev) not in self.devices:
                self.devices.append(str(dev))
        self.mounts = []
        targets = set()
        for m in mounts or ():
            source, target = str(m["source"]), str(m.get("target") or m["source"])
            if not source.startswith("/") or not target.startswith("/"):
                raise ContainerSpecError(f"mount {source}:{target}: absolute paths only")
            if ":" in source or ":" in target or "," in source or "," in target:
                raise ContainerSpecError(f"mount {source}:{target}: ':' and ',' cannot be passed to the engine")
            if target in targets:
                continue  # the same directory named twice (e.g. run_dir == checkpoint_dir)
            targets.add(target)
            self.mounts.append({"source": source, "target": target, "read_only": bool(m.get("read_only", True))})
        self.env_file = env_file
        self.env = {}
        for key, value in (env or {}).items():
            if not _ENV_KEY_RE.match(str(key)) or sc.control_char(value):
                raise ContainerSpecError(f"environment variable {key!r}: a name and a value without control characters")
            self.env[str(key)] = str(value)
        self.network = network
        self.ipc = ipc
        self.user = str(user) if user else None
        self.cap_add = [str(c) for c in cap_add or ()]
        self.ulimits = {}
        for key, value in (ulimits or {}).items():
            if not re.match(r"^[a-z]+$", str(key)) or not _ULIMIT_RE.match(str(value)):
                raise ContainerSpecError(f"ulimit {key}={value}: a name and soft[:hard] numbers (-1 unlimited)")
            self.ulimits[str(key)] = str(value)
        self.labels = {str(k): str(v) for k, v in (labels or {}).items()}
        self.stop_timeout = int(stop_timeout) if stop_timeout is not None else None
        self.extra_args = [str(a) for a in extra_args or ()]
        refused = extra_args_problems(self.extra_args, "extra_args")
        if refused:
            raise ContainerSpecError("; ".join(refused))
        # Nothing that reaches the unit or the command line carries a control character (a newline would
        # end the Exec= line and start a directive of its own).
        texts = {"image": self.image, "command": self.command, "engine_path": self.engine_path,
                 "env_file": self.env_file or "", "env": self.env, "labels": self.labels, "user": self.user or "",
                 "cap_add": self.cap_add, "mounts": [[m["source"], m["target"]] for m in self.mounts],
                 "devices": self.devices}
        bad = sc.settings_control_char_problems(texts)
        if bad:
            raise ContainerSpecError("; ".join(bad))

    @classmethod
    def from_dict(cls, data):
        """A spec from the dict ``to_dict()`` gives (how it travels between Ansible tasks)."""
        if isinstance(data, ContainerSpec):
            return data
        unknown = set(data) - set(cls.FIELDS)
        if unknown:
            raise ContainerSpecError(f"unknown container spec keys: {', '.join(sorted(unknown))}")
        return cls(**data)

    def to_dict(self):
        return {f: getattr(self, f) for f in self.FIELDS}

    def replace(self, **changes):
        data = self.to_dict()
        extra_mounts = changes.pop("extra_mounts", None)
        data.update(changes)
        if extra_mounts:
            data["mounts"] = list(data["mounts"]) + list(extra_mounts)
        return ContainerSpec(**data)

    def run_args(self, rm=True):
        """The arguments after ``<engine> run``: options, image, command."""
        args = ["--rm"] if rm else []
        args += ["--name", self.name]
        for key, value in sorted(self.labels.items()):
            args += ["--label", f"{key}={value}"]
        if self.network:
            args += ["--network", self.network]
        if self.ipc:
            args += ["--ipc", self.ipc]
        args += security_args(self.user, self.cap_add)
        for key, value in sorted(self.ulimits.items()):
            args += ["--ulimit", f"{key}={value}"]
        if self.stop_timeout is not None:
            args += ["--stop-timeout", str(self.stop_timeout)]
        for dev in self.devices:
            args += ["--device", dev]
        for m in self.mounts:
            args += ["--volume", f"{m['source']}:{m['target']}{':ro' if m['read_only'] else ''}"]
        if self.env_file:
            args += ["--env-file", self.env_file]
        for key, value in self.env.items():
            args += ["--env", f"{key}={value}"]
        args += self.extra_args
        return args + [self.image] + self.command

    def argv(self, rm=True):
        """``<engine> run ...`` as an argv list (for the command module: nothing passes through a shell)."""
        return [self.engine, "run"] + self.run_args(rm=rm)

    def shell_command(self):
        """The run command as a person would type it (shown in reports)."""
        return shlex.join(self.argv())

    def unit(self, description, stop_grace_s, restart_sec=20, start_limit_burst=5, start_limit_interval_s=3600,
             comments=(), start_timeout_s=300):
        """The systemd unit that runs this container.

        The container is started detached (ExecStartPre) and followed by WAIT_SCRIPT (ExecStart, the
        unit's main process), so an engine restart with live-restore leaves both running.

        ``stop_grace_s``: the time the command gets to finish after SIGTERM (the launcher's final
        checkpoint); ``<engine> stop`` waits ``stop_timeout`` (default 15 s more) before it kills,
        systemd 30 s more than that before it gives up. A container already gone (the job completed
        and ``--rm`` removed it) is no failure of ExecStop. Exit codes 2, 3, 4 (configuration, rank
        table, non-finite loss) are not retried; 143 (stopped on SIGTERM after saving) is a clean stop.
        """
        bad = sc.settings_control_char_problems({"description": str(description),
                                                 "comments": [str(c) for c in comments]})
        if bad:
            raise ContainerSpecError("; ".join(bad))
        grace = int(stop_grace_s)
        engine_stop = self.stop_timeout if self.stop_timeout is not None else grace + 15
        if engine_stop <= grace:
            raise ContainerSpecError(f"stop timeout {engine_stop} s must exceed the grace of {grace} s")
        word = _systemd_word
        lines = [f"# {c}" for c in comments]
        lines += [
            "[Unit]",
            f"Description={description}",
            "Wants=network-online.target",
            "After=network-online.target" + (" docker.service" if self.engine == "docker" else ""),
        ]
        if self.engine == "docker":
            # Wants=, not Requires=: an engine restart (a daemon.json key that needs one) must not stop or
            # restart the job; live-restore keeps the container and WAIT_SCRIPT re-attaches to it.
            lines.append("Wants=docker.service")
        lines += [
            f"StartLimitIntervalSec={int(start_limit_interval_s)}",
            f"StartLimitBurst={int(start_limit_burst)}",
            "",
            "[Service]",
            "Type=simple",
            f"ExecStartPre=-{self.engine_path} rm -f {word(self.name)}",
        ]
        run = self.to_dict()
        run["stop_timeout"] = engine_stop
        # Detached, without --rm (the exit code is read after the container ends; ExecStopPost removes
        # it): the engine's own stops (shutdown) get the same time.
        args = ["--detach"] + ContainerSpec(**run).run_args(rm=False)
        # one option (with its value) per line, the image and command on the last
        image_at = len(args) - len(self.command) - 1
        opts, tail = args[:image_at], args[image_at:]
        rows, i = [], 0
        while i < len(opts):
            if opts[i].startswith("--") and i + 1 < len(opts) and not opts[i + 1].startswith("--") \
                    and opts[i] not in ("--rm", "--detach"):
                rows.append(f"{opts[i]} {word(opts[i + 1])}")
                i += 2
            else:
                rows.append(word(opts[i]))
                i += 1
        rows.append(" ".join(word(a) for a in tail))
        lines.append(f"ExecStartPre={self.engine_path} run " + " \\\n  ".join(rows))
        lines.append(f"ExecStart=/bin/sh -c {word(WAIT_SCRIPT)} ascendops-wait {word(self.engine_path)} "
                     f"{word(self.name)}")
        lines += [
            f"ExecStop=-{self.engine_path} stop --time {engine_stop} {word(self.name)}",
            f"ExecStopPost=-{self.engine_path} rm -f {word(self.name)}",
            "Restart=on-failure",
            f"RestartSec={int(restart_sec)}",
            "RestartPreventExitStatus=" + " ".join(str(c) for c in DO_NOT_RETRY),
            f"SuccessExitStatus={STOPPED_EXIT}",
            f"TimeoutStartSec={int(start_timeout_s)}",
            f"TimeoutStopSec={engine_stop + 30}",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
            "",
        ]
        return "\n".join(lines)


def job_command(nnodes, node_rank, nproc, master_addr, master_port, config_file, grace_s=None, module="train",
                module_args=()):
    """The torchrun command of the job (``-m ascendops_trainer <module>``), or with ``grace_s`` the
    launcher ``ascendops-train launch --grace-s G -- <torchrun's arguments>`` (it runs torchrun)."""
    torchrun = ["torchrun", "--nnodes", str(nnodes), "--node_rank", str(node_rank), "--nproc_per_node", str(nproc),
                "--master_addr", str(master_addr), "--master_port", str(master_port), "-m", "ascendops_trainer", module]
    if config_file:
        torchrun += ["--config", str(config_file)]
    torchrun += [str(a) for a in module_args]
    if grace_s is None:
        return torchrun
    return ["ascendops-train", "launch", "--grace-s", str(int(grace_s)), "--"] + torchrun[1:]


def job_mounts(driver_mounts, job_dir, job, status_dir=None, extra=()):
    """Mounts of the job's containers: the driver paths present on the node and the job directory
    read-only, the data and a model directory read-only, checkpoints, run directory and status
    directory read-write (each at the same path inside)."""
    mounts = [{"source": p, "read_only": True} for p in driver_mounts or ()]
    mounts.append({"source": job_dir, "read_only": True})
    mounts.append({"source": job["data_path"], "read_only": True})
    if job.get("hf_model_dir"):
        mounts.append({"source": job["hf_model_dir"], "read_only": True})
    mounts.append({"source": job["checkpoint_dir"], "read_only": False})
    mounts.append({"source": job["run_dir"], "read_only": False})
    if status_dir:
        mounts.append({"source": status_dir, "read_only": False})
    mounts += list(extra or ())
    return mounts


def job_env(base, extra_env=None):
    """The job's environment: the launch stage's variables (``base``, in order) with the site's
    ``extra_env`` over them. Returns {env (dict, in order), overridden ({key: [derived, site]} where
    extra_env replaced a derived value with another)}."""
    env = {}
    for key, value in (base or {}).items():
        if value is None or value == "":
            continue
        env[str(key)] = str(value)
    overridden = {}
    for key, value in sorted((extra_env or {}).items()):
        key, value = str(key), str(value)
        if key in env and env[key] != value:
            overridden[key] = [env[key], value]
        env[key] = value
    for key, value in env.items():
        if not _ENV_KEY_RE.match(key) or sc.control_char(value):
            raise ContainerSpecError(f"environment variable {key!r}: a name and a value without control characters "
                                     "(one line)")
    return {"env": env, "overridden": overridden}


def env_file_text(env, header=()):
    """``KEY=value`` lines, as ``<engine> run --env-file`` reads them (no quoting, no expansion)."""
    lines = [f"# {h}" for h in header]
    lines += [f"{k}={v}" for k, v in env.items()]
    return "\n".join(lines) + "\n"


def interface_of_address(facts, address):
    """The network interface holding ``address`` in a host's Ansible facts (``ansible_facts``), or ''."""
    address = str(address or "")
    if not address:
        return ""
    for name in (facts or {}).get("interfaces") or []:
        data = (facts or {}).get(name.replace("-", "_")) or (facts or {}).get(name) or {}
        v4 = [data.get("ipv4") or {}] + list(data.get("ipv4_secondaries") or [])
        if any(isinstance(a, dict) and a.get("address") == address for a in v4):
            return name
        if any(isinstance(a, dict) and a.get("address") == address for a in data.get("ipv6") or []):
            return name
    return ""
