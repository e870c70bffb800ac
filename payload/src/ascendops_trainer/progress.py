"""Progress of the long offline commands (`prepare`, `bench`, `export`) on stderr.

Three ways to show it, chosen by `--progress` or ASCENDOPS_PROGRESS (the option wins):
  auto   (default) a tqdm bar when stderr is a terminal, else plain lines
  bar    the tqdm bar even when stderr is no terminal (it redraws with carriage returns)
  plain  one ordinary line every ASCENDOPS_PROGRESS_INTERVAL seconds (default 30) and one at the end:
         what a container log or `kubectl logs` keeps readable (no `\\r`)
  off    nothing
Both forms are tqdm's own meter (tqdm.format_meter: done/total, rate, elapsed, ETA), the plain lines
without the bar. Progress only ever writes to stderr: stdout and every output file stay the same.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

MODES = ("auto", "bar", "plain", "off")
ENV_MODE = "ASCENDOPS_PROGRESS"
ENV_INTERVAL = "ASCENDOPS_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 30.0
# tqdm's default meter without the bar, for the plain lines
PLAIN_FORMAT = "{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


def resolve_mode(option: str | None = None, environ: dict[str, str] | None = None) -> str:
    """The mode from the option, else the environment, else auto; a bad value is refused by name."""
    env = os.environ if environ is None else environ
    value = option or env.get(ENV_MODE) or "auto"
    if value not in MODES:
        origin = "--progress" if option else ENV_MODE
        raise ValueError(f"{origin}={value!r} is not a progress mode; use one of {', '.join(MODES)}")
    return value


def resolve_interval(environ: dict[str, str] | None = None) -> float:
    env = os.environ if environ is None else environ
    raw = env.get(ENV_INTERVAL)
    if raw is None or raw == "":
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"{ENV_INTERVAL}={raw!r} must be a number of seconds > 0")
    return value


def add_progress_argument(parser) -> None:
    parser.add_argument("--progress", choices=MODES, default=None,
                        help=f"progress on stderr: auto (a bar on a terminal, else a plain line every "
                             f"{ENV_INTERVAL} s, default {DEFAULT_INTERVAL:g}), bar, plain, off "
                             f"(default: {ENV_MODE} or auto)")


class Progress:
    """A progress meter: `update(n)` advances it, `set_postfix(...)` names what it is at, `close()` ends it.

    mode: a resolved MODES value (resolve_mode). `enabled=False` (e.g. a rank other than 0) shows nothing.
    `clock` is for tests (the time source of the plain lines)."""

    def __init__(self, total: float | None, desc: str, unit: str = "it", unit_scale: bool = False,
                 mode: str = "auto", file: IO[str] | None = None, interval: float | None = None,
                 enabled: bool = True, clock=time.monotonic):
        if mode not in MODES:
            raise ValueError(f"progress mode {mode!r}; use one of {', '.join(MODES)}")
        self.file = file if file is not None else sys.stderr
        if mode == "auto":
            isatty = getattr(self.file, "isatty", None)
            mode = "bar" if isatty is not None and isatty() else "plain"
        self.mode = mode if enabled else "off"
        self.total, self.desc, self.unit, self.unit_scale = total, desc, unit, unit_scale
        self.n: float = 0
        self.postfix = ""
        self._clock = clock
        self._start = self._last = clock()
        self.interval = resolve_interval() if interval is None else interval
        self._bar = None
        self._closed = False
        if self.mode == "bar":
            from tqdm import tqdm

            # disable=False: the mode already decided (tqdm's disable=None would hide it off a terminal)
            self._bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=self.file,
                             disable=False, dynamic_ncols=True, mininterval=0.5, leave=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def set_postfix(self, text: str) -> None:
        self.postfix = text
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def update(self, n: float = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.mode == "plain":
            now = self._clock()
            if now - self._last >= self.interval:
                self._last = now
                self._line(now)

    def line(self) -> str:
        """The current state as one plain line (tqdm's meter without the bar)."""
        return self._format(self._clock())

    def _format(self, now: float) -> str:
        from tqdm import tqdm

        return tqdm.format_meter(self.n, self.total, now - self._start, prefix=self.desc, unit=self.unit,
                                 unit_scale=self.unit_scale, bar_format=PLAIN_FORMAT,
                                 postfix=self.postfix or None)

    def _line(self, now: float) -> None:
        self.file.write(self._format(now) + "\n")
        self.file.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.mode == "plain":
            self._line(self._clock())  # the final state, always one line
