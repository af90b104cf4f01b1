"""``continuation prove``: the offline system proof (see :mod:`continuation.prove`)."""
from __future__ import annotations

from continuation.commands import add_wide_arg


def register(sub) -> None:
    p = sub.add_parser("prove", help="run the offline system proof (simulated sessions "
                                     "through the real hooks, in a temporary HOME)")
    p.add_argument("--scenario", type=int, action="append", metavar="N",
                   help="run scenario N only (repeat for several)")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    add_wide_arg(p)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list every check in the table, not only the failed ones")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="scenarios run at the same time (default: min(2, CPUs))")
    p.set_defaults(func=cmd_prove)


def cmd_prove(args) -> int:
    from continuation.commands.output import line_width
    from continuation.prove import run_prove

    scenario = args.scenario[0] if args.scenario and len(args.scenario) == 1 else args.scenario
    return run_prove(scenario=scenario, as_json=args.json, jobs=args.jobs, verbose=args.verbose,
                     width=line_width())
