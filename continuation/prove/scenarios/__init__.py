"""The proof's scenarios, numbered: importing the package registers every one of them."""
from __future__ import annotations

from continuation.prove.scenarios import (  # noqa: F401  (each module registers its scenarios)
    boundaries,
    data,
    failures,
    gemini,
    handoff,
    history,
    ledger,
    recovery,
    truth,
    workspaces,
)
from continuation.prove.scenarios.registry import SCENARIOS

__all__ = ["SCENARIOS"]
