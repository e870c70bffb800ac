#!/usr/bin/env python3
# Copyright (C) 2026 ascendops contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SIMULATION ONLY - writes the makeself header the simulated vendor .run packages are built with.

Not a copy kept in this repository: at build time it reads the header of the makeself installed
on this host (scripts/host-setup.sh installs Debian's makeself 2.4.x) and applies our own small
edits, so the archives behave like the vendor's .run packages:
  - flags makeself does not know (--full, --upgrade, --install, --install-path=P, ...) go to the
    embedded install script instead of failing with "Unrecognized flag"; the script checks them;
  - --quiet quiets makeself and is passed to the script as well;
  - --extract=DIR extracts into DIR (like --target DIR; with --noexec: extract only);
  - --check says nothing about the absent MD5/CRC sums once the SHA256 sum is verified.
With --runtime, the header of the Ascend Docker Runtime package, which is the vendor's own: of
makeself's options it takes only --quiet, --check, --info, --list, --tar, --noexec and --extract;
any other (--nox11, --keep, --target, ...) is "Unrecognized flag", exit 1.
Each edit names the text it expects; a makeself whose header differs fails the build loudly.
  usage: makeself_header.py [--runtime] OUT   (MAKESELF_HEADER overrides where the installed header is found)
"""

import os
import shutil
import sys

# (what the edit does, text expected exactly once in the installed header, replacement)
EDITS = (
    ("mark the archive as a stand-in",
     'cat << EOF  > "$archname"\n#!/bin/sh\n',
     'cat << EOF  > "$archname"\n#!/bin/sh\n'
     "# SIMULATION ONLY: ascendops stand-in for a Huawei Ascend .run package - not vendor software.\n"),
    ("document the vendor-style flags in --help",
     "  --                    Following arguments will be passed to the embedded script\n",
     "  --                    Following arguments will be passed to the embedded script\n"
     "  --extract=DIR         Extract into DIR (with --noexec: extract only)\n"
     "  Other --flags (--full, --upgrade, --install, --install-path=P, ...) are passed to\n"
     "  the embedded install script.\n"),
    ("no MD5/CRC remarks once SHA256 is verified",
     '\t\t\t\tcrc="0000000000";\n\t\t\tfi\n',
     '\t\t\t\tcrc="0000000000"; verb=n\n\t\t\tfi\n'),
    ("start an empty list of flags for the script",
     "\nsig_key=\n",
     "\nsig_key=\npassargs=\n"),
    ("pass --quiet on",
     "\tquiet=y\n\tnoprogress=y\n\tshift\n",
     "\tquiet=y\n\tnoprogress=y\n\tpassargs=\"\\$passargs '--quiet'\"\n\tshift\n"),
    ("accept --extract=DIR",
     "    --noprogress)\n",
     "    --extract=*)\n\tkeep=y\n\ttargetdir=\"\\${1#--extract=}\"\n"
     "\ttest x\"\\$targetdir\" = x && targetdir=.\n\tshift\n\t;;\n    --noprogress)\n"),
    ("pass unknown flags to the script",
     '    -*)\n\techo Unrecognized flag : "\\$1" >&2\n\tMS_Help\n\texit 1\n\t;;\n',
     "    -*)\n\tms_q=\\$(printf '%s' \"\\$1\" | sed \"s/'/'\\\\\\\\\\\\\\\\''/g\")\n"
     "\tpassargs=\"\\$passargs '\\$ms_q'\"\n\tshift\n\t;;\n"),
)
# The Ascend Docker Runtime header: makeself options its header does not take are usage errors.
RUNTIME_REFUSED = ("--nox11", "--keep", "--target", "--noprogress", "--nochown", "--chown", "--nodiskspace",
                   "--accept", "--confirm", "--lsm", "--dumpconf", "--verify-sig", "--noexec-cleanup",
                   "--ssl-pass-src", "--cleanup-args", "--keep-umask")
RUNTIME_EDIT = (
    "refuse the makeself options the runtime's own header does not take",
    "    -h | --help)\n",
    "    " + "|".join(RUNTIME_REFUSED) + ")\n"
    "\techo Unrecognized flag : \"\\$1\" >&2\n\tMS_Help\n\texit 1\n\t;;\n"
    "    -h | --help)\n",
)
# Both places the embedded script is started get the passed flags (interactive and not).
SCRIPT_CALL = 'eval "\\"\\$script\\" \\$scriptargs \\"\\\\\\$@\\""'
SCRIPT_CALL_NEW = 'eval "\\"\\$script\\" \\$scriptargs \\$passargs \\"\\\\\\$@\\""'


def installed_header() -> str:
    env = os.environ.get("MAKESELF_HEADER")
    candidates = [env] if env else []
    candidates.append("/usr/share/makeself/makeself-header.sh")
    found = shutil.which("makeself")
    if found:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(found)), "makeself-header.sh"))
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    raise SystemExit("makeself_header.py: makeself-header.sh not found (install makeself: scripts/host-setup.sh)")


def patch(text: str, runtime: bool = False) -> str:
    for what, old, new in EDITS + ((RUNTIME_EDIT,) if runtime else ()):
        if text.count(old) != 1:
            raise SystemExit(f"makeself_header.py: cannot {what}: the installed header has "
                             f"{text.count(old)} matches for {old!r}, expected 1 (makeself 2.4.x)")
        text = text.replace(old, new)
    if text.count(SCRIPT_CALL) != 2:
        raise SystemExit("makeself_header.py: cannot pass flags to the script: expected two script calls")
    return text.replace(SCRIPT_CALL, SCRIPT_CALL_NEW)


def main(argv: list[str]) -> int:
    runtime = bool(argv) and argv[0] == "--runtime"
    if runtime:
        argv = argv[1:]
    if len(argv) != 1:
        print(__doc__.rsplit("usage: ", 1)[1], file=sys.stderr)
        return 2
    with open(installed_header(), encoding="utf-8") as f:
        text = f.read()
    with open(argv[0], "w", encoding="utf-8") as f:
        f.write(patch(text, runtime))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
