"""The scenario registry: ``SCENARIOS[n] = (title, function(sandbox, result))``, filled by
the :func:`scenario` decorator as each scenario module is imported."""
from __future__ import annotations

SCENARIOS: dict = {}


def scenario(number: int, title: str):
    def register(func):
        SCENARIOS[number] = (title, func)
        return func
    return register
