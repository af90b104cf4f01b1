"""``continuation prove``: the offline system proof (scenarios are added as features land)."""
from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("prove", help="run the offline system proof")
    p.add_argument("--scenario", type=int, help="run one scenario by number")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.set_defaults(func=cmd_prove)


def cmd_prove(args) -> int:
    try:
        from ..prove import run_prove
    except ImportError:
        sys.stdout.write("continuation prove: no scenarios yet; nothing was proven.\n")
        return 0
    return run_prove(scenario=args.scenario, as_json=args.json)
