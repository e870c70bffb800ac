"""Devices, process groups and the HCCL rank table.

- Device: NPU (torch_npu, backend ``hccl``), CUDA (``nccl``) or CPU (``gloo``); ``auto`` tries them
  in that order (torch_npu first, as DeepSpeed does) and ``--device`` overrides.
- Launch: torchrun (``--nnodes --node_rank --master_addr --master_port --nproc_per_node``) sets
  RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/GROUP_RANK. Without torchrun we set up a 1-rank group
  ourselves (the benchmark and quick single-device runs need no launcher).
- Rank table: when RANK_TABLE_FILE is set, the table must describe exactly this launch (world size,
  this node's ranks and device ids); otherwise we stop before any collective with a message saying
  what disagrees, instead of hanging in HCCL's connect timeout.

Everything in this module up to ``init_distributed`` runs before torch/deepspeed are imported.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import logging
import os
import socket
from dataclasses import dataclass

from .config import ConfigError

log = logging.getLogger(__name__)

BACKENDS = {"npu": "hccl", "cuda": "nccl", "cpu": "gloo"}


class RankTableError(RuntimeError):
    """The HCCL rank table does not describe this launch."""


@dataclass(frozen=True)
class LaunchInfo:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    torchrun: bool  # False: single process started without a launcher

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_node_main(self) -> bool:
        """The first process on its node: it logs for the node (every node's journal shows progress)."""
        return self.local_rank == 0


def launch_info(env: dict[str, str] | None = None) -> LaunchInfo:
    """Read the torchrun environment (or describe a single process started without it)."""
    env = os.environ if env is None else env
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return LaunchInfo(0, 1, 0, 1, 0, torchrun=False)
    world = int(env["WORLD_SIZE"])
    local_world = int(env.get("LOCAL_WORLD_SIZE", world))
    rank = int(env["RANK"])
    node_rank = int(env.get("GROUP_RANK", rank // max(local_world, 1)))
    return LaunchInfo(rank, world, int(env.get("LOCAL_RANK", 0)), local_world, node_rank, torchrun=True)


# ---------------------------------------------------------------- rank table


def parse_rank_table(text: str, source: str = "rank table") -> list[dict]:
    """Parse an HCCL rank table (v1.0, or v1.2 with super_pod_list) into a list of servers.

    Returns ``[{"server_id", "host_ip", "devices": [{"device_id": int, "rank_id": int, ...}]}]``.
    """
    try:
        table = json.loads(text)
    except json.JSONDecodeError as e:
        raise RankTableError(f"{source} is not valid JSON ({e}); check for a missing comma") from None
    if not isinstance(table, dict) or not isinstance(table.get("server_list"), list):
        raise RankTableError(f"{source} has no server_list")
    if table.get("status", "completed") != "completed":
        raise RankTableError(f"{source} has status '{table.get('status')}', expected 'completed'")
    servers = []
    for s in table["server_list"]:
        try:
            devices = [{"device_id": int(d["device_id"]), "rank_id": int(d["rank_id"]),
                        "device_ip": d.get("device_ip")} for d in s["device"]]
            servers.append({"server_id": str(s["server_id"]), "host_ip": s.get("host_ip", s["server_id"]),
                            "devices": devices})
        except (KeyError, TypeError, ValueError) as e:
            raise RankTableError(f"{source}: malformed server entry {s!r} ({e!r})") from None
    if "server_count" in table and int(table["server_count"]) != len(servers):
        raise RankTableError(f"{source} says server_count={table['server_count']} but lists {len(servers)} servers")
    ranks = sorted(d["rank_id"] for s in servers for d in s["devices"])
    if ranks != list(range(len(ranks))):
        raise RankTableError(f"{source}: rank_id values must be 0..{len(ranks) - 1} without gaps or repeats, "
                             f"got {ranks}")
    return servers


def parse_device_list(text: str, name: str = "device list") -> list[int]:
    """'0-7', '1,3', '0-2,4' -> [ids]."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError(part)
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise RankTableError(f"{name}={text!r}: expected ids like '0-7', '1,3' or '0-2,4'") from None
    return out


# The host NPU ids a container was given, in the order it sees them (logical 0..n-1): the Ascend container
# runtime's variable, then the launch stage's (devices passed as --device, no runtime involved).
CONTAINER_DEVICE_VARS = ("ASCEND_VISIBLE_DEVICES", "ASCENDOPS_HOST_DEVICES")


def visible_devices(env: dict[str, str]) -> list[int] | None:
    """Physical device ids behind local indices 0..n-1, or None when nothing restricts them.

    Two layers can renumber devices: the container (the host's NPUs given to it, seen inside as logical
    devices 0..n-1 in ascending host order: ASCEND_VISIBLE_DEVICES where the Ascend container runtime
    mounts them, ASCENDOPS_HOST_DEVICES where the launch stage passes them as --device /dev/davinciN)
    and ASCEND_RT_VISIBLE_DEVICES (CANN's own mask, logical ids over what the process can see). The
    rank table names physical (host) device ids.
    """
    name = next((k for k in CONTAINER_DEVICE_VARS if env.get(k)), None)
    container = env.get(name) if name else None
    rt = env.get("ASCEND_RT_VISIBLE_DEVICES")
    if not container and not rt:
        return None
    phys = sorted(set(parse_device_list(container, name))) if container else None
    if rt:
        local = parse_device_list(rt, "ASCEND_RT_VISIBLE_DEVICES")
        if phys is None:
            return local
        bad = [i for i in local if i >= len(phys)]
        if bad:
            raise RankTableError(f"ASCEND_RT_VISIBLE_DEVICES={rt} names device(s) {bad} but the container has only "
                                 f"{len(phys)} NPUs ({name}={container}; inside, devices are numbered from 0)")
        return [phys[i] for i in local]
    return phys


def check_rank_table(servers: list[dict], launch: LaunchInfo, env: dict[str, str] | None = None,
                     source: str = "rank table") -> dict:
    """Check the table against this launch; return this node's server entry.

    Checks: total devices == WORLD_SIZE; the server holding this process's rank lists
    LOCAL_WORLD_SIZE devices, with the ranks torchrun gives this node (node_rank * nproc + i); and
    the device id of this rank is the device this process will use (LOCAL_RANK, through
    ASCEND_RT_VISIBLE_DEVICES when set). With HCCL_IF_IP set, it must be the server's host_ip.
    """
    env = os.environ if env is None else env
    total = sum(len(s["devices"]) for s in servers)
    if total != launch.world_size:
        raise RankTableError(
            f"{source} lists {total} devices on {len(servers)} servers but torchrun launched "
            f"WORLD_SIZE={launch.world_size} processes ({launch.local_world_size} per node); launch with "
            f"--nnodes {len(servers)} --nproc_per_node {total // max(len(servers), 1)} or regenerate the table")
    mine = [s for s in servers if any(d["rank_id"] == launch.rank for d in s["devices"])]
    server = mine[0]
    if len(server["devices"]) != launch.local_world_size:
        raise RankTableError(
            f"{source}: server {server['server_id']} (holding rank {launch.rank}) lists "
            f"{len(server['devices'])} devices but this node runs --nproc_per_node {launch.local_world_size}")
    expected = list(range(launch.node_rank * launch.local_world_size,
                          (launch.node_rank + 1) * launch.local_world_size))
    got = sorted(d["rank_id"] for d in server["devices"])
    if got != expected:
        raise RankTableError(
            f"{source}: server {server['server_id']} holds ranks {got}, but torchrun gives node_rank "
            f"{launch.node_rank} the ranks {expected}; check --node_rank on this host "
            "(ranks are numbered server by server in ascending server_id order)")
    dev = next(d for d in server["devices"] if d["rank_id"] == launch.rank)
    behind = check_visible_devices(launch, env)  # the physical id behind visible index LOCAL_RANK
    vis = behind is not None
    physical = launch.local_rank if behind is None else behind
    if dev["device_id"] != physical:
        raise RankTableError(
            f"{source}: rank {launch.rank} is device {dev['device_id']} on server {server['server_id']}, "
            f"but this process (LOCAL_RANK={launch.local_rank}) would use device {physical}"
            + (" (" + ", ".join(f"{k}={env[k]}" for k in (*CONTAINER_DEVICE_VARS, "ASCEND_RT_VISIBLE_DEVICES")
                                 if env.get(k)) + ")" if vis else ""))
    if_ip = env.get("HCCL_IF_IP")
    if if_ip and if_ip not in (server["host_ip"], server["server_id"]):
        raise RankTableError(f"{source}: HCCL_IF_IP={if_ip} but this node's server entry is "
                             f"{server['server_id']} (host_ip {server['host_ip']})")
    return server


def check_rank_table_env(launch: LaunchInfo, env: dict[str, str] | None = None) -> dict | None:
    """If RANK_TABLE_FILE is set: read it and check it against the launch (else None)."""
    env = os.environ if env is None else env
    path = env.get("RANK_TABLE_FILE")
    if not path:
        return None
    if os.path.islink(path):
        raise RankTableError(f"RANK_TABLE_FILE={path} is a symbolic link (to {os.path.realpath(path)}); torch_npu "
                             "refuses a linked rank table: point RANK_TABLE_FILE at the real file")
    if not os.path.isfile(path):
        raise RankTableError(f"RANK_TABLE_FILE={path} does not exist")
    with open(path) as f:
        servers = parse_rank_table(f.read(), source=f"rank table {path}")
    return check_rank_table(servers, launch, env, source=f"rank table {path}")


# ---------------------------------------------------------------- NPU environment

# Set by the trainer unless the environment already has them (the environment overrides).
NPU_ENV_DEFAULTS: dict[str, str] = {
    "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",  # less fragmentation with ZeRO's varying buffers
    "TASK_QUEUE_ENABLE": "2",  # torch_npu's two-stage operator dispatch pipeline
    "CPU_AFFINITY_CONF": "1",  # bind each rank's host threads to the cores near its NPU
}
HCCL_CONNECT_TIMEOUT_RANK_TABLE = "1200"  # s; HCCL's 120 s default is short for many nodes starting unevenly


def npu_env_defaults(env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables the trainer sets for NPU runs: those of NPU_ENV_DEFAULTS the environment lacks,
    plus HCCL_CONNECT_TIMEOUT when a rank table is used. Read by torch_npu/HCCL at import and
    initialisation, so they are set before torch_npu is imported."""
    env = os.environ if env is None else env
    out = {k: v for k, v in NPU_ENV_DEFAULTS.items() if k not in env}
    if env.get("RANK_TABLE_FILE") and "HCCL_CONNECT_TIMEOUT" not in env:
        out["HCCL_CONNECT_TIMEOUT"] = HCCL_CONNECT_TIMEOUT_RANK_TABLE
    return out


def apply_npu_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Set npu_env_defaults() in os.environ when torch_npu is installed; returns what was set."""
    if importlib.util.find_spec("torch_npu") is None:
        return {}
    extra = npu_env_defaults(env)
    os.environ.update(extra)
    return extra


# ---------------------------------------------------------------- devices


def detect_device(requested: str = "auto") -> str:
    """'npu' | 'cuda' | 'cpu'. 'auto' prefers torch_npu (as DeepSpeed does), then CUDA, then CPU."""
    import torch

    def npu_ok() -> bool:
        if importlib.util.find_spec("torch_npu") is None:
            return False
        import torch_npu  # noqa: F401  (registers torch.npu)

        return torch.npu.is_available()

    if requested == "npu":
        if not npu_ok():
            raise ConfigError("parallel.device=npu but torch_npu is not installed or sees no NPU")
        return "npu"
    if requested == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("parallel.device=cuda but torch.cuda.is_available() is False")
        return "cuda"
    if requested == "cpu":
        return "cpu"
    if npu_ok():
        return "npu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def device_module(device_type: str):
    """torch.npu / torch.cuda (memory stats, synchronize, set_device), or None for CPU."""
    import torch

    return getattr(torch, device_type) if device_type in ("npu", "cuda") else None


def device_name(device_type: str) -> str:
    """The name the peak-FLOPS table matches, e.g. 'Ascend910B1', 'NVIDIA H200', or the CPU model."""
    mod = device_module(device_type)
    if mod is not None:
        return str(mod.get_device_name(mod.current_device()))
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "CPU " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


def synchronize(device_type: str) -> None:
    """Wait for queued device work (host-device sync; timing only)."""
    mod = device_module(device_type)
    if mod is not None:
        mod.synchronize()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class DistContext:
    launch: LaunchInfo
    device_type: str
    device: object  # torch.device
    backend: str
    control_group: object  # a gloo group for host-side flags and barriers (no device sync)
    rank_table_server: dict | None = None

    @property
    def rank(self) -> int:
        return self.launch.rank

    @property
    def world_size(self) -> int:
        return self.launch.world_size

    @property
    def is_main(self) -> bool:
        return self.launch.rank == 0


# ---------------------------------------------------------------- host network interfaces


def _interfaces() -> list[str]:
    return sorted(name for _, name in socket.if_nameindex())


def check_socket_ifnames(env: dict[str, str] | None = None, interfaces: list[str] | None = None) -> dict[str, str]:
    """Check GLOO_SOCKET_IFNAME (gloo: the control group and CPU runs) and HCCL_SOCKET_IFNAME (HCCL's host
    socket) against this host's interfaces before any process group starts: a wrong name otherwise fails
    deep inside gloo ("Unable to find address") or HCCL. The launch stage sets both to the interface of
    the launch host address; an exported value overrides it. Returns the variables that are set.

    GLOO_SOCKET_IFNAME: comma-separated exact names. HCCL_SOCKET_IFNAME: comma-separated; `=name`
    exact, `name` a prefix, a leading `^` excludes (nothing to check then)."""
    env = os.environ if env is None else env
    have = _interfaces() if interfaces is None else interfaces
    out = {}
    gloo = env.get("GLOO_SOCKET_IFNAME")
    if gloo:
        missing = [n for n in (x.strip() for x in gloo.split(",")) if n and n not in have]
        if missing:
            raise ConfigError(f"GLOO_SOCKET_IFNAME={gloo}: no interface {', '.join(missing)} on this host "
                              f"(interfaces: {', '.join(have)})")
        out["GLOO_SOCKET_IFNAME"] = gloo
    hccl = env.get("HCCL_SOCKET_IFNAME")
    if hccl:
        if not hccl.startswith("^"):
            wanted = [x.strip() for x in hccl.split(",") if x.strip()]
            if not any(n[1:] in have if n.startswith("=") else any(i.startswith(n) for i in have) for n in wanted):
                raise ConfigError(f"HCCL_SOCKET_IFNAME={hccl} matches no interface on this host "
                                  f"(interfaces: {', '.join(have)})")
        out["HCCL_SOCKET_IFNAME"] = hccl
    return out


def check_visible_devices(launch: LaunchInfo, env: dict[str, str] | None = None) -> int | None:
    """The physical device id behind this process's device (local index LOCAL_RANK among the visible
    devices), or None when nothing restricts them. More processes than visible devices is refused."""
    env = os.environ if env is None else env
    vis = visible_devices(env)
    if vis is None:
        return None
    if launch.local_world_size > len(vis):
        names = ", ".join(f"{k}={env[k]}" for k in (*CONTAINER_DEVICE_VARS, "ASCEND_RT_VISIBLE_DEVICES")
                          if env.get(k))
        raise ConfigError(f"torchrun starts {launch.local_world_size} processes on this node (--nproc_per_node) but "
                          f"only {len(vis)} NPUs are visible ({names}); launch --nproc_per_node {len(vis)}")
    return vis[launch.local_rank]


def start_process_group(requested_device: str = "auto", timeout_s: int = 1800):
    """Check the rank table, pick the device, start torch.distributed on the device backend.
    (launch, rank-table server, device type, device, backend); shared by training and the pre-flight."""
    launch = launch_info()
    server = check_rank_table_env(launch)  # before any collective: a bad table must not hang us
    ifnames = check_socket_ifnames()
    if ifnames and launch.is_main:
        log.info("host sockets: %s", ", ".join(f"{k}={v}" for k, v in ifnames.items()))
    apply_npu_env()  # no-op when train/bench set them already, before importing torch

    device_type = detect_device(requested_device)
    # DeepSpeed picks its accelerator at import; make it agree with our choice.
    os.environ["DS_ACCELERATOR"] = device_type
    if not launch.torchrun:
        os.environ.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                           "MASTER_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"),
                           "MASTER_PORT": os.environ.get("MASTER_PORT", str(_free_port()))})

    import torch
    import torch.distributed as dist

    mod = device_module(device_type)
    if mod is not None:
        if device_type == "npu":
            check_visible_devices(launch)  # local index LOCAL_RANK among the visible devices
        mod.set_device(launch.local_rank)
        device = torch.device(device_type, launch.local_rank)
    else:
        device = torch.device("cpu")
    backend = BACKENDS[device_type]
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout_s))
    return launch, server, device_type, device, backend


def init_distributed(requested_device: str = "auto", timeout_s: int = 1800) -> DistContext:
    """The process group (start_process_group), a gloo control group, and DeepSpeed's view of it."""
    import torch.distributed as dist

    launch, server, device_type, device, backend = start_process_group(requested_device, timeout_s)
    timeout = datetime.timedelta(seconds=timeout_s)
    control = dist.new_group(backend="gloo", timeout=timeout) if backend != "gloo" else dist.group.WORLD

    import deepspeed

    if device_type == "cpu":
        _skip_deepspeed_cpu_shm_comm()
    deepspeed.init_distributed(dist_backend=backend, auto_mpi_discovery=False, timeout=timeout)
    return DistContext(launch, device_type, device, backend, control, server)


def _skip_deepspeed_cpu_shm_comm() -> None:
    """DeepSpeed's CPU accelerator JIT-compiles a shared-memory all-reduce op (about a minute, needs
    g++) the first time a process group starts. Our CPU runs (tests, the simulated cluster) use
    plain gloo: mark the op unavailable so it is never built."""
    import deepspeed.ops

    try:
        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    except (AttributeError, TypeError):  # other DeepSpeed versions: nothing to skip
        pass


def all_agree_flag(flag: bool, ctx: DistContext) -> bool:
    """True on every rank if any rank has the flag set (host-side, over the gloo control group)."""
    import torch
    import torch.distributed as dist

    if ctx.world_size == 1:
        return flag
    t = torch.tensor([1 if flag else 0], dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=ctx.control_group)
    return bool(t[0])  # CPU tensor: no device sync


def barrier(ctx: DistContext) -> None:
    import torch.distributed as dist

    if ctx.world_size > 1:
        dist.barrier(group=ctx.control_group)


def broadcast_object(obj, ctx: DistContext, src: int = 0):
    import torch.distributed as dist

    if ctx.world_size == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src, group=ctx.control_group)
    return box[0]


def all_gather_object(obj, ctx: DistContext) -> list:
    import torch.distributed as dist

    if ctx.world_size == 1:
        return [obj]
    out: list = [None] * ctx.world_size
    dist.all_gather_object(out, obj, group=ctx.control_group)
    return out


def shutdown() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
