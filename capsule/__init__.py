"""Pure handoff capsule: model, budgets, rendering, context assembly.

Entry points: ``build_capsule(source, budget)`` (budget.py), ``render_capsule(capsule)``
(render.py), ``assemble_context(...)`` (assemble.py), ``encode_capsule`` / ``decode_capsule``
(model.py). No I/O: the engine fills a ``CapsuleSource`` and persists the bytes.

The names below are imported on first use (PEP 562): importing one light submodule (e.g.
:mod:`capsule.context`, which a SessionStart answer uses) must not build the pydantic models.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "MIN_BYTES": "budget", "MIN_TOKENS": "budget", "Budget": "budget", "build_capsule": "budget",
    "SCHEMA_VERSION": "model", "Capsule": "model", "CapsuleFormatError": "model",
    "CapsuleVersionError": "model", "decode_capsule": "decode", "encode_capsule": "model",
    "render_capsule": "render", "CapsuleSource": "source",
    "TokenCounter": "tokens", "get_token_counter": "tokens", "token_counter_for": "tokens",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'capsule' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_EXPORTS])
