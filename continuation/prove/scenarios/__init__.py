"""The scenario registry: ``SCENARIOS[n] = (title, function(sandbox, result))``."""
from __future__ import annotations

SCENARIOS: dict = {}


def scenario(number: int, title: str):
    def register(func):
        SCENARIOS[number] = (title, func)
        return func
    return register


from continuation.prove.scenarios import (
    boundaries,
    data,
    failures,
    gemini,
    handoff,
    history,
    ledger,
    truth,
    workspaces,
)  # noqa: E402,F401
