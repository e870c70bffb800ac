#!/usr/bin/env bash
# GPU benchmark on one CUDA device (H100/H200): Llama 3 8B shapes with 2 decoder layers, bf16,
# seq 8192, our DeepSpeed stack (ZeRO stage auto: 2 for this size) vs a plain PyTorch loop; prints
# tokens/s, TFLOPS and MFU against the table peak (989 TFLOPS dense bf16 for H100 SXM/H200). A few
# minutes in all, most of it start-up.
#
#   bash payload/bench-gpu.sh [extra ascendops-train bench flags]
#
# Uses the python3 that holds torch (PYTHON overrides). When deepspeed is missing there (machines
# with no package index), it installs the wheels from payload/.gpu-wheels into a private directory
# first (deepspeed built with DS_BUILD_OPS=0 plus its pure-Python needs and pydantic-core for cp312).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
PY=${PYTHON:-python3}
if ! "$PY" -c "import deepspeed" >/dev/null 2>&1; then
    site=${TMPDIR:-/tmp}/ascendops-gpu-site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$site" .gpu-wheels/*.whl
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name(0))"
exec "$PY" -m ascendops_trainer bench --device cuda --preset llama3-8b --layers 2 --seq-len 8192 \
    --micro-batch-size 2 --global-batch-size 2 --bench.steps 10 --bench.warmup_steps 3 \
    --run-dir "${RUN_DIR:-${TMPDIR:-/tmp}/ascendops-bench}" "$@"
