"""Build a capsule that fits a byte budget and a token budget, whatever the source holds.

``build_capsule(source, budget)`` never fails for size and never exceeds either limit:

- bytes: length of the FINAL canonical encoding (``model.encode_capsule``), UTF-8;
- tokens: tiktoken count of the FINAL rendering (``render.render_capsule``).

Both are measured on the finished capsule before it is returned; the estimates used while
choosing what to keep only decide what to try.

Always kept (the skeleton): thread key, generation, reason, time, the objective (clipped to
``objective_max_bytes`` and a quarter of the tokens), the execution cursor (each field clipped to
``cursor_max_bytes`` and 1/16 of the tokens), the next action, input counts per state, source
pointers, the plan header, the budget report and the cuts. Every other text is first capped at
``item_max_bytes`` (notices at twice that) and 1/16 of the tokens.

Drop order when everything does not fit (first dropped first; oldest first inside a step):

1.  texts of superseded and rolled-back inputs
2.  texts of handled inputs
3.  assistant claims, but the last one of each of the newest 3 turns
4.  runtime facts: session starts / ends, deliveries and finished-call facts first, then
    crashes, aborts, boundaries, reconciliations and rewinds
5.  the work ledger of turns with no actionable input (finished calls, identical ones grouped;
    their failed calls stay with step 15)
6.  the last assistant claim of each of the newest 3 turns (with what the turn's recorded
    calls say against it: ``capsule.claim_check``)
7.  notices of priority below 50 (lowest priority first)
8.  rows of superseded / rolled-back inputs, then of handled inputs (counts stay in
    ``input_counts``)
9.  attachment references
10. plan items: completed ones first, then the others from the end of the list
11. background work
12. extra permission and model settings
13. model / provider, permissions / sandbox / approval, then the workspace reference (its
    model-facing view only: ``capsule.workspace_view``)
14. notices of priority 50 and above (lowest priority first)
15. the work ledger of turns with an actionable input: what was already done for it (its ok
    calls first, then the failed calls of every turn)
16. texts of actionable inputs other than the objective (queued ones first)
17. arguments of in-flight / unknown-outcome tool calls
18. rows of actionable inputs (pending, interrupted, reconciling, queued)
19. rows of in-flight / unknown-outcome tool calls

Elements are kept in the reverse order until one does not fit; that one is clipped to the room
left when it has text, and everything after it is dropped, so nothing of a later step is kept
while an earlier one lost something. Every clip is a cut of its own; everything dropped whole
is one cut per field group (items, total bytes and tokens, sha256 over the texts, first and
last pointer). If even the skeleton does not fit, it shrinks: objective and cursor limits halve,
then the group cuts merge into one.

Lone surrogates are replaced by U+FFFD and counted in ``budget.replaced_surrogates``; hashes of
cut texts are over the original text (UTF-8, surrogatepass), as the store holds it.

Cost: tokens are only counted for texts already clipped by bytes, for the elements actually
considered (in keep order, stopping at the first misfit), and costs are cached across the few
verify-and-shrink rounds, so 10,000 inputs cost one sort and a pass, not a re-render each.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from capsule import render
from capsule.elements import Element, PendingCut, Skeleton, apply_settings, collect
from capsule.model import (
    BudgetReport,
    Capsule,
    Cursor,
    Cut,
    Objective,
    Plan,
    canonical_json,
    encode_capsule,
)
from capsule.source import CapsuleSource
from capsule.textclip import (
    clip_json_bytes,
    clip_tokens,
    json_size,
    raw_bytes,
    render_literal,
    sha256_text,
    sha256_texts,
    short_id,
)
from capsule.tokens import TokenCounter, get_token_counter

MIN_BYTES = 6144
MIN_TOKENS = 2000


class Budget(BaseModel):
    """Limits of one capsule. Unset per-field limits scale with ``max_bytes``.

    Per-field limits count a text's size inside the canonical JSON (its string literal, quotes
    and escapes included: a NUL costs 6 bytes), which is what ``max_bytes`` is measured on.
    Budgets below ``MIN_BYTES`` / ``MIN_TOKENS`` are rejected (``ValueError``): below them even
    the skeleton of a capsule for an ordinary thread would not fit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_bytes: int = 16384
    max_tokens: int = 4000
    objective_max_bytes: int | None = None  # default min(4096, max_bytes // 4)
    cursor_max_bytes: int | None = None  # per cursor field; default min(1024, max_bytes // 16)
    item_max_bytes: int | None = None  # any other text; default min(1024, max_bytes // 16)

    @model_validator(mode="after")
    def _check(self) -> Budget:
        if self.max_bytes < MIN_BYTES:
            raise ValueError(f"max_bytes must be at least {MIN_BYTES} (got {self.max_bytes})")
        if self.max_tokens < MIN_TOKENS:
            raise ValueError(f"max_tokens must be at least {MIN_TOKENS} (got {self.max_tokens})")
        for name, value, cap in (
            ("objective_max_bytes", self.objective_max_bytes, self.max_bytes // 4),
            ("cursor_max_bytes", self.cursor_max_bytes, self.max_bytes // 8),
            ("item_max_bytes", self.item_max_bytes, self.max_bytes // 4),
        ):
            if value is not None and not 16 <= value <= cap:
                raise ValueError(f"{name} must be between 16 and {cap} for max_bytes={self.max_bytes} (got {value})")
        return self

    @property
    def objective_bytes(self) -> int:
        return self.objective_max_bytes or min(4096, self.max_bytes // 4)

    @property
    def cursor_bytes(self) -> int:
        return self.cursor_max_bytes or min(1024, self.max_bytes // 16)

    @property
    def item_bytes(self) -> int:
        return self.item_max_bytes or min(1024, self.max_bytes // 16)

    @property
    def objective_tokens(self) -> int:
        return self.max_tokens // 4

    @property
    def cursor_tokens(self) -> int:
        return self.max_tokens // 16

    @property
    def item_tokens(self) -> int:
        return max(32, self.max_tokens // 16)


# Room kept free while choosing, for what estimates miss (newline merges, number widths).
SLACK_BYTES = 48
SLACK_TOKENS = 12
ROUNDS = 6
# A clipped remainder shorter than this is not worth its cut record.
MIN_PARTIAL_BYTES = 48
# When the skeleton is tight, everything dropped whole is one cut (per-field counts stay in
# budget.dropped).
MERGED_FIELD = "*"
MERGE_GAIN = 2
# Placeholder numbers for estimating a cut record before its sizes are known.
_BIG = 99_999_999
# A group of dropped items is counted exactly up to this size, else estimated from a sample.
GROUP_EXACT_BYTES = 16 * 1024
TINY_ID = 40


@dataclass(frozen=True)  # hashable: measurements are kept by it (_Builder.bare)
class _SkeletonLimits:
    objective_bytes: int
    objective_tokens: int
    cursor_bytes: int
    cursor_tokens: int
    merge_groups: bool
    tiny_ids: bool = False  # last resort: every identifier in the skeleton and cuts shortened


@dataclass
class _Measured:
    capsule: Capsule
    bytes: int
    tokens: int


@dataclass
class _Builder:
    source: CapsuleSource
    budget: Budget
    counter: TokenCounter
    skeleton: Skeleton = field(init=False)
    elements: list[Element] = field(init=False)
    _cut_cache: dict[tuple[str, int], tuple[int, bool]] = field(default_factory=dict)
    _group_cache: dict[tuple[str, tuple[int, ...]], Cut] = field(default_factory=dict)
    _suffix_cache: dict[bool, list[tuple[int, int]]] = field(default_factory=dict)
    _cap_cache: dict[tuple[int, int, int], tuple[str, str]] = field(default_factory=dict)
    _bare_cache: dict[_SkeletonLimits, _Measured] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.skeleton, self.elements = collect(self.source)
        self.elements.sort(key=lambda e: e.rank, reverse=True)  # keep order

    # -- token helpers -------------------------------------------------------------------------
    def literal_tokens(self, text: str) -> int:
        return self.counter.count(render_literal(text))

    def cap(self, text: str, max_bytes: int, max_tokens: int) -> str:
        key = (id(text), max_bytes, max_tokens)  # the skeleton's texts are capped every round
        hit = self._cap_cache.get(key)
        if hit is not None and hit[0] is text:
            return hit[1]
        clipped = clip_tokens(clip_json_bytes(text, max_bytes), max_tokens, self.literal_tokens)
        self._cap_cache[key] = (text, clipped)
        return clipped

    def original_tokens(self, text: str) -> tuple[int, bool]:
        key = (sha256_text(text), len(text))
        if key not in self._cut_cache:
            self._cut_cache[key] = self.counter.count_bounded(text)
        return self._cut_cache[key]

    # -- cuts ----------------------------------------------------------------------------------
    def make_cut(self, pending: PendingCut) -> Cut:
        tokens, exact = self.original_tokens(pending.original)
        return Cut(
            field=pending.field,
            original_bytes=len(raw_bytes(pending.original)),
            original_tokens=tokens,
            original_tokens_exact=exact,
            kept_bytes=len(pending.kept.encode("utf-8")),
            kept_tokens=self.counter.count(pending.kept) if pending.kept else 0,
            sha256=sha256_text(pending.original),
            pointer=pending.pointer,
        )

    def group_cut(self, group: str, dropped: list[Element]) -> Cut:
        # the rounds of one build often drop the same members: hash them once
        key = (group, tuple(map(id, dropped)))
        if key not in self._group_cache:
            self._group_cache[key] = self._group_cut(group, dropped)
        return self._group_cache[key]

    def _group_cut(self, group: str, dropped: list[Element]) -> Cut:
        texts = [e.original for e in dropped]
        total = sum(e.original_bytes for e in dropped)
        if total <= GROUP_EXACT_BYTES:  # small: the exact sum, one count per item
            tokens, exact = sum(self.counter.count(t) for t in texts), True
        else:  # large: one count over a sample of whole items, extrapolated by size
            sample: list[str] = []
            sample_bytes = 0
            for e in dropped:
                if sample and sample_bytes + e.original_bytes > GROUP_EXACT_BYTES:
                    break
                sample.append(e.original[:GROUP_EXACT_BYTES])
                sample_bytes += len(raw_bytes(sample[-1]))
            counted = self.counter.count("\n".join(sample))
            tokens, exact = -(-counted * total // max(1, sample_bytes)), False
        return Cut(
            field=group,
            items=sum(e.items for e in dropped),
            original_bytes=total,
            original_tokens=tokens,
            original_tokens_exact=exact,
            kept_bytes=0,
            kept_tokens=0,
            sha256=sha256_texts(texts),
            pointer=dropped[0].pointer,
            last_pointer=dropped[-1].pointer if len(dropped) > 1 else None,
        )

    def cut_cost(self, field_name: str, pointer: str) -> tuple[int, int]:
        probe = Cut(
            field=field_name, original_bytes=_BIG, original_tokens=_BIG, kept_bytes=_BIG,
            kept_tokens=_BIG, sha256="0" * 64, pointer=pointer,
        )
        return (
            len(canonical_json(probe.model_dump(mode="json"))) + 1,
            self.counter.count(render.cut_line(probe, self.skeleton.thread.thread_id)) + 1,
        )

    # -- element costs -------------------------------------------------------------------------
    def capped(self, el: Element) -> str | None:
        if el.full is None:
            return None
        if el.capped is None:
            limit = self.budget.item_bytes * (2 if el.slot == "notices" else 1)
            el.capped = self.cap(el.full, limit, self.budget.item_tokens * (2 if el.slot == "notices" else 1))
        return el.capped

    def object_cost(self, obj: Any, line: str) -> tuple[int, int]:
        data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
        return len(canonical_json(data)) + 1, self.counter.count(line) + 1

    def cost(self, el: Element, text: str | None) -> tuple[int, int]:
        """Bytes and tokens ``el`` adds when kept with ``text``, cut records included."""
        clipped = el.full is not None and text != el.full
        if el.parent is None:
            obj = el.build(text)
            b, t = self.object_cost(obj, el.line(obj, clipped))
        else:  # a text of a row: the row with it minus the row without it
            with_obj = el.build(text)
            without = el.parent.build(None)
            wb, wt = self.object_cost(with_obj, el.line(with_obj, clipped))
            ob, ot = self.object_cost(without, el.parent.line(without, False))
            b, t = wb - ob, wt - ot
        for _ in el.pre_cuts:
            cb, ct = self.cut_cost(el.field or el.group, el.pointer)
            b, t = b + cb, t + ct
        if clipped:
            cb, ct = self.cut_cost(el.field, el.pointer)
            b, t = b + cb, t + ct
        return b, t

    def full_cost(self, el: Element) -> tuple[int, int]:
        if el.cost is None:
            el.cost = self.cost(el, self.capped(el))
        return el.cost

    def partial(self, el: Element, room_bytes: int, room_tokens: int) -> str | None:
        """The longest clip of ``el``'s text that fits the room left, or None."""
        text = self.capped(el)
        if not text or room_bytes < MIN_PARTIAL_BYTES:
            return None
        base_b, base_t = self.cost(el, "")
        if base_b >= room_bytes or base_t >= room_tokens:
            return None
        kept = clip_json_bytes(text, room_bytes - base_b + 2)
        kept = clip_tokens(kept, room_tokens - base_t, self.literal_tokens)
        for _ in range(4):  # estimates are near-additive; tighten until it really fits
            if json_size(kept) < MIN_PARTIAL_BYTES // 2:
                return None
            b, t = self.cost(el, kept)
            if b <= room_bytes and t <= room_tokens:
                return kept
            kept = kept[: int(len(kept) * 0.8)]
        return None

    # -- selection -----------------------------------------------------------------------------
    def group_cost(self, group: str, members: list[Element]) -> tuple[int, int]:
        """Upper estimate of the cut summarising ``members`` dropped whole."""
        pointer = max((e.pointer for e in members), key=len, default="")
        total = sum(e.original_bytes for e in members)
        # numbers as wide as the real ones can get (tokens never exceed bytes here by much)
        probe = Cut(
            field=group, items=sum(e.items for e in members), original_bytes=total, original_tokens=total * 2 + 9,
            original_tokens_exact=False, kept_bytes=0, kept_tokens=0, sha256="0" * 64,
            pointer=pointer, last_pointer=pointer,
        )
        return (
            len(canonical_json(probe.model_dump(mode="json"))) + 1,
            self.counter.count(render.cut_line(probe, self.skeleton.thread.thread_id)) + 1,
        )

    def suffix_costs(self, merge: bool) -> list[tuple[int, int]]:
        """For each position p of the keep order: the cost of the group cuts if everything from
        p on is dropped (so a kept element also pays for what its stop leaves behind)."""
        if merge not in self._suffix_cache:
            self._suffix_cache[merge] = self._suffix_costs(merge)
        return self._suffix_cache[merge]

    def _suffix_costs(self, merge: bool) -> list[tuple[int, int]]:
        members: dict[str, list[Element]] = {}
        for el in self.elements:
            members.setdefault(el.group, []).append(el)
        each = {g: self.group_cost(g, m) for g, m in members.items()}
        merged = self.group_cost(MERGED_FIELD, self.elements) if members else (0, 0)
        out = [(0, 0)] * (len(self.elements) + 1)
        present: set[str] = set()
        b = t = 0
        for p in range(len(self.elements) - 1, -1, -1):
            group = self.elements[p].group
            if group not in present:
                present.add(group)
                b, t = b + each[group][0], t + each[group][1]
            out[p] = merged if merge else (b, t)
        return out

    def select(self, room_bytes: int, room_tokens: int, merge: bool) -> dict[Element, str | None]:
        suffix = self.suffix_costs(merge)
        kept: dict[Element, str | None] = {}
        used_b = used_t = 0
        for p, el in enumerate(self.elements):
            if el.parent is not None and el.parent not in kept:
                break
            b, t = self.full_cost(el)
            rest_b, rest_t = suffix[p + 1]
            if used_b + b + rest_b <= room_bytes and used_t + t + rest_t <= room_tokens:
                kept[el] = self.capped(el)
                used_b, used_t = used_b + b, used_t + t
                continue
            text = self.partial(el, room_bytes - used_b - rest_b, room_tokens - used_t - rest_t)
            if text is not None:
                kept[el] = text
            break
        return kept

    # -- composing and measuring ---------------------------------------------------------------
    def skeleton_parts(self, limits: _SkeletonLimits) -> tuple[Objective, Cursor, list[PendingCut]]:
        sk = self.skeleton
        cuts: list[PendingCut] = []
        text = self.cap(sk.objective.text, limits.objective_bytes, limits.objective_tokens)
        if text != sk.objective.text:
            cuts.append(PendingCut("objective.text", sk.objective_original, text, sk.objective.pointer))
        objective = sk.objective.model_copy(update={"text": text})
        updates: dict[str, str] = {}
        for name, original in sk.cursor_original.items():
            full = getattr(sk.cursor, name)
            kept = self.cap(full, limits.cursor_bytes, limits.cursor_tokens)
            updates[name] = kept
            if kept != full:
                cuts.append(PendingCut(f"cursor.{name}", original, kept, sk.cursor.pointer))
        return objective, sk.cursor.model_copy(update=updates), cuts

    def compose(self, kept: dict[Element, str | None], limits: _SkeletonLimits, groups_cut: bool = True) -> Capsule:
        sk = self.skeleton
        objective, cursor, pending = self.skeleton_parts(limits)
        rows: dict[str, list[tuple[int, Any]]] = {}
        texts: dict[Element, str | None] = {e.parent: t for e, t in kept.items() if e.parent is not None}
        parts: dict[str, dict[str, Any]] = {}
        for el, text in kept.items():
            if el.parent is not None:
                continue
            obj = el.build(texts.get(el, text))
            if isinstance(obj, dict):
                parts[el.slot] = obj
            else:
                rows.setdefault(el.slot, []).append((el.index, obj))
            pending.extend(el.pre_cuts)
        for el, text in kept.items():
            if el.full is not None and text != el.full:
                pending.append(PendingCut(el.field, el.original, text or "", el.pointer))
        # dropped whole, grouped by field, in drop order; a text whose row is dropped goes with it
        groups: dict[str, list[Element]] = {}
        for el in reversed(self.elements):
            if el in kept or (el.parent is not None and el.parent not in kept):
                continue
            groups.setdefault(el.group, []).append(el)
        for members in groups.values():
            members.sort(key=lambda e: (e.slot, e.index))
        cuts = [self.make_cut(p) for p in pending]
        if groups_cut:
            unread = [not_gathered_cut(n) for n in self.source.not_gathered]
            if limits.merge_groups and len(groups) + len(unread) > 1:
                everything = [e for members in groups.values() for e in members]
                cuts.append(merge_counts(self.group_cut(MERGED_FIELD, everything)
                                         if everything else None, unread))
            else:
                cuts.extend(self.group_cut(g, members) for g, members in groups.items())
                cuts.extend(unread)

        def ordered(slot: str) -> list[Any]:
            return [obj for _, obj in sorted(rows.get(slot, []), key=lambda pair: pair[0])]

        permissions, model_settings = apply_settings(parts)
        workspace = parts.get("workspace")
        plan = None
        if sk.plan is not None:
            plan = Plan(**{**sk.plan.model_dump(), "items": ordered("plan")})
        b = self.budget
        capsule = Capsule(
            thread=sk.thread,
            generation=sk.generation,
            reason=sk.reason,
            created_at=sk.created_at,
            supersedes_generation=sk.supersedes_generation,
            objective=objective,
            cursor=cursor,
            next_action=sk.next_action,
            input_counts=sk.input_counts,
            inputs=ordered("inputs"),
            tool_calls=ordered("tool_calls"),
            work_done=ordered("work_done"),
            work_record=sk.work_record,
            runtime_facts=ordered("runtime_facts"),
            assistant_claims=ordered("assistant_claims"),
            workspace=workspace,
            permissions=permissions,
            model_settings=model_settings,
            attachments=ordered("attachments"),
            plan=plan,
            background=ordered("background"),
            source=sk.source,
            notices=ordered("notices"),
            cuts=cuts,
            guard=sk.guard,
            budget=BudgetReport(
                encoding=self.counter.name,
                max_bytes=b.max_bytes,
                max_tokens=b.max_tokens,
                objective_max_bytes=limits.objective_bytes,
                cursor_max_bytes=limits.cursor_bytes,
                replaced_surrogates=sk.replaced_surrogates,
                dropped={**{g: sum(e.items for e in m) for g, m in groups.items()},
                         **{n.field: n.items for n in self.source.not_gathered}},
            ),
        )
        return _tiny(capsule) if limits.tiny_ids else capsule

    def measure(self, capsule: Capsule) -> _Measured:
        """Record the final totals in the capsule: tokens of its rendering, and its own encoded
        length (a fixed point: the number counts its own digits, :func:`self_counting_length`).
        Encoded once, with ``bytes`` 0: the encoding with any other number differs only by
        that number's digits (the fitting measures ~8 capsules a build; encoding each ~3 times
        to find the fixed point was ~3 ms of a ~20 ms build)."""
        tokens = self.counter.count(render.render_capsule(capsule))
        report = capsule.budget.model_copy(update={"tokens": tokens, "bytes": 0})
        size = self_counting_length(len(encode_capsule(capsule.model_copy(update={"budget": report}))))
        capsule = capsule.model_copy(update={"budget": report.model_copy(update={"bytes": size})})
        return _Measured(capsule, size, tokens)

    def fits(self, m: _Measured) -> bool:
        return m.bytes <= self.budget.max_bytes and m.tokens <= self.budget.max_tokens

    def ladder(self) -> Iterable[_SkeletonLimits]:
        b = self.budget
        ob, ot, cb, ct = b.objective_bytes, b.objective_tokens, b.cursor_bytes, b.cursor_tokens
        yield _SkeletonLimits(ob, ot, cb, ct, False)
        yield _SkeletonLimits(ob, ot, cb, ct, True)
        yield _SkeletonLimits(ob // 2, ot // 2, cb // 2, ct // 2, True)
        yield _SkeletonLimits(ob // 4, ot // 4, cb // 4, ct // 4, True)
        yield _SkeletonLimits(min(ob, 256), min(ot, 64), min(cb, 64), min(ct, 16), True)
        yield _SkeletonLimits(0, 0, 0, 0, True)
        yield _SkeletonLimits(0, 0, 0, 0, True, tiny_ids=True)

    def attempt(self, limits: _SkeletonLimits, to_beat: int = -1) -> tuple[Capsule, int] | None:
        """The best capsule under ``limits`` and how many elements it keeps; None when even the
        capsule that keeps nothing droppable (group cuts included) does not fit.

        ``to_beat``: only a capsule keeping more elements matters (the merged cut must keep
        MERGE_GAIN times as many). Once the first selection shows none can, the empty capsule
        is returned without composing any other: a later round has less room, so it keeps at
        most the whole elements this one kept and one clipped text."""
        b = self.budget
        empty = self.measure(self.compose({}, limits))
        if not self.fits(empty):
            return None
        bare = self.bare(limits)
        room_b = b.max_bytes - bare.bytes - SLACK_BYTES
        room_t = b.max_tokens - bare.tokens - SLACK_TOKENS
        for attempt in range(ROUNDS):
            if room_b <= 0 or room_t <= 0:
                break
            kept = self.select(room_b, room_t, limits.merge_groups)
            if not kept:
                break
            if len(kept) + 1 <= to_beat:
                return empty.capsule, 0
            done = self.measure(self.compose(kept, limits))
            if self.fits(done):
                return done.capsule, len(kept)
            # shrink by the overshoot, a bit more each round
            if done.bytes > b.max_bytes:
                room_b -= done.bytes - b.max_bytes + SLACK_BYTES * 2**attempt
            if done.tokens > b.max_tokens:
                room_t -= done.tokens - b.max_tokens + SLACK_TOKENS * 2**attempt
        return empty.capsule, 0

    def bare(self, limits: _SkeletonLimits) -> _Measured:
        """The skeleton under ``limits`` with nothing kept and no cut records, measured once
        for both ways of cutting groups (merged or not: it has no group cut to merge)."""
        key = replace(limits, merge_groups=False)
        if key not in self._bare_cache:
            self._bare_cache[key] = self.measure(self.compose({}, key, groups_cut=False))
        return self._bare_cache[key]

    def build(self) -> Capsule:
        """One cut per dropped field unless one merged cut keeps MERGE_GAIN times as many
        elements; then ever smaller skeletons until one fits."""
        best: tuple[Capsule, int] | None = None
        for limits in self.ladder():
            got = self.attempt(limits, best[1] * MERGE_GAIN if best is not None else -1)
            if got is None:
                continue
            if best is None or got[1] > best[1] * MERGE_GAIN:
                best = got
            if limits.merge_groups:
                break
        if best is None:  # unreachable for budgets >= MIN_BYTES / MIN_TOKENS (tested)
            raise RuntimeError("the capsule skeleton exceeds the budget even at its smallest")
        return best[0]


def self_counting_length(length_with_zero: int) -> int:
    """The encoded length of a capsule whose ``budget.bytes`` is that length, given its length
    with ``bytes`` 0: canonical JSON writes a non-negative integer as its decimal digits, so
    the number N adds ``len(str(N)) - 1`` bytes to the zero's. The N that is its own length is
    found by counting digits, step by step as re-encoding from 0 found it (where two numbers
    would do, 9 and 10 for a zero length of 9, the same one), not by encoding again."""
    size = 0
    while True:
        encoded = length_with_zero - 1 + len(str(size))
        if encoded == size:
            return size
        size = encoded


def _tiny(capsule: Capsule) -> Capsule:
    """The skeleton with every identifier cut to ``TINY_ID`` bytes (prefix + hash), for sources
    whose ids alone would not fit the smallest budget."""
    def t(value: str | None) -> str | None:
        return None if value is None else short_id(value, TINY_ID)

    c = capsule
    return c.model_copy(update={
        "thread": c.thread.model_copy(update={k: t(getattr(c.thread, k)) for k in ("runtime", "session_id", "thread_id")}),
        "reason": t(c.reason),
        "objective": c.objective.model_copy(update={"input_id": t(c.objective.input_id), "pointer": t(c.objective.pointer)}),
        "cursor": c.cursor.model_copy(update={"pointer": t(c.cursor.pointer)}),
        "next_action": c.next_action.model_copy(update={"refs": [t(r) for r in c.next_action.refs[:1]]}),
        "source": c.source.model_copy(update={"transcript_path": t(c.source.transcript_path),
                                              "transcript_prefix_sha256": t(c.source.transcript_prefix_sha256)}),
        "plan": None if c.plan is None else c.plan.model_copy(update={"tool": t(c.plan.tool), "pointer": t(c.plan.pointer)}),
        "guard": None,
        "cuts": [x.model_copy(update={"field": t(x.field), "pointer": t(x.pointer), "last_pointer": t(x.last_pointer)})
                 for x in c.cuts],
    })


def not_gathered_cut(n) -> Cut:
    """The cut of items the gathering never read (see ``source.SourceNotGathered``): their
    tokens are estimated from their stored size, their hash is over their pointers."""
    return Cut(field=n.field, items=n.items, original_bytes=n.original_bytes,
               original_tokens=-(-n.original_bytes // 4), original_tokens_exact=False,
               kept_bytes=0, kept_tokens=0, sha256=n.pointers_sha256, pointer=n.pointer,
               last_pointer=n.last_pointer)


def merge_counts(merged: Cut | None, more: list[Cut]) -> Cut:
    """One cut for everything when even the group cuts do not fit: counts and sizes add up (the
    hash stays the one over the dropped texts that were read; unread items have none)."""
    parts = ([merged] if merged is not None else []) + more
    first = parts[0]
    return first.model_copy(update={
        "field": MERGED_FIELD, "items": sum(c.items for c in parts),
        "original_bytes": sum(c.original_bytes for c in parts),
        "original_tokens": sum(c.original_tokens for c in parts),
        "original_tokens_exact": all(c.original_tokens_exact for c in parts),
        "last_pointer": parts[-1].last_pointer or parts[-1].pointer if len(parts) > 1
        else first.last_pointer})


def build_capsule(
    source: CapsuleSource,
    budget: Budget | None = None,
    counter: TokenCounter | None = None,
) -> Capsule:
    """The capsule of ``source`` within ``budget`` (default 16 KiB and 4,000 tokens).

    ``counter`` defaults to the process-wide one (``tokens.get_token_counter``); pass
    ``tokens.token_counter_for(name)`` to pin the encoding (tests, reproducing a count).
    """
    return _Builder(source, budget or Budget(), counter or get_token_counter()).build()
