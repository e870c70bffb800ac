"""The training job (`ascendops-train train`): `Runtime` (what train and bench set up) and `Trainer`
(set-up, train_step, evaluate, save, train; the shape of torchtitan's trainer.py).

One optimizer step = `grad_accum` micro-steps of `micro_batch_size` sequences on every data-parallel
rank. DeepSpeed (ZeRO, bf16, fp32 gradient accumulation, clipping) does the numerics; this file wires data,
checkpoints, signals, evaluation and metrics around it. Host-device syncs are marked `# SYNC:`; there
are none in the step itself, only at log intervals, evaluations, checkpoints and the end.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import signal
import time
import warnings
from dataclasses import dataclass
from typing import Any

from .config import ConfigError, JobConfig, grad_accum_steps
from .status import EXIT_NONFINITE, EXIT_STOPPED, GRACE_ENV, RunStatus

log = logging.getLogger("ascendops_trainer")

EXIT_PREEMPTED = EXIT_STOPPED  # 128 + SIGTERM: stopped on request after saving a checkpoint


class StopFlag:
    """Set by SIGTERM; the loop checks it between micro-steps, saves and exits."""

    def __init__(self):
        self.set_by: int | None = None

    def __call__(self, signum, _frame):
        self.set_by = signum

    def install(self) -> StopFlag:
        signal.signal(signal.SIGTERM, self)
        return self

    @property
    def is_set(self) -> bool:
        return self.set_by is not None


def setup_logging(is_main: bool) -> None:
    """INFO for the process that logs for its node (local rank 0), warnings only for the others."""
    # torch warns on every ZeRO collective that DeepSpeed calls all_gather_into_tensor /
    # reduce_scatter_tensor by their old names; harmless, and it would drown the metric lines.
    warnings.filterwarnings("ignore", message=r"`torch\.distributed\.\w+` is deprecated", category=FutureWarning)
    logging.basicConfig(level=logging.INFO if is_main else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    for noisy in ("DeepSpeed", "deepspeed", "torch.distributed", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


TORCHRUN_GRACE_S = 30.0  # torchrun's SIGTERM -> SIGKILL time for its workers (before --shutdown-timeout)


def grace_period(cfg: JobConfig, env: dict[str, str] | None = None) -> tuple[float, str]:
    """(seconds a save on SIGTERM may take before the worker is killed, where that number comes from)."""
    env = os.environ if env is None else env
    if cfg.checkpoint.grace_period_s:
        return cfg.checkpoint.grace_period_s, "checkpoint.grace_period_s"
    try:
        launcher = float(env.get(GRACE_ENV, ""))
    except ValueError:
        launcher = 0.0
    if launcher > 0:
        return launcher, f"ascendops-train launch --grace-s, {GRACE_ENV}"
    return TORCHRUN_GRACE_S, "torchrun's default; run under `ascendops-train launch --grace-s N` for more"


def _lm_head(model):
    """The lm_head of a LlamaForCausalLM, also through a DeepSpeed engine or DDP wrapper."""
    return getattr(model, "module", model).lm_head


def packed_attention_kwargs(positions, device_type: str, device, max_sequences: int | None = None) -> dict[str, Any]:
    """Model kwargs for a packed micro-batch (document masking), from the loader's host-side position
    ids ([micro, seq + 1] CPU tensor): position ids plus transformers' varlen flash-attention kwargs
    (cu_seq_lens_q/k, max_length_q/k), computed here once per micro-batch. Without them transformers
    derives them from position_ids in every layer, with a device -> host copy each time (on NPU its
    npu_fusion_attention wrapper reads the lengths on the host: given CPU tensors, that read costs no
    sync). On CUDA the lengths go to the device (flash_attn reads them there); copies, no sync."""
    import torch

    from .data import pack_layout
    from .kernels import NPU_FA_MAX_SEQUENCES

    layout = pack_layout(positions.numpy(), max_sequences or NPU_FA_MAX_SEQUENCES)
    if layout.merged:
        log.warning("packed micro-batch holds more than %d documents: %d short ones merged into their "
                    "neighbours (the fused attention kernel's limit; lower train.micro_batch_size to avoid it)",
                    max_sequences or NPU_FA_MAX_SEQUENCES, layout.merged)
    cu = torch.from_numpy(layout.cu_seqlens)
    if device_type == "cuda":
        cu = cu.to(device, non_blocking=True)
    return {"position_ids": torch.from_numpy(layout.position_ids).to(device, non_blocking=True),
            "cu_seq_lens_q": cu, "cu_seq_lens_k": cu, "max_length_q": layout.max_len,
            "max_length_k": layout.max_len}


def causal_lm_loss(engine_or_model, batch, position_ids=None, packed: dict[str, Any] | None = None):
    """Mean next-token cross-entropy of a [micro, seq + 1] batch, softmax in fp32 (bf16 logsumexp is
    lossy, and absent on NPU).

    With model.loss_chunk_tokens the lm_head computes the loss itself, chunk by chunk (kernels.py):
    the full [tokens x vocab] fp32 logits never exist. With position_ids ([micro, seq + 1], restarting
    at every document: document masking) the micro-batch is packed into one row of micro x seq
    inputs whose positions restart at every sample and document; transformers then hands the implied
    sequence lengths to the varlen flash-attention kernel, so attention stays inside each document.
    """
    import torch.nn.functional as F

    inputs, targets = batch[:, :-1], batch[:, 1:]
    kwargs = {}
    if packed is not None:  # packed_attention_kwargs: position ids and the varlen lengths, computed once
        inputs, targets = inputs.reshape(1, -1), targets.reshape(1, -1)
        kwargs.update(packed)
    elif position_ids is not None:
        inputs, targets = inputs.reshape(1, -1), targets.reshape(1, -1)
        kwargs["position_ids"] = position_ids[:, :-1].reshape(1, -1)  # the last token is only a target
    from .llama import is_native

    if is_native(engine_or_model):  # the native model computes the loss itself (chunked or not)
        return engine_or_model(input_ids=inputs, targets=targets, **kwargs).loss
    head = _lm_head(engine_or_model)
    if hasattr(head, "_ascendops_targets"):
        head._ascendops_targets = targets
        try:
            return engine_or_model(input_ids=inputs, **kwargs).logits  # the loss (a scalar), see kernels.py
        finally:
            head._ascendops_targets = None
    logits = engine_or_model(input_ids=inputs, **kwargs).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1))


PLANNED_KEYS = (("model", "activation_checkpointing"), ("model", "checkpoint_every"),
                ("parallel", "reduce_bucket_size"), ("parallel", "prefetch_bucket_size"),
                ("parallel", "grad_comm_dtype"))


def _planned_settings(cfg: JobConfig) -> dict[tuple[str, str], Any]:
    """The planner's settings as the job set them (None / auto: the planner chooses)."""
    return {(sec, name): getattr(getattr(cfg, sec), name) for sec, name in PLANNED_KEYS}


@dataclass
class Runtime:
    """What `train` and `bench` both set up, once: the process group, precision, model config, the memory
    plan (ZeRO stage, hpZ), FLOPs per token and the device's peak. Built by Runtime.create."""

    cfg: JobConfig
    ctx: Any  # parallel.DistContext
    precision: str
    grad_accum: int
    hf_config: Any  # transformers.LlamaConfig
    plan: Any  # engine.MemoryPlan
    flops_per_token: int
    device_name: str
    peak_tflops: float | None
    peak_source: str
    kernels: Any  # torch_npu (fused kernels) or None
    stage_auto: bool = False  # parallel.zero_stage was auto (the plan chose the stage)
    planned: dict[str, Any] | None = None  # the settings that were auto before the plan filled them in

    @classmethod
    def create(cls, cfg: JobConfig, resumed_implementation=None) -> Runtime:
        """`resumed_implementation(ctx)`: collective, the model implementation of the checkpoint this launch
        resumes (None: none), asked once the process group is up, for model.implementation auto (train passes
        it; bench resumes nothing)."""
        from .parallel import apply_npu_env, launch_info

        npu_env = apply_npu_env()  # before torch is imported: torch autoloads torch_npu, which reads them
        from .engine import device_memory_bytes, plan_memory, resolve_precision
        from .kernels import npu_kernels
        from .metrics import flops_per_token_for, resolve_peak_tflops
        from .model import build_hf_config, resolve_implementation
        from .parallel import device_name, init_distributed

        setup_logging(launch_info().is_node_main)  # each node's journal shows steps, saves and resumes
        if npu_env and launch_info().is_main:
            log.info("NPU environment set (export a variable to override it): %s", npu_env)
        ctx = init_distributed(cfg.parallel.device, cfg.parallel.dist_timeout_s)
        precision = resolve_precision(cfg.train.precision, ctx.device_type)
        ga = grad_accum_steps(cfg, ctx.world_size)
        if cfg.model.implementation == "auto":  # fixed before anything reads it (model config, saves, status)
            saved = resumed_implementation(ctx) if resumed_implementation is not None else None
            cfg.model.implementation, why = resolve_implementation(cfg.model, saved)
            if ctx.is_main:
                log.info("model.implementation auto: %s (%s)", cfg.model.implementation, why)
        hf_config = build_hf_config(cfg.model, ctx.device_type)
        stage_auto = cfg.parallel.zero_stage == "auto"
        planned = _planned_settings(cfg)  # what the plan fills in (auto), restored for a replan
        plan = plan_memory(cfg, hf_config, ctx.world_size, precision,
                           device_memory_bytes(ctx.device_type, ctx.launch.local_world_size),
                           ctx.launch.local_world_size)
        plan.apply(cfg)
        if ctx.is_main:
            for note in plan.notes:
                log.info("%s", note)
            log.info("memory estimate %s", plan.estimate.line(plan.device_bytes))
        dev = device_name(ctx.device_type)
        peak, peak_src = resolve_peak_tflops(cfg.metrics.peak_tflops, ctx.device_type, dev, precision)
        return cls(cfg, ctx, precision, ga, hf_config, plan, flops_per_token_for(hf_config, cfg.data.seq_len), dev,
                   peak, peak_src, npu_kernels() if ctx.device_type == "npu" else None, stage_auto, planned)

    def replan(self, stage: int) -> None:
        """Plan again with the ZeRO stage fixed (a resumed checkpoint's, when the stage was auto)."""
        from .engine import device_memory_bytes, plan_memory

        for (section, name), value in (self.planned or {}).items():  # the other choices are the planner's again
            setattr(getattr(self.cfg, section), name, value)
        self.cfg.parallel.zero_stage = stage
        ctx = self.ctx
        self.plan = plan_memory(self.cfg, self.hf_config, ctx.world_size, self.precision,
                                device_memory_bytes(ctx.device_type, ctx.launch.local_world_size),
                                ctx.launch.local_world_size)
        self.plan.apply(self.cfg)
        if ctx.is_main:
            for note in self.plan.notes:
                log.info("%s", note)
            log.info("memory estimate %s", self.plan.estimate.line(self.plan.device_bytes))

    def deepspeed_config(self, cfg: JobConfig | None = None) -> dict[str, Any]:
        """DeepSpeed's config for `cfg` (default: the job's; bench variants pass theirs)."""
        from .engine import deepspeed_config, load_override

        cfg = cfg or self.cfg
        hpz = self.plan.hpz if cfg.parallel.zero_stage == self.plan.stage else None
        return deepspeed_config(cfg, self.ctx.world_size, self.precision, load_override(cfg.parallel.deepspeed_config),
                                devices_per_node=self.ctx.launch.local_world_size, hpz=hpz)

    def build_engine(self, cfg: JobConfig | None = None, ds_config: dict[str, Any] | None = None):
        """Seeded model (same init on every rank) wrapped in a DeepSpeed engine with our AdamW and schedule."""
        import torch

        from .engine import build_engine
        from .model import build_model

        cfg = cfg or self.cfg
        ds_config = ds_config or self.deepspeed_config(cfg)
        seed_everything(cfg.train.seed)  # ZeRO-3 inits on rank 0 and broadcasts anyway
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float32
        model = build_model(cfg.model, self.hf_config, dtype, ds_config, device=self.ctx.device, kernels=self.kernels)
        return build_engine(model, cfg, ds_config, self.ctx.device_type)


class Trainer:
    """The training job, in the shape of torchtitan's trainer.py: __init__ sets everything up (runtime,
    data, checkpoints, engine, resume, metrics), train_step runs one optimizer step, evaluate and save do
    what they say, train runs the loop and returns the exit code (status.py), close tears down."""

    def __init__(self, cfg: JobConfig, status: RunStatus | None = None, stop: StopFlag | None = None):
        self.cfg = cfg
        self.status = status or RunStatus(None)
        self.stop = stop or StopFlag().install()  # before the slow start-up: a SIGTERM then still ends cleanly
        if not cfg.data.path:
            raise ConfigError("data.path is required: the directory written by `ascendops-train prepare`")
        self.ckpt = None
        self.rt = Runtime.create(cfg, self._resumed_implementation)
        self.ctx = self.rt.ctx
        self._setup_data()
        self._setup_checkpoints()
        self.ds_config = self.rt.deepspeed_config()  # after the checkpoint: a resume may fix the ZeRO stage
        if cfg.profile.enabled:  # the same switch turns on DeepSpeed's comms logger (a user JSON's wins)
            from .profile import comms_logger_config

            self.ds_config.setdefault("comms_logger", comms_logger_config(cfg.profile))
        if self.resume_plan is not None and self.resume_plan.universal:
            # DeepSpeed reads the universal layout (zero/<param>/...) only when the engine is built for it
            self.ds_config.setdefault("checkpoint", {})["load_universal"] = True
        self.engine = self.rt.build_engine(cfg, self.ds_config)
        self.step, self.tokens_seen = 0, 0
        self._resume()
        self._setup_metrics()
        self._setup_profiler()
        self._setup_loop_state()

    # ---------------------------------------------------------------- set-up

    def _setup_data(self) -> None:
        """Dataset and loader, checked before anything slow is built: a missing or too small training or
        validation split is a config error now, not after minutes of model build and resume."""
        from .data import DistributedLoader, TokenDataset

        cfg, ctx, hf = self.cfg, self.ctx, self.rt.hf_config
        try:
            self.dataset = TokenDataset(cfg.data.path)
        except (OSError, ValueError) as e:  # missing or foreign directory: no retry will fix it
            raise ConfigError(f"data.path: {e}") from None
        if self.dataset.vocab_size > hf.vocab_size:
            raise ConfigError(f"the tokenizer of {cfg.data.path} has {self.dataset.vocab_size} tokens but the model's "
                              f"vocabulary is {hf.vocab_size}; set --model.vocab_size or use a matching model")
        self.seq_len = cfg.data.seq_len
        if self.seq_len > hf.max_position_embeddings:
            log.warning("data.seq_len %d exceeds max_position_embeddings %d", self.seq_len,
                        hf.max_position_embeddings)
        from .model import attention_name, masks_documents

        self.attn = attention_name(cfg.model, hf, ctx.device_type)
        masks = masks_documents(cfg.model, hf)
        self.packed = cfg.data.document_masking and masks and self.dataset.has_boundaries
        if cfg.data.document_masking and not self.packed and ctx.is_main:
            log.info("document masking off: attention %s %s", self.attn, "cannot mask packed documents"
                     if not masks else "but the data has no document boundaries")
        micro = cfg.train.micro_batch_size
        try:
            self.loader = DistributedLoader(self.dataset, self.seq_len, micro, ctx.rank, ctx.world_size,
                                            cfg.train.seed, cfg.data.shuffle, positions=self.packed,
                                            global_batch=cfg.train.global_batch_size)
            self.val = TokenDataset(cfg.data.path, split="val") if cfg.train.eval_interval else None
            if self.val is not None:
                if self.val.num_tokens == 0:
                    raise ValueError(f"train.eval_interval is set but {cfg.data.path} has no validation split "
                                     "(prepare it with --val-fraction)")
                DistributedLoader(self.val, self.seq_len, micro, ctx.rank, ctx.world_size, cfg.train.seed,
                                  shuffle=False)  # raises when the split has less than one micro-step
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def _open_checkpoints(self, ctx) -> None:
        """Collective: the checkpoint manager (its start-up clean-up of unfinished saves done) and the
        checkpoint this launch resumes (self.resume_tag; None for a new job or checkpoint.resume false)."""
        from . import checkpoint as ck

        cfg = self.cfg
        if self.ckpt is None:
            self.ckpt = ck.CheckpointManager(cfg.checkpoint_dir, cfg.checkpoint.keep, cfg.checkpoint.shared_fs, ctx)
            self.resume_tag = self.ckpt.resume_tag() if cfg.checkpoint.resume else None

    def _resumed_implementation(self, ctx) -> str | None:
        """Collective (Runtime.create, model.implementation auto): the model implementation of the checkpoint this
        launch resumes, None when it resumes none."""
        self._open_checkpoints(ctx)
        return self.ckpt.saved_implementation(self.resume_tag) if self.resume_tag is not None else None

    def _setup_checkpoints(self) -> None:
        """The checkpoint manager and the checkpoint to resume from, refused early when incompatible (other
        ZeRO stage, other data, another world size that cannot be converted); converted to a universal
        checkpoint when the world size changed (checkpoint.resume_universal)."""
        from . import checkpoint as ck

        cfg = self.cfg
        self.hf_config_dict = self.rt.hf_config.to_dict()
        self._open_checkpoints(self.ctx)  # opened already where model.implementation was auto
        self.ckpt.hf_config_dict = self.hf_config_dict
        self.resume_plan: ck.ResumePlan | None = None
        if self.resume_tag is not None:
            saved_stage = self.ckpt.saved_zero_stage(self.resume_tag)
            if self.rt.stage_auto and saved_stage is not None and saved_stage != cfg.parallel.zero_stage:
                # ZeRO auto may choose differently from the run that wrote the checkpoint (another memory
                # model, another device): its optimizer state is sharded for its own stage, so keep that.
                if self.ctx.is_main:
                    log.info("ZeRO auto: resuming %s, which was saved with ZeRO-%d (auto would choose ZeRO-%d "
                             "now): keeping ZeRO-%d", self.resume_tag, saved_stage, cfg.parallel.zero_stage,
                             saved_stage)
                self.rt.replan(saved_stage)
            self.resume_plan, saved_state = self.ckpt.plan(self.resume_tag, cfg.parallel.zero_stage,
                                                           cfg.checkpoint.resume_universal,
                                                           cfg.model.implementation)
            try:
                self.loader.load_state_dict(saved_state["loader"])  # loaded again with the engine (_resume)
            except ValueError as e:
                raise ConfigError(f"checkpoint {self.resume_tag}: {e}") from None
            if self.resume_plan.universal:
                self.ckpt.prepare_universal(self.resume_plan)  # before the engine: it holds no device memory yet

    def _resume(self) -> None:
        plan = self.resume_plan
        if plan is None:
            return
        state = self.ckpt.load(self.engine, plan)
        self.step, self.tokens_seen = int(state["step"]), int(state["tokens_seen"])
        self.loader.load_state_dict(state["loader"])
        log.info("resumed from %s: step %d, data epoch %d, %d samples into it", plan.tag, self.step,
                 self.loader.state.epoch, self.loader.state.consumed)
        if self.ctx.is_main and (plan.universal or plan.saved_world_size != plan.world_size):
            log.info("%s: %s, step %d", plan.line(), plan.load_tag, self.step)
        self.status.resumed(self.step, plan.tag)

    def _setup_metrics(self) -> None:
        """The run's description (config.json), and the metric sinks: rank 0 writes the run's files;
        every node's local rank 0 prints the metric line with the throughput its own node measured."""
        from .metrics import MetricsLogger
        from .model import count_model_params, decoder_layers, param_counts

        cfg, ctx, rt, engine = self.cfg, self.ctx, self.rt, self.engine
        counts = param_counts(rt.hf_config)
        built = count_model_params(engine.module)
        if built != counts.total:
            log.warning("analytic parameter count %d differs from the built model's %d", counts.total, built)
        self.tokens_per_step = cfg.train.global_batch_size * self.seq_len
        model_dtype, accum_dtype = engine.get_data_types()
        meta: dict[str, Any] = {
            "model": cfg.model.hf_dir or cfg.model.preset,
            "params": counts.total,
            "params_for_flops": counts.non_embedding,
            "tied_embeddings": counts.tied,
            "flops_per_token": rt.flops_per_token,
            "flops_note": "PaLM 6N+12*L*H*Dh*S; N excludes the input embedding, includes lm_head (tied: counted once)",
            "device": rt.device_name,
            "device_type": ctx.device_type,
            "backend": ctx.backend,
            "world_size": ctx.world_size,
            "peak_tflops_per_device": rt.peak_tflops,
            "peak_source": rt.peak_source,
            "precision": rt.precision,
            "model_dtype": str(model_dtype).replace("torch.", ""),
            "grad_accum_dtype": str(accum_dtype).replace("torch.", ""),  # as the DeepSpeed engine resolved it
            "communication_dtype": str(engine.communication_data_type).replace("torch.", ""),
            "optimizer": type(engine.optimizer.optimizer if hasattr(engine.optimizer, "optimizer")
                              else engine.optimizer).__name__,
            "zero_stage": cfg.parallel.zero_stage,
            # how this run resumed (world size then and now, through a universal checkpoint or not); None: fresh
            "resumed": self.resume_plan.as_dict() if self.resume_plan is not None else None,
            "zero_hpz_partition_size": rt.plan.hpz,
            "memory_estimate_bytes_per_device": rt.plan.estimate.as_dict(),
            "memory_plan": list(rt.plan.notes),  # the planner's choices and why (planner.py)
            "memory_plan_choices": rt.plan.as_dict(),  # the same choices, and the estimate vs the capacity
            "device_memory_bytes": rt.plan.device_bytes,
            "attn_implementation": self.attn,
            "document_masking": self.packed,
            "model_implementation": cfg.model.implementation,
            "activation_checkpointing": [i for i, layer in enumerate(decoder_layers(engine.module))
                                         if getattr(layer, "gradient_checkpointing", False)],
            "fused_kernels": getattr(rt.kernels, "__name__", None),
            "loss_chunk_tokens": cfg.model.loss_chunk_tokens,
            "grad_accum": rt.grad_accum,
            "tokens_per_step": self.tokens_per_step,
            "rank_table_server": (ctx.rank_table_server or {}).get("server_id"),
        }
        if ctx.is_main:
            os.makedirs(cfg.run_dir, exist_ok=True)
            with open(os.path.join(cfg.run_dir, "config.json"), "w") as f:
                json.dump({"config": cfg.to_dict(), "deepspeed": self.ds_config, "run": meta}, f, indent=1)
            log.info("run: %s", json.dumps(meta))
            if rt.peak_tflops is None:
                log.warning("no peak FLOPS known for device %r: MFU is not reported (set --metrics.peak_tflops)",
                            rt.device_name)
        self.metrics = MetricsLogger(cfg.run_dir, ctx.is_main, cfg.metrics.tensorboard, console=ctx.launch.is_node_main)
        from .npu_usage import NpuUsageSampler

        # the main rank's node: its NPUs' use beside loss and throughput in metrics.jsonl (never waited for),
        # whenever the node has NPUs to read (npu-smi and visible devices), whatever device the job trains on
        self.npu_usage = NpuUsageSampler.for_node(cfg.metrics.npu_usage_interval_s, ctx.is_main).start()

    def _setup_profiler(self) -> None:
        """The profile section's windows (profile.py); after a resume, so the window counts from its step."""
        from .profile import Profiler

        cfg, ctx = self.cfg, self.ctx
        try:
            self.profiler = Profiler(cfg.profile, cfg.run_dir, ctx.rank, ctx.world_size, ctx.device_type,
                                     self.step + 1, on_summary=self.metrics.log_profile)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if cfg.profile.enabled and ctx.is_main:
            w = self.profiler.window
            log.info("profile: ranks %s record %d step(s) from step %d (warmup %d, every %d steps, %s); traces "
                     "under %s", cfg.profile.ranks, w.active, self.step + 1 + w.skip_first + w.wait + w.warmup,
                     w.warmup, w.cycle, f"{w.repeat} window(s)" if w.repeat else "until the end",
                     os.path.dirname(self.profiler.dir))

    def _setup_loop_state(self) -> None:
        import torch

        self.engine.train()
        dev = self.ctx.device
        self.loss_sum = torch.zeros((), device=dev, dtype=torch.float32)  # the interval's losses, on the device
        self.bad_norm = torch.zeros((), device=dev, dtype=torch.float32)  # > 0 once a grad norm was not finite
        self.interval_steps, self.data_wait, self.paused = 0, 0.0, 0.0  # paused: checkpoint/eval time
        self.last_save_t = time.monotonic()
        self.last_good = self.ckpt.last_saved_step
        self.grace_s, self.grace_src = grace_period(self.cfg)
        self.reason: str | None = None  # one line for the status file when the run ends other than by completing

    # ---------------------------------------------------------------- steps

    def _batch(self, loader):
        """(tokens on the device, packed-attention kwargs or None) of the loader's next micro-batch."""
        batch, pos = loader.next_batch()  # [micro, seq_len + 1] int64 from memory-mapped shards
        # document masking: position ids and varlen lengths on the host, once per micro-batch
        packed_kw = None if pos is None else packed_attention_kwargs(pos, self.ctx.device_type, self.ctx.device)
        return batch.to(self.ctx.device, non_blocking=True), packed_kw  # a few KiB: not worth pinning

    def train_step(self) -> bool:
        """One optimizer step: grad_accum micro-steps, forward, backward, DeepSpeed's step. False when a
        SIGTERM stopped it between micro-steps (the partial accumulation is then dropped)."""
        from .parallel import all_agree_flag

        for _ in range(self.rt.grad_accum):
            # SIGTERM is honoured between micro-steps (not only optimizer steps, which can take minutes with
            # a long accumulation). Host-side gloo all-reduce of one int: every rank breaks at the same point.
            if all_agree_flag(self.stop.is_set, self.ctx):
                return False
            t0 = time.perf_counter()
            with self.profiler.data_wait():  # the trace's data-wait label (profile.py)
                batch, packed_kw = self._batch(self.loader)
            self.data_wait += time.perf_counter() - t0
            loss = causal_lm_loss(self.engine, batch, packed=packed_kw)
            self.engine.backward(loss)
            self.engine.step()  # optimizer + LR schedule step at the accumulation boundary only
            self.loss_sum += loss.detach()  # stays on the device: no sync per micro-step
        return True

    def _note_grad_norm(self):
        import torch

        gn = self.engine.get_global_grad_norm()
        if torch.is_tensor(gn):
            self.bad_norm += (~torch.isfinite(gn.detach().float())).float()  # device op: no sync
        elif gn is not None and not math.isfinite(gn):
            self.bad_norm += 1.0
        return gn

    def health(self) -> tuple[float, bool]:
        """(loss sum of the interval over all ranks, all finite?). Collective: every rank calls it."""
        import torch
        import torch.distributed as dist

        h = torch.stack([self.loss_sum, self.bad_norm])
        if self.ctx.world_size > 1:
            dist.all_reduce(h)  # device collective; NaN/inf on any rank reaches all
        # SYNC: .item() at log intervals and before a save only
        total_loss, bad = h[0].item(), h[1].item()
        return total_loss, math.isfinite(total_loss) and bad == 0

    def refuse_nonfinite(self, at_step: int, loss_value: float | None) -> int:
        from .checkpoint import tag_for

        newest = tag_for(self.last_good) if self.last_good is not None else None
        self.reason = (f"non-finite loss or gradient norm by step {at_step} (loss {loss_value}); not saved, the "
                       f"newest checkpoint stays {newest or 'none'}")
        gn = self.engine.get_global_grad_norm()
        if self.ctx.is_main:
            log.error("non-finite %s by step %d (loss %s, last grad norm %s): stopping WITHOUT saving, so the newest "
                      "checkpoint stays %s. Restarting resumes from there; lower optim.lr, keep optim.grad_clip on, "
                      "or check the data near this step", "loss or gradient norm", at_step, loss_value,
                      None if gn is None else float(gn), newest or "none (nothing saved yet)")
        return EXIT_NONFINITE

    def save(self, at_step: int, loader_state: dict[str, Any]) -> bool:
        """Save unless the state is not finite; False if refused."""
        from .checkpoint import tag_for

        _, ok = self.health()
        if not ok:
            return False
        cfg = self.cfg
        state = {"step": at_step, "tokens_seen": self.tokens_seen, "loader": loader_state,
                 "zero_stage": cfg.parallel.zero_stage, "world_size": self.ctx.world_size,
                 "tokenizer": self.dataset.index.get("tokenizer"), "precision": self.rt.precision,
                 "model_implementation": cfg.model.implementation}
        t0 = time.monotonic()
        self.ckpt.save(self.engine, at_step, state)
        took = time.monotonic() - t0
        if took > 0.5 * self.grace_s and self.ctx.is_main:
            log.warning("checkpoint save took %.1f s, more than half of the %.0f s grace period (%s): a save on "
                        "SIGTERM may be killed; raise the launcher's grace period (see README, Checkpoints)",
                        took, self.grace_s, self.grace_src)
        self.last_save_t, self.last_good = time.monotonic(), at_step
        self.status.saved(at_step, tag_for(at_step))
        return True

    def evaluate(self) -> float:
        """Mean loss over the validation split's first train.eval_batches micro-batches per rank."""
        import torch
        import torch.distributed as dist

        from .data import DistributedLoader

        cfg, ctx = self.cfg, self.ctx
        vl = DistributedLoader(self.val, self.seq_len, cfg.train.micro_batch_size, ctx.rank, ctx.world_size,
                               cfg.train.seed, shuffle=False, positions=self.packed)
        acc = torch.zeros((), device=ctx.device, dtype=torch.float32)
        self.engine.eval()
        with torch.no_grad():  # every rank runs the same number of batches: ZeRO-3 gathers collectively
            for _ in range(cfg.train.eval_batches):
                batch, packed_kw = self._batch(vl)
                acc += causal_lm_loss(self.engine, batch, packed=packed_kw).float()
        self.engine.train()
        if ctx.world_size > 1:
            dist.all_reduce(acc)
        return acc.item() / (ctx.world_size * cfg.train.eval_batches)  # SYNC: once per evaluation

    def log_metrics(self, lr: float, gn, t_last: float) -> bool:
        """The metric line / records of the interval ending at this step; False if it was not finite."""
        from .metrics import achieved_tflops, memory_gib, mfu

        rt, ga = self.rt, self.rt.grad_accum
        total_loss, ok = self.health()  # SYNC inside: waits for every queued step; the wall time is then exact
        mean_loss = total_loss / (self.ctx.world_size * ga * self.interval_steps)
        grad_norm = float(gn) if gn is not None else None  # SYNC if DeepSpeed kept it as a device tensor
        dt = time.perf_counter() - t_last - self.paused
        tps = self.interval_steps * ga * self.cfg.train.micro_batch_size * self.seq_len / dt  # per device
        self.metrics.log({
            "step": self.step, "total_steps": self.cfg.train.steps, "loss": mean_loss, "lr": lr,
            "grad_norm": grad_norm, "tokens_per_s_per_device": tps,
            "tflops_per_device": achieved_tflops(tps, rt.flops_per_token),
            "mfu": mfu(tps, rt.flops_per_token, rt.peak_tflops),
            **({} if rt.peak_tflops else {"mfu_unavailable": "no peak FLOPS known for this device "
                                          "(not in the table; set metrics.peak_tflops)"}),
            "mem_gib": memory_gib(self.ctx.device_type), "data_wait_s": self.data_wait,
            "data_wait_frac": self.data_wait / dt, "step_time_s": dt / self.interval_steps,
            "tokens_seen": self.tokens_seen, "epoch": self.loader.state.epoch, "time": time.time(),
            **self.npu_usage.latest(),
        })
        self.status.running(self.step, mean_loss, tps, mfu(tps, rt.flops_per_token, rt.peak_tflops))
        if not ok:
            self.refuse_nonfinite(self.step, mean_loss)
            return False
        self.loss_sum.zero_()
        self.interval_steps, self.data_wait, self.paused = 0, 0.0, 0.0
        return True

    # ---------------------------------------------------------------- the loop

    def train(self) -> int:
        """Run to train.steps (or a stop); returns the exit code. Checkpoints by step and by time, on SIGTERM
        (then 143) and at the end; never a non-finite state (then 4)."""
        from .checkpoint import tag_for
        from .parallel import all_agree_flag, synchronize

        cfg, ctx, total = self.cfg, self.ctx, self.cfg.train.steps
        synchronize(ctx.device_type)  # SYNC: start the clock on an idle device
        t_last = time.perf_counter()
        if self.step >= total:
            log.info("checkpoint is at step %d >= train.steps %d: nothing to train", self.step, total)
            self.reason = f"nothing to train: the checkpoint is at step {self.step} >= train.steps {total}"
        while self.step < total:
            lr = self.engine.get_lr()[0]  # the LR this step uses (the schedule advances after the update)
            step_loader_state = self.loader.state_dict()  # where this step's data starts (for a save mid-step)
            if not self.train_step():
                # The partial accumulation is dropped: the weights are those after `step` optimizer steps, and
                # the data position goes back to where this step began, so a resume redoes the whole step.
                if ctx.is_main:
                    log.warning("SIGTERM: saving a checkpoint at step %d and stopping", self.step)
                if self.ckpt.last_saved_step == self.step or self.save(self.step, step_loader_state):
                    self.reason = f"SIGTERM: stopped after saving {tag_for(self.step)}"
                    return EXIT_PREEMPTED  # (an already saved step is not saved again)
                return self.refuse_nonfinite(self.step, None)
            self.step += 1
            self.interval_steps += 1
            self.tokens_seen += self.tokens_per_step
            gn = self._note_grad_norm()
            if self.profiler.enabled:
                t0 = time.perf_counter()
                self.profiler.step(self.step)  # a window's end writes its trace: not training throughput
                self.paused += time.perf_counter() - t0

            if self.step % cfg.metrics.log_interval == 0 or self.step == total:
                if not self.log_metrics(lr, gn, t_last):
                    return EXIT_NONFINITE
                t_last = time.perf_counter()

            if self.val is not None and self.step % cfg.train.eval_interval == 0:
                t0 = time.perf_counter()
                eval_loss = self.evaluate()
                if ctx.is_main:
                    self.metrics.log_eval({"step": self.step, "eval_loss": eval_loss, "time": time.time()})
                self.paused += time.perf_counter() - t0

            # Time-based cadence: every rank measures its own clock; any rank past the interval makes all save.
            due_by_time = bool(cfg.checkpoint.interval_minutes) and all_agree_flag(
                time.monotonic() - self.last_save_t >= cfg.checkpoint.interval_minutes * 60, ctx)
            if self.step % cfg.checkpoint.interval == 0 or self.step == total or due_by_time:
                t0 = time.perf_counter()
                if not self.save(self.step, self.loader.state_dict()):
                    return self.refuse_nonfinite(self.step, None)
                self.paused += time.perf_counter() - t0  # checkpoint time is not training throughput
        if cfg.checkpoint.export_dir:
            export(self.engine, ctx, cfg, self.hf_config_dict, self.rt.precision, self.dataset, self.step)
        return 0

    def close(self) -> None:
        from .parallel import shutdown

        self.profiler.close()
        self.npu_usage.close()
        self.metrics.close()
        self.engine.destroy()
        shutdown()


def train(cfg: JobConfig, status: RunStatus | None = None, stop: StopFlag | None = None) -> int:
    """`ascendops-train train`: set up a Trainer, run it, tear down; returns the exit code (status.py).
    `status` (the node's status file) gets the progress and the final state; the caller writes the final
    state of a raised error (cli.main). `stop`: a SIGTERM flag installed by the caller (else here)."""
    status = status or RunStatus(None)
    trainer = Trainer(cfg, status, stop)
    code = trainer.train()
    trainer.close()
    status.finish(code, trainer.step, trainer.reason)
    return code


def export(engine, ctx, cfg: JobConfig, hf_config_dict: dict[str, Any], precision: str, dataset, step: int) -> None:
    """Write a HF directory from the live engine, plus a probe (input ids and the logits the engine
    gives for them) so anyone can check the export with transformers alone."""
    import torch
    from safetensors.torch import save_file

    from .checkpoint import export_from_engine

    out = cfg.checkpoint.export_dir
    export_from_engine(engine, ctx, out, hf_config_dict, precision, dataset.index.get("tokenizer"),
                       {"step": step, "weights": "gathered training weights", "dtype": precision,
                        "run_dir": os.path.abspath(cfg.run_dir)})
    n = min(cfg.data.seq_len, 32)
    probe = torch.from_numpy(dataset.tokens(0, n)).unsqueeze(0).to(ctx.device)
    engine.eval()
    with torch.no_grad():  # every rank runs it: ZeRO-3 gathers weights collectively
        logits = engine(input_ids=probe).logits.float().cpu()  # SYNC: copy to host
    engine.train()
    if ctx.is_main:
        probe_path = os.path.join(out, "export_probe.safetensors")
        save_file({"input_ids": probe.cpu(), "logits": logits}, probe_path)
        os.chmod(probe_path, 0o644)
        log.info("exported step %d to %s", step, out)
