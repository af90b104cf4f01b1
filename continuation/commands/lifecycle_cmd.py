"""``continuation lifecycle``: the state diagram, generated from the transitions table."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("lifecycle", help="print the input lifecycle as a Mermaid diagram")
    p.set_defaults(func=cmd_lifecycle)


def cmd_lifecycle(args) -> int:
    from statemachine.lifecycle import mermaid

    print(mermaid(), end="")
    return 0
