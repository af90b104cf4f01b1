"""Which events of a thread are on its current branch, after any rewinds.

The log is append-only: a ``rolled_back`` fact at seq ``s`` with ``to_seq = t`` says "from here on,
the thread continues from the state it had right after event ``t``". The reducer implements that
by replaying ``history(t)``; this module gives the same answer as a list of events, so that
the capsule's facts, claims and cursor (and the recovery summary) see the branch the reducer
sees. "Live as of ``t``" is itself computed with the rollbacks at or before ``t``, exactly as the
reducer's replay does, so rewinding to a checkpoint taken inside a branch that an earlier rewind
discarded brings that branch back.

Light on purpose (no pydantic): ``capsule_source.gather`` calls it at every checkpoint.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

#: the fact a files-only rewind (or its undo) records; a conversation rewind records ``rolled_back``
WORKSPACE_RESTORED = "workspace_restored"

ROLLED_BACK = "rolled_back"


def _live_seqs(events: list[dict], upto: int) -> list[int]:
    """Seqs live as of ``upto`` (``events`` sorted by seq), in one pass.

    The live branch after each event is a persistent linked list ``(seq, parent)``, so "the
    branch as of ``t``" is the node recorded at ``t`` and a rollback costs O(1)."""
    after: dict[int, tuple | None] = {0: None}
    seqs: list[int] = [0]
    node: tuple | None = None
    for event in events:
        seq = int(event["seq"])
        if seq > upto:
            break
        if event["type"] == ROLLED_BACK:
            target = int((event.get("data") or {}).get("to_seq", 0))
            base = after[seqs[bisect_right(seqs, min(target, seq - 1)) - 1]]
            node = (seq, base)
        else:
            node = (seq, node)
        after[seq] = node
        seqs.append(seq)
    out: list[int] = []
    while node is not None:
        out.append(node[0])
        node = node[1]
    out.reverse()
    return out


def live_events(events: list[dict]) -> list[dict]:
    """The events of the current branch, in order (rollback facts themselves stay visible)."""
    if not any(e["type"] == ROLLED_BACK for e in events):
        return list(events)
    keep = set(_live_seqs(events, int(events[-1]["seq"])))
    return [e for e in events if int(e["seq"]) in keep]


@dataclass
class Branch:
    """The work a rollback discarded: the live events after its target, before the rollback."""

    rollback: dict  # the rolled_back event
    to_seq: int
    events: list[dict]


def discarded_branch(events: list[dict], rollback_seq: int) -> Branch:
    """What the rollback at ``rollback_seq`` took out of the current branch."""
    by_seq = {int(e["seq"]): e for e in events}
    rollback = by_seq.get(rollback_seq)
    if rollback is None or rollback["type"] != ROLLED_BACK:
        raise ValueError(f"event {rollback_seq} is not a rollback")
    to_seq = int(rollback["data"]["to_seq"])
    before = _live_seqs(events, rollback_seq - 1)
    return Branch(rollback, to_seq, [by_seq[s] for s in before if s > to_seq])


def live_ranges(rollbacks: list[dict], last_seq: int) -> list[tuple[int, int]]:
    """The current branch as inclusive seq ranges, newest first, from the rollback facts alone
    (``rollbacks``: the thread's ``rolled_back`` events up to ``last_seq``, any order).

    The same answer as :func:`live_events`, without reading the other events: walking back
    from the newest event, every event is live until a rollback (itself live), after which the
    branch continues from its target as of that point. A boundary after a rewind reads the
    newest facts, cursor and claims inside these ranges through the type index."""
    ranges: list[tuple[int, int]] = []
    pos = last_seq
    for rb in sorted(rollbacks, key=lambda e: int(e["seq"]), reverse=True):
        seq = int(rb["seq"])
        if seq > pos:
            continue  # on a branch an older rollback (walked already) discarded
        ranges.append((seq, pos))
        pos = min(int((rb.get("data") or {}).get("to_seq", 0)), seq - 1)
    if pos >= 1:
        ranges.append((1, pos))
    return ranges


def in_ranges(seq: int, ranges: list[tuple[int, int]]) -> bool:
    return any(lo <= seq <= hi for lo, hi in ranges)
