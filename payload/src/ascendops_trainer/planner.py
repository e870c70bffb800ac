"""The memory planner: spend each device's memory on speed, and say why.

Given the model's shape, the sequence length, the micro-batch, the data-parallel world (nodes x devices)
and the device's memory, it chooses - for every setting the job leaves on auto; an explicit setting is
kept as given - and gives one reason per choice:

- ZeRO stage: the LOWEST stage that fits. ZeRO-1 (with bf16 weights and fp32 accumulation: DeepSpeed's
  BF16_Optimizer) keeps full fp32 gradients and reduces them ONCE per optimizer step; ZeRO-2 shards them
  and reduce-scatters every micro-step; ZeRO-3 also gathers the weights in every forward and backward.
  ZeRO-1 is tried only where that one reduce per step buys something: more than one data-parallel rank AND
  more than one micro-step per optimizer step (stage_order). Otherwise ZeRO-2 is the lowest stage tried: it
  holds the same weights and optimizer state as ZeRO-1 and less gradient memory, and reduces exactly as
  often (one rank: nothing crosses a link; one micro-step: both reduce once per step); stage_order.
- recompute: the least that fits, in the order of its cost in extra forward FLOPs: none; selective (keep
  the matmul outputs, rebuild norms, attention core and SwiGLU: no matmul recomputed; only where the model
  supports it); every k-th decoder layer (k from the number of layers down, each step recomputing more
  layers); full (every layer). A lower stage is preferred over less recompute, as the issue asks ("1
  when it fits"); the plan names what the next stage would have allowed.
- buckets: the gradient reduce bucket holds about two decoder layers' gradients (a reduce starts while
  backward goes on; fewer, larger collectives), the ZeRO-3 prefetch bucket one layer's weights; both at
  most DeepSpeed's 5e8 elements. Where memory is short they are halved (twice at most) before any
  recompute is added: smaller buckets cost less than recomputing layers.
- gradient communication dtype (accumulation stays fp32): fp32 where gradients are reduced once per step
  (ZeRO-1, or one micro-step per step) or nothing is sent (one rank): the sum is kept exact; bf16 where
  ZeRO-2/3 reduce(-scatter) every micro-step across ranks (grad_accum > 1): half the traffic and bucket memory, and each
  micro-step's reduced gradient is rounded once before it is accumulated in fp32, so rounding does not
  compound over the accumulation.

Memory per device is memory.py's model (weights, gradients, optimizer state, the hpZ copy, buckets,
activations including the chunked loss's fp32 logits and gradient); a plan fits when it stays within
FIT_FRACTION of the device. When even the smallest configuration (ZeRO-3, full recompute, smallest
buckets, bf16 communication, no hpZ copy) does not fit, the planner refuses, with the numbers and the
smallest data-parallel world that would fit: this trainer has no tensor or pipeline parallelism.

Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .memory import FIT_FRACTION, GIB, MemoryEstimate, estimate_memory, layer_params

MAX_BUCKET = 500_000_000  # elements: DeepSpeed's default reduce bucket, the largest the planner chooses
MIN_BUCKET = 1_000_000
BUCKET_STEPS = (1, 2, 4)  # the preferred bucket sizes divided by these, before more recompute


class PlanError(ValueError):
    """The model does not fit the devices at all (without model parallelism)."""


@dataclass(frozen=True)
class Recompute:
    mode: str  # none | selective | every | full
    every: int = 1  # mode every: layers 0, k, 2k... are recomputed

    def recomputed_layers(self, layers: int) -> int:
        if self.mode == "full":
            return layers
        if self.mode == "every":
            return len(range(0, layers, self.every))
        return 0

    def label(self, layers: int) -> str:
        if self.mode == "every":
            return f"every {_ordinal(self.every)} layer ({self.recomputed_layers(layers)} of {layers})"
        return {"none": "none", "selective": "selective (norms, attention core, SwiGLU)",
                "full": f"full (all {layers} layers)"}[self.mode]

    @property
    def checkpointing(self) -> bool:
        return self.mode in ("every", "full")

    @property
    def checkpoint_every(self) -> int:
        return self.every if self.mode == "every" else 1


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def recompute_options(layers: int, selective: bool) -> list[Recompute]:
    """From the cheapest to the most memory-saving (each 'every' option recomputes more layers)."""
    out = [Recompute("none")] + ([Recompute("selective")] if selective else [])
    seen = set()
    for k in range(layers, 1, -1):
        n = len(range(0, layers, k))
        if n not in seen and n < layers:
            seen.add(n)
            out.append(Recompute("every", k))
    return out + [Recompute("full")]


def recompute_from(activation_checkpointing: bool | None, checkpoint_every: int | None, layers: int
                   ) -> Recompute | None:
    """The user's explicit recompute, or None when the planner chooses (both on auto)."""
    if activation_checkpointing is False:
        return Recompute("none")
    if activation_checkpointing is None and checkpoint_every is None:
        return None
    k = checkpoint_every or 1
    return Recompute("full") if k == 1 else Recompute("every", k)


@dataclass(frozen=True)
class PlanInputs:
    hf_config: object  # a LlamaConfig (shape only)
    n_params: int
    seq_len: int
    micro_batch: int
    dp_size: int  # nodes x devices per node (data parallel: no model parallelism here)
    devices_per_node: int
    device_bytes: int | None
    precision: str = "bf16"
    grad_accum_dtype: str = "fp32"
    grad_accum: int = 1  # micro-steps per optimizer step
    loss_chunk_tokens: int = 4096
    selective_available: bool = False  # the model can rebuild norms/attention/SwiGLU only
    # explicit settings (None = the planner's choice)
    stage: int | None = None
    recompute: Recompute | None = None
    reduce_bucket: int | None = None
    prefetch_bucket: int | None = None
    comm_dtype: str | None = None
    hpz: int | None = None  # zero_hpz_partition_size; None = auto (devices per node when it fits)


@dataclass(frozen=True)
class Plan:
    stage: int
    hpz: int
    recompute: Recompute
    reduce_bucket: int
    prefetch_bucket: int
    comm_dtype: str
    estimate: MemoryEstimate
    device_bytes: int | None
    fits: bool
    reasons: tuple[str, ...] = field(default=())

    def lines(self) -> list[str]:
        return [f"memory plan: {r}" for r in self.reasons]


def _round_up(n: float, to: int = MIN_BUCKET) -> int:
    return max(int(-(-n // to) * to), to)


def preferred_buckets(hf_config) -> tuple[int, int]:
    """(reduce, prefetch) elements: two decoder layers' gradients, one layer's weights, within the bounds."""
    layer = layer_params(hf_config)
    return min(_round_up(2 * layer), MAX_BUCKET), min(_round_up(layer), MAX_BUCKET)


def stage_order(dp_size: int, grad_accum: int) -> tuple[list[int], str | None]:
    """The ZeRO stages auto tries, lowest first, and why ZeRO-1 is left out (None: it is tried).

    ZeRO-1 and ZeRO-2 hold the same weights and the same sharded optimizer state; ZeRO-2 also shards the
    gradients. What ZeRO-1 buys is communication: with gradient accumulation DeepSpeed's ZeRO-1 keeps full
    gradients, accumulates them locally and reduces once, at the optimizer-step boundary, where ZeRO-2
    reduce-scatters after every micro-step. That only counts with more than one data-parallel rank (one rank
    has nothing to send) and more than one micro-step per step (with one, both reduce once per step). Where
    it does not count, ZeRO-2 is chosen: never more memory, never more traffic. (On the debug model's CPU
    bench, one rank and gloo, ZeRO-1 once measured 0.85x of plain PyTorch and ZeRO-2 0.99x; a profile puts
    DeepSpeed's own per-step work at a few percent of the step for either stage, so that gap was the shared
    machine's load, not ZeRO-1: docs/benchmarks.md. The rule rests on memory and traffic, not on that run.)
    ZeRO-0 is not chosen on one rank either: bf16 with fp32 gradient accumulation needs a ZeRO optimizer, and
    a resume on more ranks keeps the checkpoint's stage (its optimizer state is laid out for it).
    """
    if dp_size > 1 and grad_accum > 1:
        return [1, 2, 3], None
    if dp_size <= 1:
        why = "one data-parallel rank: nothing to reduce across ranks"
    else:
        why = "one micro-step per optimizer step: ZeRO-2 reduces once per step too"
    return [2, 3], (f"ZeRO-1 not tried ({why}; it would hold the same weights and optimizer state as ZeRO-2 "
                    "plus full gradients)")


def choose_comm_dtype(stage: int, grad_accum: int, precision: str, grad_accum_dtype: str,
                      dp_size: int = 2) -> tuple[str, str]:
    """(dtype, why) of the gradient communication."""
    if precision != "bf16":
        return "fp32", "fp32 training: gradients are fp32 throughout"
    if grad_accum_dtype == "bf16":
        return "bf16", "train.grad_accum_dtype is bf16: nothing finer to send"
    if dp_size <= 1:  # bf16 would round every micro-step's gradient and save no traffic
        return "fp32", "one data-parallel rank: nothing crosses a link, keep the gradients exact"
    if stage <= 1 or grad_accum == 1:
        once = "ZeRO-1 reduces" if stage <= 1 else "one micro-step per step: ZeRO reduces"
        return "fp32", f"{once} the fp32-accumulated gradients once per optimizer step: keep them exact"
    return "bf16", (f"ZeRO-{stage} reduce-scatters every one of the {grad_accum} micro-steps: bf16 halves that "
                     "traffic and the buckets; each micro-step's reduced gradient is rounded once, then "
                     "accumulated in fp32")


def _estimate(inp: PlanInputs, stage: int, rc: Recompute, rb: int, pb: int, comm: str, hpz: int) -> MemoryEstimate:
    return estimate_memory(inp.hf_config, inp.n_params, stage, inp.dp_size, inp.precision, inp.grad_accum_dtype,
                           hpz, rb, pb, inp.seq_len, inp.micro_batch, rc.checkpointing, rc.checkpoint_every,
                           inp.loss_chunk_tokens, comm, rc.mode == "selective")


def _fits(est: MemoryEstimate, device_bytes: int | None) -> bool:
    return device_bytes is None or est.total <= FIT_FRACTION * device_bytes


def _gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def _hpz_candidate(inp: PlanInputs) -> int:
    if inp.hpz:
        return inp.hpz
    return inp.devices_per_node if inp.dp_size > inp.devices_per_node else 1


def floor_estimate(inp: PlanInputs, dp_size: int | None = None) -> MemoryEstimate:
    """The least memory any setting allows: ZeRO-3, full recompute, smallest buckets, bf16 communication."""
    rb, pb = preferred_buckets(inp.hf_config)
    smallest = _round_up(rb / BUCKET_STEPS[-1]), _round_up(pb / BUCKET_STEPS[-1])
    comm = "bf16" if inp.precision == "bf16" else "fp32"
    other = PlanInputs(**{**inp.__dict__, "dp_size": dp_size or inp.dp_size})
    return _estimate(other, 3, Recompute("full"), smallest[0], smallest[1], comm, 1)


def _refusal(inp: PlanInputs, floor: MemoryEstimate) -> str:
    dev = inp.device_bytes or 0
    step = max(inp.devices_per_node, 1)
    lo, hi = 1, 1_048_576 // step  # in nodes; the floor only falls as devices are added
    need = None
    if _fits(floor_estimate(inp, hi * step), dev):
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _fits(floor_estimate(inp, mid * step), dev) else (mid + 1, hi)
        need = lo * step
    nodes = f"{inp.dp_size // step} nodes x {step} devices" if inp.dp_size % step == 0 else f"{inp.dp_size} devices"
    more = (f"it fits from {need} devices ({need // step} nodes of {step})" if need
            else "no number of devices fits (the per-device floor - largest layer gathered, activations, loss "
                 "chunk - alone exceeds the device)")
    return (f"the model ({inp.n_params / 1e9:.1f}B parameters) cannot fit {nodes} of {_gib(dev)} at seq "
            f"{inp.seq_len}, micro-batch {inp.micro_batch}: even ZeRO-3 with full recompute, the smallest buckets "
            f"and bf16 gradient communication needs {floor.line(dev)} (the budget is {FIT_FRACTION:.0%} of the "
            f"device); {more}. This trainer has no tensor or pipeline parallelism: add devices, or shorten "
            "data.seq_len / train.micro_batch_size")


def plan(inp: PlanInputs) -> Plan:
    """The plan for these inputs (module docstring). Raises PlanError when nothing fits."""
    layers = inp.hf_config.num_hidden_layers
    dev = inp.device_bytes
    reasons: list[str] = []
    if dev is not None:
        floor = floor_estimate(inp)
        if not _fits(floor, dev):
            raise PlanError(_refusal(inp, floor))
    if dev is None:  # nothing to plan against: the safe settings (ZeRO-3, full recompute) unless set
        stage = 3 if inp.stage is None else inp.stage
        rc = inp.recompute or Recompute("full")
        rb = inp.reduce_bucket or preferred_buckets(inp.hf_config)[0]
        pb = preferred_buckets(inp.hf_config)[1] if inp.prefetch_bucket is None else inp.prefetch_bucket
        comm, comm_why = (inp.comm_dtype, "as set") if inp.comm_dtype else choose_comm_dtype(
            stage, inp.grad_accum, inp.precision, inp.grad_accum_dtype, inp.dp_size)
        hpz = _hpz_candidate(inp) if stage == 3 else 1
        est = _estimate(inp, stage, rc, rb, pb, comm, hpz)
        return Plan(stage, hpz, rc, rb, pb, comm, est, None, True, (
            f"device memory unknown: ZeRO-{stage}, recompute {rc.label(layers)}, reduce bucket {rb / 1e6:.0f}M, "
            f"gradient communication {comm} ({comm_why})",))
    stages, skipped = ([inp.stage], None) if inp.stage is not None else stage_order(inp.dp_size, inp.grad_accum)
    recomputes = [inp.recompute] if inp.recompute is not None else recompute_options(
        layers, inp.selective_available)
    pref_rb, pref_pb = preferred_buckets(inp.hf_config)
    rb_opts = [inp.reduce_bucket] if inp.reduce_bucket else [_round_up(pref_rb / d) for d in BUCKET_STEPS]
    pb_opts = [inp.prefetch_bucket] if inp.prefetch_bucket is not None else [
        _round_up(pref_pb / d) for d in BUCKET_STEPS]
    buckets = list(zip(rb_opts, pb_opts, strict=True)) if len(rb_opts) == len(pb_opts) else [
        (rb, pb) for rb in rb_opts for pb in pb_opts]

    chosen = None
    rejected: list[str] = []
    for stage in stages:
        comm, comm_why = (inp.comm_dtype, "as set (parallel.grad_comm_dtype)") if inp.comm_dtype else \
            choose_comm_dtype(stage, inp.grad_accum, inp.precision, inp.grad_accum_dtype, inp.dp_size)
        hpz_try = _hpz_candidate(inp) if stage == 3 else 1
        best = None
        for rc in recomputes:
            for rb, pb in buckets:
                est = _estimate(inp, stage, rc, rb, pb, comm, hpz_try)
                if _fits(est, dev):
                    best = (rc, rb, pb, est)
                    break
            if best:
                break
        if best is None and stage == 3 and hpz_try > 1 and inp.hpz is None:  # without the hpZ copy?
            for rc in recomputes:
                for rb, pb in buckets:
                    est = _estimate(inp, stage, rc, rb, pb, comm, 1)
                    if _fits(est, dev):
                        best, hpz_try = (rc, rb, pb, est), 1
                        reasons.append("hpZ: the node-local weight copy would not fit: left off")
                        break
                if best:
                    break
        if best is None:
            most = _estimate(inp, stage, recomputes[-1], buckets[-1][0], buckets[-1][1], comm, hpz_try)
            rejected.append(f"ZeRO-{stage} does not fit even with recompute {recomputes[-1].label(layers)}: "
                            f"{_gib(most.total)}")
            continue
        chosen = (stage, comm, comm_why, hpz_try, best)
        break

    if chosen is None:  # the user's explicit settings rule out every fitting plan: keep them, warn
        stage = stages[-1]
        comm, comm_why = (inp.comm_dtype, "as set") if inp.comm_dtype else choose_comm_dtype(
            stage, inp.grad_accum, inp.precision, inp.grad_accum_dtype, inp.dp_size)
        rc, (rb, pb) = recomputes[-1], buckets[-1]
        hpz = _hpz_candidate(inp) if stage == 3 else 1
        est = _estimate(inp, stage, rc, rb, pb, comm, hpz)
        reasons += rejected
        reasons.append(f"WARNING: the estimate ({_gib(est.total)} per device) exceeds the budget "
                       f"({FIT_FRACTION:.0%} of {_gib(dev or 0)}) with the explicit settings: expect out-of-memory; "
                       "set them to auto, use more devices or a shorter sequence / smaller micro-batch")
        return Plan(stage, hpz, rc, rb, pb, comm, est, dev, False, tuple(reasons))

    stage, comm, comm_why, hpz, (rc, rb, pb, est) = chosen
    budget = f"{_gib(int(FIT_FRACTION * dev))} budget" if dev else "device memory unknown"
    if inp.stage is not None:
        reasons.insert(0, f"ZeRO-{stage}: as set (parallel.zero_stage)")
    else:
        why = {1: "fits: full fp32 gradients, one reduce per optimizer step",
               2: "the lowest stage that fits: gradients sharded, reduce-scattered every micro-step",
               3: "the only stage that fits: weights gathered in forward and backward"}[stage]
        if stage == 2 and skipped and not rejected:
            why = "fits: gradients sharded"
        reasons.insert(0, f"ZeRO-{stage}: {why} ({_gib(est.total)} of the {budget})"
                       + (f"; {skipped}" if skipped else "") + (f"; {'; '.join(rejected)}" if rejected else ""))
    if inp.recompute is not None:
        reasons.append(f"recompute {rc.label(layers)}: as set (model.activation_checkpointing/checkpoint_every)")
    else:
        less = recomputes[:recomputes.index(rc)]
        reasons.append(f"recompute {rc.label(layers)}: " + (
            "nothing to recompute, the activations fit" if rc.mode == "none" else
            f"the least that fits ({less[-1].label(layers)} would need more)"))
        if stage < 3 and rc.mode != "none" and inp.stage is None:
            nxt = _estimate(inp, stage + 1, Recompute("none"), rb, pb, comm, _hpz_candidate(inp) if stage == 2 else 1)
            if _fits(nxt, dev):
                reasons.append(f"(ZeRO-{stage + 1} would fit without recompute, {_gib(nxt.total)}: set "
                               f"parallel.zero_stage {stage + 1} and compare with `ascendops-train bench`)")
    shrunk = "" if (rb, pb) == (pref_rb, pref_pb) or inp.reduce_bucket else ", halved to fit"
    rb_why = "as set" if inp.reduce_bucket else f"about two decoder layers' gradients{shrunk}"
    reasons.append(f"reduce bucket {rb / 1e6:.0f}M elements ({rb_why})"
                   + (f", prefetch bucket {pb / 1e6:.0f}M ("
                      + ("as set" if inp.prefetch_bucket is not None else "one decoder layer's weights") + ")"
                      if stage == 3 else ""))
    reasons.append(f"gradient communication {comm} ({comm_why}); accumulation "
                   f"{'fp32' if inp.precision != 'bf16' or inp.grad_accum_dtype == 'fp32' else 'bf16'}")
    if stage == 3 and hpz > 1 and inp.hpz is None:
        reasons.append(f"hpZ: partition size {hpz} (the devices per node): weight gathers stay in the node")
    return Plan(stage, hpz, rc, rb, pb, comm, est, dev, True, tuple(reasons))
