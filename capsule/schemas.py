"""Building ahead of time the pydantic schemas a capsule build touches.

The models use ``defer_build``; a boundary calls :func:`build_schemas` while it waits for git,
so the build itself does not pay for them.
"""
from pydantic import BaseModel

from capsule import budget, model, source


def build_schemas() -> int:
    """Build the schemas ``defer_build`` leaves to first use, for the capsule's source, its
    parts and the budget. Returns how many were built."""
    built = 0
    for module in (source, model, budget):
        for value in list(vars(module).values()):
            if (isinstance(value, type) and issubclass(value, BaseModel)
                    and value.__module__ == module.__name__ and not value.__name__.startswith("_")
                    and not value.__pydantic_complete__):
                value.model_rebuild()
                built += 1
    return built
