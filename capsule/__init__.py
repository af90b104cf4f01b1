"""Pure handoff capsule: model, budgets, rendering, context assembly.

Entry points: ``build_capsule(source, budget)`` (budget.py), ``render_capsule(capsule)``
(render.py), ``assemble_context(...)`` (assemble.py), ``encode_capsule`` / ``decode_capsule``
(model.py). No I/O: the engine fills a ``CapsuleSource`` and persists the bytes.
"""
from .budget import MIN_BYTES, MIN_TOKENS, Budget, build_capsule
from .model import (
    SCHEMA_VERSION,
    Capsule,
    CapsuleFormatError,
    CapsuleVersionError,
    decode_capsule,
    encode_capsule,
)
from .render import render_capsule
from .source import CapsuleSource
from .tokens import TokenCounter, get_token_counter, token_counter_for

__all__ = [
    "MIN_BYTES",
    "MIN_TOKENS",
    "SCHEMA_VERSION",
    "Budget",
    "Capsule",
    "CapsuleFormatError",
    "CapsuleSource",
    "CapsuleVersionError",
    "TokenCounter",
    "build_capsule",
    "decode_capsule",
    "encode_capsule",
    "get_token_counter",
    "render_capsule",
    "token_counter_for",
]
