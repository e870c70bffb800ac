"""`ascendops`: the console script (installed into the project's virtualenv by scripts/setup.sh)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__
from .drift import EXIT_ERROR, find_project_dir, run_drift
from .stages import STAGES, ProjectError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ascendops", description="Day-2 commands for an ascendops.cluster cluster.")
    p.add_argument("--version", action="version", version=f"ascendops {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("drift", help="what site.yml would change, per host and stage (check mode, changes nothing)",
                       description="Runs site.yml with --check --diff through ansible-runner and reports every "
                                   "change it would make, per host and stage. Exit: 0 converged, 2 drift, 1 error.")
    d.add_argument("-i", "--inventory", required=True, help="inventory (file or directory), as for ansible-playbook")
    d.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH ('-': standard output)")
    d.add_argument("-l", "--limit", help="only these hosts (an Ansible host pattern)")
    d.add_argument("--stage", action="append", choices=STAGES, metavar="STAGE",
                   help=f"only this stage (repeatable; {', '.join(STAGES)}); validation always runs first")
    d.add_argument("-e", "--extra-vars", action="append", default=[], metavar="KEY=VALUE|@FILE|JSON",
                   help="extra variables, passed to ansible-playbook -e as given (KEY=VALUE ..., YAML/JSON, @file)")
    d.add_argument("--project-dir", help="the ascendops clone (default: found from the working directory)")
    d.add_argument("--keep-artifacts", metavar="DIR", help="keep ansible-runner's artifacts (events, stdout) in DIR")
    d.add_argument("-v", "--verbose", action="store_true", help="show ansible-playbook's output while it runs")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "drift":
        try:
            if not os.path.exists(args.inventory):
                raise ProjectError(f"inventory {args.inventory} does not exist")
            project = os.path.abspath(args.project_dir) if args.project_dir else find_project_dir()
            report = run_drift(args.inventory, project_dir=project, limit=args.limit, stages=args.stage,
                               extra_vars=args.extra_vars, keep_artifacts=args.keep_artifacts,
                               verbose=args.verbose)
        except (ProjectError, ValueError, OSError) as e:
            print(f"ascendops drift: error: {e}", file=sys.stderr)
            return EXIT_ERROR
        if args.json == "-":
            json.dump(report.to_json(), sys.stdout, indent=1)
            print()
        else:
            print(report.render())
            if args.json:
                with open(args.json, "w", encoding="utf-8") as f:
                    json.dump(report.to_json(), f, indent=1)
                    f.write("\n")
        return report.exit_code
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
