# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way modules run a vendor tool (npu-smi, upgrade-tool, hccn_tool, the ``.run``
installers): C locale (their output is parsed), stdin from ``/dev/null`` (a tool that asks a
question reads end of input at once instead of waiting), ``argv`` lists only (no shell).
"""

from __future__ import annotations

import contextlib
import os

# environment for every vendor tool whose output is parsed
RUN_ENV = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}


@contextlib.contextmanager
def stdin_from_devnull():
    """Point this process's stdin (fd 0) at /dev/null while commands run.

    ``AnsibleModule.run_command`` lets a child inherit stdin unless data is sent; installers
    that ask a question must read EOF at once instead of waiting on whatever fd 0 is.
    """
    try:
        saved = os.dup(0)
    except OSError:
        saved = None
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        if devnull != 0:
            os.dup2(devnull, 0)
        yield
    finally:
        if saved is not None:
            os.dup2(saved, 0)
            os.close(saved)
        elif devnull != 0:
            os.close(0)
        os.close(devnull)


def vendor_runner(module):
    """``run(argv, **run_command_kwargs) -> (rc, stdout, stderr)`` for ``module``."""

    def run(argv, **kwargs):
        with stdin_from_devnull():
            return module.run_command([str(a) for a in argv], environ_update=RUN_ENV, **kwargs)

    return run
