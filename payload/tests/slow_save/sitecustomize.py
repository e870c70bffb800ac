"""Test hook, on PYTHONPATH only in test_trainer_launch's slow-save tests: the checkpoint save that
follows a SIGTERM first sleeps ASCENDOPS_TEST_SLOW_SAVE_S seconds, as a 70B ZeRO-3 save takes minutes.
Ordinary saves are untouched (it checks the trainer's SIGTERM flag, train.StopFlag)."""

import os

_DELAY = float(os.environ.get("ASCENDOPS_TEST_SLOW_SAVE_S") or 0)

if _DELAY > 0:
    import signal
    import time

    from ascendops_trainer import checkpoint as _ck

    _stock_save = _ck.CheckpointManager.save

    def _slow_save(self, engine, step, trainer_state):
        if getattr(signal.getsignal(signal.SIGTERM), "is_set", False):
            print(f"slow save: sleeping {_DELAY:g} s before the checkpoint", flush=True)
            time.sleep(_DELAY)
        return _stock_save(self, engine, step, trainer_state)

    _ck.CheckpointManager.save = _slow_save
