"""The capsule of a source within its budget, counted as cheaply as the result allows.

Tokens are counted first by an upper bound that loads no tokenizer, the UTF-8 length, when the
texts are that small (``capsule.tokens.ByteBoundCounter``): when that build made no budget cut
(a "(not gathered)" cut of unread history does not depend on the counter) and its bound fits,
the capsule is the one an exact count gives, and its budget records the bound as its encoding.
Otherwise it is built with exact counts (``get_token_counter``). Pure: the engine
(``continuation.boundary.checkpoints.build``) and the capsule worker (``continuation.boundary.capsule_worker``)
both call :func:`build_fitted`, so a capsule is the same wherever it was built.
"""
from __future__ import annotations

from capsule.budget import Budget, build_capsule
from capsule.model import Capsule
from capsule.source import CapsuleSource


def build_fitted(source: CapsuleSource, budget: Budget, *, exact_first: bool) -> Capsule:
    """The capsule of ``source``: bound-counted first unless ``exact_first`` (the thread's
    newest capsule needed an exact count; a thread only grows) or its texts are too large for
    the bound to fit, then exactly counted."""
    if not exact_first and text_bytes(source) <= budget.max_tokens:
        from capsule.tokens import ByteBoundCounter

        capsule = build_capsule(source, budget, counter=ByteBoundCounter())
        if uncut_and_within(capsule, source):
            return capsule
    return build_capsule(source, budget)


def uncut_and_within(capsule: Capsule, source: CapsuleSource) -> bool:
    """No cut but the "(not gathered)" ones of unread history (``source.not_gathered``: the
    same whatever the counter), and the bound under the limit."""
    unread = {n.field for n in source.not_gathered}
    if any(c.field not in unread for c in capsule.cuts):
        return False
    return capsule.budget.tokens <= capsule.budget.max_tokens


def text_bytes(source: CapsuleSource) -> int:
    """UTF-8 bytes of the texts a capsule without cuts renders whole (inputs, facts, claims):
    a lower bound of its byte-bound token count."""
    parts = [*(i.text for i in source.inputs), *(f.text for f in source.facts),
             *(c.text for c in source.claims)]
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in parts if t)
