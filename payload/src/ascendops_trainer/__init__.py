"""ascendops_trainer: Llama 3 training on Ascend 910B (and CUDA/CPU) with DeepSpeed ZeRO."""

__version__ = "0.1.0"
