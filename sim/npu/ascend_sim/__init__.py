"""SIMULATION ONLY - not Huawei software.

``ascend_sim`` is the shared library behind the simulated Ascend 910B stand-ins of the ascendops
simulated cluster (``npu-smi``, ``hccn_tool``, ``upgrade-tool``, ``ascend-sim`` and the package
installers). It imitates the vendor tools' paths, flags, outputs and exit codes as documented in
``shared/ascend-facts.md`` and ``docs/sim-contract.md``; it drives no hardware.

Standard library only (Python 3.11): it runs inside Debian 12 nodes that carry nothing but python3.
"""

__version__ = "1.0.0"
