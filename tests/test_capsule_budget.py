"""The budget: never fails for size, never exceeds bytes or tokens, drops in the stated order."""
from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_capsule_sample import T0, counter, ptr, representative_source

from capsule import MIN_BYTES, MIN_TOKENS, Budget, build_capsule, decode_capsule, encode_capsule, render_capsule
from capsule.budget import GROUP_EXACT_BYTES, MERGED_FIELD
from capsule.elements import G_INPUT_ROW_HIST, G_INPUT_TEXT_HIST
from capsule.textclip import sha256_texts
from capsule.source import (
    CapsuleSource,
    SourceClaim,
    SourceCursor,
    SourceFact,
    SourceInput,
    SourceNotice,
    SourceToolCall,
    ThreadKey,
)

COUNTER = counter()


def assert_within(capsule, budget: Budget) -> tuple[int, int]:
    encoded = encode_capsule(capsule)
    rendered = render_capsule(capsule)
    tokens = COUNTER.count(rendered)
    assert len(encoded) <= budget.max_bytes
    assert tokens <= budget.max_tokens
    # the report tells the truth about the final capsule
    assert capsule.budget.bytes == len(encoded)
    assert capsule.budget.tokens == tokens
    assert capsule.budget.encoding == COUNTER.name
    rendered.encode("utf-8")  # always encodable
    assert decode_capsule(encoded) == capsule
    return len(encoded), tokens


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_default_budget_values():
    b = Budget()
    assert (b.max_bytes, b.max_tokens, b.objective_bytes, b.cursor_bytes) == (16384, 4000, 4096, 1024)


@pytest.mark.parametrize("kwargs", [
    {"max_bytes": MIN_BYTES - 1}, {"max_tokens": MIN_TOKENS - 1}, {"objective_max_bytes": 10_000},
    {"cursor_max_bytes": 0}, {"unknown": 1},
])
def test_budget_rejects_impossible_limits_clearly(kwargs):
    with pytest.raises(ValueError):
        Budget(**kwargs)


def test_five_megabyte_objective_is_clipped_and_recorded():
    huge = ("Refactor the parser so that every token keeps its span. " * 100_000)[:5_000_000]
    source = representative_source(inputs=[
        SourceInput(id="in-big", text=huge, state="pending", turn_id="t1", admitted_seq=3, pointer=ptr(3)),
    ])
    budget = Budget()
    capsule = build_capsule(source, budget, counter=COUNTER)
    assert_within(capsule, budget)
    assert capsule.objective.input_id == "in-big"
    assert huge.startswith(capsule.objective.text) and capsule.objective.text
    assert len(capsule.objective.text.encode()) <= budget.objective_bytes
    cut = next(c for c in capsule.cuts if c.field == "objective.text")
    assert cut.original_bytes == len(huge.encode()) == 5_000_000
    assert cut.kept_bytes == len(capsule.objective.text.encode())
    assert cut.kept_tokens == COUNTER.count(capsule.objective.text)
    assert cut.sha256 == sha(huge)
    assert cut.pointer == ptr(3)
    assert not cut.original_tokens_exact and cut.original_tokens > 500_000
    assert "[clipped: full text at pointer]" in render_capsule(capsule)


def test_ten_thousand_inputs_keep_the_actionable_ones():
    inputs = [
        SourceInput(id=f"in-{k:05d}", text=f"handled request {k}: please adjust module {k % 97}", state="handled",
                    turn_id=f"t{k}", admitted_seq=k, pointer=ptr(k))
        for k in range(10_000)
    ]
    for k in (1234, 5678, 9998):  # steered / interrupted inputs buried in the history
        state = "interrupted" if k == 5678 else "pending"
        inputs[k] = inputs[k].model_copy(update={"state": state, "text": f"OPEN request {k}"})
    inputs.append(SourceInput(id="in-q", text="queued: then update the changelog", state="queued", queued=True,
                              admitted_seq=10_001, pointer=ptr(10_001)))
    source = representative_source(inputs=inputs)
    budget = Budget()
    capsule = build_capsule(source, budget, counter=COUNTER)
    assert_within(capsule, budget)
    assert sum(capsule.input_counts.values()) == 10_001
    assert capsule.input_counts == {"handled": 9_997, "pending": 2, "interrupted": 1, "queued": 1}
    listed = {i.id: i for i in capsule.inputs}
    for ident in ("in-01234", "in-05678", "in-09998", "in-q"):
        assert ident in listed
        assert listed[ident].state == source.inputs[[i.id for i in source.inputs].index(ident)].state
    assert capsule.objective.input_id == "in-09998"
    assert listed["in-01234"].text == "OPEN request 1234"
    # every handled input is accounted for: listed, or counted in a cut of dropped rows
    handled_listed = sum(1 for i in capsule.inputs if i.state == "handled")
    assert handled_listed + capsule.budget.dropped[G_INPUT_ROW_HIST] == 9_997
    assert capsule.budget.dropped.get(G_INPUT_TEXT_HIST, 0) == sum(
        1 for i in capsule.inputs if i.state == "handled" and i.text is None)
    # and the cuts say so: one cut per dropped field, or one merged cut for all of them
    group_cuts = [c for c in capsule.cuts if c.kept_bytes == 0 and c.field in (*capsule.budget.dropped, MERGED_FIELD)]
    assert sum(c.items for c in group_cuts) == sum(capsule.budget.dropped.values())
    assert all(len(c.sha256) == 64 and c.pointer for c in group_cuts)


HOSTILE_UNICODE = [
    "Grüße, Ελληνικά, 日本語のテキスト, עברית, हिन्दी " * 40,
    "🚀🔥👩‍👩‍👧‍👦🏳️‍🌈🇺🇳 " * 300,
    "NUL\x00bytes\x00everywhere\x00" * 200,
    "lone \ud800 high and \udfff low surrogates, pair \ud83d\ude00 split" * 50,
    "\u2028\u2029\x85\r\n\t\x1b" * 400,
]


@pytest.mark.parametrize("text", HOSTILE_UNICODE, ids=["multibyte", "emoji", "nul", "surrogates", "separators"])
@pytest.mark.parametrize("max_bytes,max_tokens", [(16384, 4000), (MIN_BYTES, MIN_TOKENS), (8192, 4000), (16384, 2000)])
def test_hostile_unicode_fits(text, max_bytes, max_tokens):
    inputs = [SourceInput(id=f"in-{k}", text=text, state="handled" if k < 30 else "pending", admitted_seq=k,
                          pointer=ptr(k)) for k in range(34)]
    source = representative_source(
        inputs=inputs,
        claims=[SourceClaim(text=text, seq=k, pointer=ptr(100 + k)) for k in range(10)],
        facts=[SourceFact(kind="note", text=text, seq=k, pointer=ptr(200 + k)) for k in range(10)],
        cursor=SourceCursor(last_completed_step=text, last_runtime_outcome=text, pointer=ptr(300)),
    )
    budget = Budget(max_bytes=max_bytes, max_tokens=max_tokens)
    capsule = build_capsule(source, budget, counter=COUNTER)
    assert_within(capsule, budget)
    if "\ud800" in text:
        assert capsule.budget.replaced_surrogates > 0
        assert "\ufffd" in capsule.objective.text
        assert "\U0001f600" in capsule.objective.text  # a valid pair is joined, not replaced
    assert capsule.objective.input_id == "in-33"
    pending = sorted(int(i.id[3:]) for i in capsule.inputs if i.state == "pending")
    assert pending and pending == list(range(pending[0], 34))  # the oldest go first, the objective last
    if max_bytes >= 8192:
        assert pending == [30, 31, 32, 33]


def test_cut_hash_is_over_the_original_text_with_surrogates():
    text = "x\ud800" * 5000
    source = representative_source(inputs=[SourceInput(id="in-s", text=text, state="pending", pointer=ptr(1))])
    capsule = build_capsule(source, counter=COUNTER)
    cut = next(c for c in capsule.cuts if c.field == "objective.text")
    assert cut.sha256 == sha(text)
    assert cut.original_bytes == len(text.encode("utf-8", "surrogatepass"))


def test_pending_inputs_and_unknown_calls_survive_when_handled_are_dropped():
    big = "details " * 400
    inputs = [SourceInput(id=f"h{k}", text=big, state="handled", admitted_seq=k, pointer=ptr(k)) for k in range(200)]
    inputs += [SourceInput(id=f"p{k}", text=f"open {k} " + big, state="pending", admitted_seq=300 + k,
                           pointer=ptr(300 + k)) for k in range(3)]
    calls = [SourceToolCall(call_id=f"ok{k}", tool="shell", args={"c": big}, status="ok", pointer=ptr(400 + k))
             for k in range(50)]
    calls += [SourceToolCall(call_id="u1", tool="apply_patch", args={"p": big}, status="unknown", pointer=ptr(500)),
              SourceToolCall(call_id="f1", tool="shell", args={"c": "sleep 100"}, status="in_flight", pointer=ptr(501))]
    source = representative_source(
        inputs=inputs, tool_calls=calls,
        claims=[SourceClaim(text=big, seq=k, pointer=ptr(600 + k)) for k in range(50)],
        facts=[SourceFact(kind="k", text=big, seq=k, pointer=ptr(700 + k)) for k in range(50)],
    )
    for max_bytes, max_tokens in [(MIN_BYTES, MIN_TOKENS), (8192, 2000), (16384, 4000)]:
        budget = Budget(max_bytes=max_bytes, max_tokens=max_tokens)
        capsule = build_capsule(source, budget, counter=COUNTER)
        assert_within(capsule, budget)
        ids = {i.id for i in capsule.inputs}
        assert {"p0", "p1", "p2"} <= ids, (max_bytes, ids)
        assert {"u1", "f1"} <= {c.call_id for c in capsule.tool_calls}
        assert sum(1 for i in capsule.inputs if i.state == "handled" and i.text) < 200
        statuses = {c.call_id: c.status for c in capsule.tool_calls}
        assert statuses["u1"] == "unknown" and statuses["f1"] == "in_flight"


def _levels(capsule) -> dict[str, tuple[int, int]]:
    """(kept, total) per observable step of the drop order, for the mixed source below."""
    inputs = capsule.inputs
    return {
        "handled_text": (sum(1 for i in inputs if i.state == "handled" and i.text is not None), 40),
        "claims": (sum(1 for c in capsule.assistant_claims if c.seq < 37), 37),
        "facts": (len(capsule.runtime_facts), 40),
        "settled_calls": (sum(w.count for w in capsule.work_done if w.status == "ok"), 40),
        # the last claim of each of the newest 3 turns (no turn ids here: each claim is one)
        "final_claims": (sum(1 for c in capsule.assistant_claims if c.seq >= 37), 3),
        "handled_rows": (sum(1 for i in inputs if i.state == "handled"), 40),
        "pending_text": (sum(1 for i in inputs if i.state == "pending" and i.text is not None), 5),
        "unknown_args": (sum(1 for c in capsule.tool_calls if c.status == "unknown" and c.args is not None), 3),
        "pending_rows": (sum(1 for i in inputs if i.state == "pending"), 6),
        "unknown_rows": (sum(1 for c in capsule.tool_calls if c.status == "unknown"), 3),
    }


def test_drop_order_is_the_stated_one():
    text = "lorem ipsum dolor sit amet " * 12
    source = representative_source(
        inputs=[SourceInput(id=f"h{k}", text=text, state="handled", admitted_seq=k, pointer=ptr(k)) for k in range(40)]
        + [SourceInput(id=f"p{k}", text=text, state="pending", admitted_seq=100 + k, pointer=ptr(100 + k))
           for k in range(6)],
        claims=[SourceClaim(text=text, seq=k, pointer=ptr(200 + k)) for k in range(40)],
        facts=[SourceFact(kind="f", text=text, seq=k, pointer=ptr(300 + k)) for k in range(40)],
        tool_calls=[SourceToolCall(call_id=f"ok{k}", tool="t", args={"a": text}, status="ok", pointer=ptr(400 + k))
                    for k in range(40)]
        + [SourceToolCall(call_id=f"u{k}", tool="t", args={"a": text}, status="unknown", pointer=ptr(500 + k))
           for k in range(3)],
        notices=[], attachments=[], plan=None, background=[], workspace=None,
    )
    order = list(_levels(build_capsule(source, counter=COUNTER)))
    seen_partial = set()
    for max_bytes in range(MIN_BYTES, 40_000, 1500):
        budget = Budget(max_bytes=max_bytes, max_tokens=20_000)
        capsule = build_capsule(source, budget, counter=COUNTER)
        assert_within(capsule, budget)
        levels = _levels(capsule)
        for low, name in enumerate(order):
            kept, _ = levels[name]
            if kept:  # something of this step survived: every later step is complete
                for later in order[low + 1:]:
                    assert levels[later][0] == levels[later][1], (max_bytes, name, later, levels)
        seen_partial.add(tuple(k for k, (kept, total) in levels.items() if 0 < kept < total))
    assert len(seen_partial) > 3  # the sweep crossed several steps


def test_minimum_budget_holds_a_worst_case_skeleton():
    """Over-long ids, pointers, cursor, objective, notices and every cut group at the minimum."""
    long_id = "Ω" * 3000
    source = CapsuleSource(
        thread=ThreadKey(runtime=long_id, session_id=long_id, thread_id=long_id),
        generation=1, reason=long_id, created_at=T0,
        inputs=[SourceInput(id=long_id + str(k), text="🚀" * 5000, state=s, turn_id=long_id, pointer=long_id,
                            attachments=[long_id] * 20)
                for k, s in enumerate(["handled", "pending", "queued", "superseded", "reconciling", "interrupted"] * 3)],
        tool_calls=[SourceToolCall(call_id=long_id + str(k), tool=long_id, args={"a": long_id}, status=s, pointer=long_id)
                    for k, s in enumerate(["ok", "error", "unknown", "in_flight"] * 3)],
        claims=[SourceClaim(text=long_id, pointer=long_id)], facts=[SourceFact(kind=long_id, text=long_id, pointer=long_id)],
        cursor=SourceCursor(last_completed_step="\x00" * 50_000, last_runtime_outcome="🚀" * 50_000, pointer=long_id),
        workspace={long_id: long_id, "head": long_id, "root": {"deep": [long_id] * 10}},
        notices=[SourceNotice(title=long_id, lines=[long_id] * 5, priority=p, pointer=long_id) for p in (0, 99)],
    )
    for budget in (Budget(max_bytes=MIN_BYTES, max_tokens=MIN_TOKENS), Budget(max_bytes=MIN_BYTES, max_tokens=50_000),
                   Budget(max_bytes=1_000_000, max_tokens=MIN_TOKENS)):
        capsule = build_capsule(source, budget, counter=COUNTER)
        assert_within(capsule, budget)
        assert capsule.next_action.kind == "reconcile_tool_call"
        assert sum(capsule.input_counts.values()) == 18


PIECES = ["\ud800", "\udfff", "\x00", "🚀", "👩‍👩‍👧", "日本語", "é", "\u2028", "\r\n", '"', "\\", "<<<", "## ",
          "state=handled", "<|endoftext|>", "word ", "x" * 50]
texts = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=3000),  # surrogates included
    st.lists(st.sampled_from(PIECES), max_size=400).map("".join),
)


@st.composite
def sources(draw):
    states = st.sampled_from(["queued", "pending", "handled", "reconciling", "interrupted", "superseded", "rolled_back"])
    n = draw(st.integers(0, 40))
    inputs = [SourceInput(id=draw(st.text(max_size=30)) + str(k), text=draw(texts), state=draw(states),
                          admitted_seq=draw(st.none() | st.integers(0, 10**6)), pointer=ptr(k)) for k in range(n)]
    calls = [SourceToolCall(call_id=f"c{k}", tool=draw(st.text(max_size=20)), args={"x": draw(texts)},
                            status=draw(st.sampled_from(["in_flight", "ok", "error", "unknown"])), pointer=ptr(k))
             for k in range(draw(st.integers(0, 8)))]
    return representative_source(
        inputs=inputs, tool_calls=calls,
        claims=[SourceClaim(text=draw(texts), pointer=ptr(k)) for k in range(draw(st.integers(0, 8)))],
        facts=[SourceFact(kind="k", text=draw(texts), pointer=ptr(k)) for k in range(draw(st.integers(0, 8)))],
        cursor=SourceCursor(last_completed_step=draw(texts), last_runtime_outcome=draw(texts)),
        notices=[SourceNotice(title=draw(texts), lines=[draw(texts)], priority=draw(st.integers(-5, 100)))
                 for _ in range(draw(st.integers(0, 3)))],
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(source=sources(), max_bytes=st.integers(MIN_BYTES, 24_000), max_tokens=st.integers(MIN_TOKENS, 6_000))
def test_property_never_exceeds_either_budget(source, max_bytes, max_tokens):
    budget = Budget(max_bytes=max_bytes, max_tokens=max_tokens)
    capsule = build_capsule(source, budget, counter=COUNTER)
    assert_within(capsule, budget)
    assert sum(capsule.input_counts.values()) == len(source.inputs)


@pytest.mark.parametrize("n,words", [(100, 100), (30, 60)], ids=["large-group", "small-group"])
def test_group_cut_describes_exactly_what_was_dropped(n, words):
    claims = [SourceClaim(text=f"claim {k}: " + "blah " * words, seq=k, pointer=ptr(1000 + k)) for k in range(n)]
    source = representative_source(claims=claims)
    capsule = build_capsule(source, counter=COUNTER)
    kept = [c.seq for c in capsule.assistant_claims]
    assert kept and kept == list(range(n - len(kept), n))  # the newest survive
    dropped = [c for c in claims if c.seq not in kept]
    cut = next(c for c in capsule.cuts if c.field == "assistant_claims")
    assert cut.items == len(dropped) == capsule.budget.dropped["assistant_claims"]
    assert cut.original_bytes == sum(len(c.text.encode()) for c in dropped)
    exact = sum(COUNTER.count(c.text) for c in dropped)
    if cut.original_bytes <= GROUP_EXACT_BYTES:
        assert cut.original_tokens == exact and cut.original_tokens_exact
    else:  # a large group is estimated from a sample, and says so
        assert not cut.original_tokens_exact and abs(cut.original_tokens - exact) <= exact * 0.1
    assert cut.sha256 == sha256_texts(c.text for c in dropped)
    assert (cut.pointer, cut.last_pointer) == (dropped[0].pointer, dropped[-1].pointer)
    assert (cut.kept_bytes, cut.kept_tokens) == (0, 0)


def test_clipped_item_records_its_own_cut():
    long_claim = "I changed the parser. " * 500
    source = representative_source(claims=[SourceClaim(text=long_claim, seq=1, pointer=ptr(77))])
    capsule = build_capsule(source, counter=COUNTER)
    (claim,) = capsule.assistant_claims
    assert long_claim.startswith(claim.text) and len(claim.text.encode()) < 1024
    cut = next(c for c in capsule.cuts if c.field == f"assistant_claims[{ptr(77)}].text")
    assert (cut.original_bytes, cut.kept_bytes) == (len(long_claim), len(claim.text.encode()))
    assert cut.kept_tokens == COUNTER.count(claim.text) and cut.sha256 == sha(long_claim)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=())))
def test_a_json_literal_is_what_json_dumps_writes_for_any_text(text):
    """``textclip.json_literal`` and ``render_literal`` call json's string encoder directly
   ; the literal is still ``json.dumps(text, ensure_ascii=False)``, lone surrogates,
    controls and line separators included."""
    import json

    from capsule.textclip import json_literal, render_literal

    assert json_literal(text) == json.dumps(text, ensure_ascii=False)
    assert json.loads(render_literal(text)) == text and "\n" not in render_literal(text)


def _reencoded_length(encode_with) -> int:
    """The fixed point as the build found it before: encode, set the length,
    encode again, until it holds."""
    size = 0
    for _ in range(8):
        encoded = len(encode_with(size))
        if encoded == size:
            return size
        size = encoded
    raise AssertionError("no fixed point in 8 encodings")


@pytest.mark.parametrize("pad", [*range(0, 40), *range(980, 1010), *range(9970, 10010),
                                 *range(99960, 100010)])
def test_the_self_counting_length_is_the_one_reencoding_finds(pad):
    """``measure`` encodes a capsule once, with ``bytes`` 0, and counts the digits the length
    adds (``self_counting_length``): the same number re-encoding until it holds found,
    across every change of digit count (9 → 10, 999 → 1,000 ...), and the encoding with it
    is exactly that long."""
    from capsule.budget import self_counting_length
    from capsule.model import canonical_json

    def encode_with(n: int) -> bytes:
        return canonical_json({"budget": {"bytes": n, "tokens": 7}, "pad": "x" * pad})

    size = self_counting_length(len(encode_with(0)))
    assert size == _reencoded_length(encode_with)
    assert len(encode_with(size)) == size


def _exhaustive(source, budget):
    """A builder that composes every attempt to its end (``to_beat`` ignored)."""
    from capsule.budget import _Builder

    builder = _Builder(source, budget, COUNTER)
    attempt = builder.attempt
    builder.attempt = lambda limits, to_beat=-1: attempt(limits)
    return builder


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(source=sources(), max_bytes=st.integers(MIN_BYTES, 24_000), max_tokens=st.integers(MIN_TOKENS, 6_000))
def test_an_attempt_that_cannot_win_ends_early_with_the_same_capsule(source, max_bytes, max_tokens):
    """The merged-cut attempt stops once its first selection shows it cannot keep MERGE_GAIN
    times as many elements: the capsule is the one composing it fully gives."""
    from capsule.budget import _Builder

    budget = Budget(max_bytes=max_bytes, max_tokens=max_tokens)
    assert (encode_capsule(_Builder(source, budget, COUNTER).build())
            == encode_capsule(_exhaustive(source, budget).build()))


def test_the_merged_attempt_is_not_composed_when_it_cannot_win():
    """Many small inputs: one cut per group keeps most of them, so the merged cut's attempt ends
    after its selection; its kept capsule is never composed."""
    from capsule.budget import _Builder

    source = representative_source(inputs=[
        SourceInput(id=f"in-{k}", text=f"handled request {k}: adjust module {k % 7}", state="handled",
                    turn_id=f"t{k}", admitted_seq=k, pointer=ptr(k)) for k in range(400)])
    builder = _Builder(source, Budget(), COUNTER)
    composed: list[bool] = []
    compose = builder.compose
    builder.compose = lambda kept, limits, groups_cut=True: (
        composed.append(limits.merge_groups and bool(kept)) or compose(kept, limits, groups_cut))
    capsule = builder.build()
    assert composed.count(False) >= 2 and not any(composed)  # the merged kept capsule: never
    assert encode_capsule(capsule) == encode_capsule(_exhaustive(source, Budget()).build())
