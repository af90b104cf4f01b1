"""``continuation lifecycle``: the state diagram, generated from the transitions table."""
from __future__ import annotations

from continuation.commands import add_json_arg


def register(sub) -> None:
    p = sub.add_parser("lifecycle", help="print the input lifecycle as a Mermaid diagram")
    add_json_arg(p)
    p.set_defaults(func=cmd_lifecycle)


def cmd_lifecycle(args) -> int:
    from statemachine.lifecycle import ACTIONABLE, STATES, TERMINAL, TRANSITIONS, mermaid

    if args.json:
        from continuation.commands.output import emit_json

        emit_json({"states": [s for s in STATES if s != "new"],
                   "actionable": sorted(ACTIONABLE), "terminal": sorted(TERMINAL),
                   "transitions": [{"trigger": t["trigger"], "from": t["source"],
                                    "to": t["dest"]} for t in TRANSITIONS],
                   "mermaid": mermaid()})
        return 0
    print(mermaid(), end="")
    return 0
