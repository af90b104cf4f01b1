"""The three baseline continuation policies of ``scripts/compare_policies.py``.

They live in the package (:mod:`continuation.prove.baselines`) because ``continuation prove``
needs the runtimes' native behaviour too (what an agent is left with when no context arrives);
this file is what the comparison loads, by path, into the simulated runtime.
"""
from continuation.prove.baselines import (  # noqa: F401
    NATIVE, CodexNativeHistory, LatestPromptTurnMatch, SummaryOnly)
