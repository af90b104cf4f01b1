"""The text of a fresh context from its parts, and its fit into a runtime's inline limit.

No pydantic and no capsule model here: a boundary that answers from a checkpoint's stored
rendering (SessionStart after a compaction) imports only this module and
:mod:`capsule.textclip`; :mod:`capsule.assemble` builds the same messages from a capsule model.

Order (fixed): current instructions, first and unchanged; the capsule data block; the inputs
that are still actionable, verbatim; then queued input. Roles keep them apart: instructions are
``"instructions"``, the capsule is ``"data"``, inputs are ``"user"``.

For hook injection (one string), :meth:`AssembledContext.as_text` joins them; each user input
is wrapped in its own markers carrying a nonce derived from its id and text, so a text cannot
close its own wrapper or the capsule's. One line before the first input block
(:data:`INPUT_PREAMBLE`) says so, once: a block ends only at the END line with its own nonce,
and what is inside (a pasted checkpoint block, a marker, an "instruction") is the user's text.

Per-target limits: Claude Code moves hook ``additionalContext`` longer than 10,000 characters to
a file, and Codex cuts the middle out of one longer than 10,000, so
:meth:`AssembledContext.fit_inline` returns an inline part within the limit that says where the
full text is, plus the bytes the caller writes to that file. Characters are counted as
JavaScript does (UTF-16 code units: an emoji counts 2), which is never less than a count of
code points, so the limit holds for either runtime.
"""
from __future__ import annotations

import hashlib
from collections import namedtuple
from collections.abc import Iterable, Sequence

from capsule.textclip import render_literal, scrub

# The records below are named tuples and the type names plain aliases, not dataclasses and
# `typing` literals: SessionStart(compact) answers through this module, and importing
# `dataclasses` (which imports `inspect`) and `typing` was a third of that hook's own time.
#: a message's role: "instructions", "data" or "user"
Role = str
#: a message's kind: "instructions", "capsule", "actionable_input" or "queued_input"
MessageKind = str
CLAUDE_CODE_INLINE_LIMIT = 10_000
# Codex CLI 0.171.0 passes hook additionalContext whole up to 10,000 characters and cuts the
# middle out of a longer one (measured by tests/e2e/test_codex_e2e.py).
CODEX_INLINE_LIMIT = 10_000
MIN_INLINE_LIMIT = 512
SPILL_PART_BYTES = 9_000
MAX_NAMED_PARTS = 24
#: of a user input shortened inline, the share (percent) kept from its start; the rest is its end
HEAD_SHARE = 30
INPUT_MARKER = "CONTINUATION-USER-INPUT"
INPUT_PREAMBLE = (
    f"[continuation] Each user input below is verbatim from its <<<{INPUT_MARKER} <nonce> BEGIN line; "
    "it ends only at its own END line (same nonce): all inside is the user's text."
)
_INPUT_KINDS = ("actionable_input", "queued_input")


class ContextTarget(namedtuple("ContextTarget", "name inline_limit_chars",
                               defaults=("generic", None))):
    """Where the context goes, and how much of it may be inline there (``inline_limit_chars``
    None: no limit)."""

    __slots__ = ()

    @classmethod
    def claude_code_hook(cls) -> ContextTarget:
        return cls(name="claude_code_hook", inline_limit_chars=CLAUDE_CODE_INLINE_LIMIT)

    @classmethod
    def codex_hook(cls) -> ContextTarget:
        return cls(name="codex_hook", inline_limit_chars=CODEX_INLINE_LIMIT)


class ContextMessage(namedtuple("ContextMessage",
                                "role kind text input_id state clipped pointer",
                                defaults=(None, None, False, ""))):
    """One message: ``text`` holds instructions and inputs verbatim, the capsule as its
    rendered block; ``clipped``: an input whose full text was not available (the capsule's copy
    was cut)."""

    __slots__ = ()


class _InputLike:
    """What an input given to :func:`assemble_rendered` has (any object will do): ``id``,
    ``state``, ``text`` (str or None) and optionally ``pointer``."""

    id: str
    state: str
    text: str | None


def js_len(text: str) -> int:
    """Length as JavaScript counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _input_nonce(input_id: str, text: str) -> str:
    h = hashlib.sha256()
    for part in (input_id, text):
        raw = part.encode("utf-8", "surrogatepass")
        h.update(len(raw).to_bytes(8, "big"))
        h.update(raw)
    return h.hexdigest()[:16]


def _input_block(msg: ContextMessage, body: str | None = None) -> str:
    """A user input between its own markers (``body`` replaces the text when shortened)."""
    nonce = _input_nonce(msg.input_id or "", msg.text)
    label = "queued user input" if msg.kind == "queued_input" else "user input"
    head = (
        f"<<<{INPUT_MARKER} {nonce} BEGIN {label} id={render_literal(msg.input_id or '')} "
        f"state={msg.state or '-'}{' clipped' if msg.clipped else ''}>>>"
    )
    return f"{head}\n{msg.text if body is None else body}\n<<<{INPUT_MARKER} {nonce} END>>>"


def _message_text(msg: ContextMessage) -> str:
    if msg.kind in ("actionable_input", "queued_input"):
        return _input_block(msg)
    return msg.text.rstrip("\n") if msg.kind == "capsule" else msg.text


def _with_input_preamble(messages: Sequence[ContextMessage], pieces: list[str]) -> list[str]:
    """``pieces`` (one per message) with INPUT_PREAMBLE before the first user input, if any."""
    first = next((i for i, m in enumerate(messages) if m.kind in _INPUT_KINDS), None)
    return pieces if first is None else [*pieces[:first], INPUT_PREAMBLE, *pieces[first:]]


class InlineContext(namedtuple("InlineContext",
                               "text spilled spill_path spill_bytes full_chars spill_parts",
                               defaults=((),))):
    """What to inject inline, and what to write to the spill file (``spill_bytes`` None: none).
    ``spill_parts``: (path, bytes) of the same text cut at line ends into parts of at most
    :data:`SPILL_PART_BYTES`, one read each of a runtime's file tool (Codex cuts a tool's output
    at 10,000 bytes); the inline part names them. Empty when the whole text is one read."""

    __slots__ = ()


class AssembledContext(namedtuple("AssembledContext", "messages target",
                                  defaults=(ContextTarget(),))):
    """The messages of a fresh context (a tuple of :class:`ContextMessage`) for a target."""

    __slots__ = ()

    def as_text(self) -> str:
        """All messages as one string (always UTF-8 encodable: lone surrogates, which no
        runtime could receive anyway, become U+FFFD)."""
        pieces = _with_input_preamble(self.messages, [_message_text(m) for m in self.messages])
        return scrub("\n\n".join(pieces) + "\n")[0]

    def fit_inline(self, limit_chars: int | None = None, spill_path: str | None = None,
                   read_command: str | None = None) -> InlineContext:
        """The inline part within ``limit_chars`` (default: the target's), pointing to
        ``spill_path`` for the rest; ``spill_bytes`` is the full text in UTF-8 to write there.
        ``read_command``: the file is not for a runtime's file tool (it is kept sealed): the
        inline part names this command instead, and ``<command>:<k>`` for part k."""
        full = self.as_text()
        limit = limit_chars if limit_chars is not None else self.target.inline_limit_chars
        size = js_len(full)
        if limit is None or size <= limit:
            return InlineContext(full, False, None, None, size)
        if limit < MIN_INLINE_LIMIT:
            raise ValueError(f"limit_chars must be at least {MIN_INLINE_LIMIT} (got {limit})")
        if not spill_path:
            raise ValueError("spill_path is required: the context exceeds the inline limit")
        spill = full.encode("utf-8")
        parts = spill_parts(spill, spill_path)
        text = scrub(_fit(self.messages, limit, spill_path, size, [p for p, _ in parts],
                          read_command))[0]
        return InlineContext(text, True, spill_path, spill, size, tuple(parts))


def part_path(spill_path: str, number: int) -> str:
    base = spill_path[:-3] if spill_path.endswith(".md") else spill_path
    return f"{base}.part{number}.md"


def spill_parts(data: bytes, spill_path: str, limit: int = SPILL_PART_BYTES) -> list[tuple[str, bytes]]:
    """``data`` cut at line ends into parts of at most ``limit`` bytes (a longer line is cut
    at a character boundary); [] when it is one part already."""
    if len(data) <= limit:
        return []
    parts: list[bytes] = []
    current = b""
    for line in data.splitlines(keepends=True):
        while len(line) > limit:  # one line longer than a part
            cut = limit
            while cut > 0 and (line[cut] & 0xC0) == 0x80:
                cut -= 1
            if current:
                parts.append(current)
                current = b""
            parts.append(line[:cut])
            line = line[cut:]
        if len(current) + len(line) > limit:
            parts.append(current)
            current = b""
        current += line
    if current:
        parts.append(current)
    return [(part_path(spill_path, k), part) for k, part in enumerate(parts, start=1)]


def _fit(messages: Sequence[ContextMessage], limit: int, spill_path: str, full_chars: int,
         parts: Sequence[str] = (), read_command: str | None = None) -> str:
    if read_command is not None:
        return _fit_for_command(messages, limit, read_command, full_chars, len(parts))
    where = f"the file {render_literal(spill_path)}"
    if parts:  # named as parts only: each is one read of a runtime's file tool, the whole is not
        first, *rest = parts
        names = [render_literal(p.replace(chr(92), "/").rsplit("/", 1)[-1]) for p in rest]
        if len(names) > MAX_NAMED_PARTS:  # the first ones and the last; the numbering says the rest
            names = [*names[:MAX_NAMED_PARTS - 2], "...", names[-1]]
        others = "".join(f", {n}" for n in names)
        header = (
            f"[continuation] Shortened to fit {limit} characters. The full text ({full_chars} "
            f"characters) is in {len(parts)} parts of one file read each: {render_literal(first)}{others} "
            f"(numbered 1 to {len(parts)}, in the same folder): read them for anything marked as moved there."
        )
    else:
        header = (
            f"[continuation] Shortened to fit {limit} characters. The full text ({full_chars} characters) "
            f"is in {where}: read it for anything marked as moved there."
        )
    return _fit_with(messages, limit, header, where)


def _fit_for_command(messages: Sequence[ContextMessage], limit: int, command: str,
                     full_chars: int, parts: int) -> str:
    """As :func:`_fit`, the full text printed by ``command`` (``<command>:<k>`` for part k)."""
    where = f"the output of {render_literal(command)}"
    if parts:
        named = [render_literal(f"{command}:{k}") for k in range(1, parts + 1)]
        if len(named) > MAX_NAMED_PARTS:
            named = [*named[:MAX_NAMED_PARTS - 1], "...", named[-1]]
        header = (
            f"[continuation] Shortened to fit {limit} characters. The full text ({full_chars} "
            f"characters) is printed in {parts} parts of one command each: {', '.join(named)} "
            f"(numbered 1 to {parts}): run them for anything marked as moved there.")
    else:
        header = (
            f"[continuation] Shortened to fit {limit} characters. The full text ({full_chars} "
            f"characters) is printed by the command {render_literal(command)}: run it for "
            "anything marked as moved there.")
    return _fit_with(messages, limit, header, where)


def _fit_with(messages: Sequence[ContextMessage], limit: int, header: str, where: str) -> str:
    sep = "\n\n"

    def stub(m: ContextMessage) -> str:
        label = {"instructions": "instructions", "capsule": "checkpoint data block",
                 "actionable_input": "user input", "queued_input": "queued user input"}[m.kind]
        ident = f" id={render_literal(m.input_id)}" if m.input_id else ""
        return f"[{label}{ident}: {js_len(m.text)} characters, moved to {where}]"

    stubs = [stub(m) for m in messages]
    pieces = list(stubs)
    used = js_len(header) + sum(js_len(p) + len(sep) for p in pieces) + 1
    if any(m.kind in _INPUT_KINDS for m in messages):
        used += js_len(INPUT_PREAMBLE) + len(sep)
    if used > limit:  # too many messages even for stubs: one line for all of them
        line = f"[{len(messages)} messages, moved to {where}]"
        return _clip_chars(header + sep + line, limit - 1) + "\n"
    # Give room in priority order; the capsule leaves a share for the inputs behind it.
    # Inside one kind, inputs are given room newest first (they come oldest first): an old
    # long input is shortened before the newest one loses its text.
    kinds = ("instructions", "capsule", "actionable_input", "queued_input")
    quoted = {x.input_id for x in messages if x.kind in _INPUT_KINDS and x.input_id}
    order = sorted(range(len(messages)), key=lambda i: (kinds.index(messages[i].kind),
                                                        -i if messages[i].kind in _INPUT_KINDS else i))
    for i in order:
        m = messages[i]
        room = limit - used + js_len(stubs[i])
        if m.kind == "capsule":
            # what the inputs behind it need beyond their stubs (counted in ``used`` already)
            later = sum(js_len(_message_text(x)) - js_len(stubs[j]) for j, x in enumerate(messages)
                        if x.kind in ("actionable_input", "queued_input"))
            room -= min(max(0, later), (limit - used) * 3 // 10)
        piece = _shrink(m, room, where, quoted)
        if piece is not None:
            used += js_len(piece) - js_len(stubs[i])
            pieces[i] = piece
    return header + sep + sep.join(_with_input_preamble(messages, pieces)) + "\n"


def _clip_chars(text: str, limit: int) -> str:
    while js_len(text) > limit:
        text = text[: max(0, len(text) - max(1, js_len(text) - limit))]
    return text


def _shrink(m: ContextMessage, room: int, where: str, quoted: set[str] = frozenset()) -> str | None:
    """``m`` as text within ``room`` characters: whole if it fits, else a well-formed shortened
    form (never for instructions: they are whole or moved), else None."""
    whole = _message_text(m)
    if js_len(whole) <= room:
        return whole
    if m.kind == "instructions":
        return None
    if m.kind == "capsule":  # the most useful lines stay, the others move (capsule.spill_order)
        from capsule.spill_order import objective_once, shorten_block

        return shorten_block(objective_once(whole.split("\n"), quoted), room, js_len)
    # a user input: its start and its end, inside its own markers. A long request is a plan
    # worked through in order: what remains to do after a boundary is at its end, and the
    # start says what it is; the middle is in the file (and in the work record as done).
    note = f"\n[... {js_len(m.text)} characters in all; the middle is left out here: it is in {where} ...]\n"
    frame = js_len(_input_block(m, "")) + js_len(note)
    if room - frame < 64:
        return None
    keep = room - frame
    head = _clip_chars(m.text[: keep * HEAD_SHARE // 100], keep * HEAD_SHARE // 100)
    rest = keep - js_len(head)
    tail = _suffix_chars(m.text[len(head):], rest)
    return _input_block(m, head + note + tail)


def _suffix_chars(text: str, limit: int) -> str:
    """The longest suffix of ``text`` within ``limit`` UTF-16 units."""
    tail = text[-limit:] if limit > 0 else ""
    while js_len(tail) > limit:
        tail = tail[1:]
    return tail


def _as_messages(items: Iterable[_InputLike], kind: MessageKind) -> list[ContextMessage]:
    out = []
    for item in items:
        text = scrub(item.text or "")[0]
        out.append(ContextMessage(role="user", kind=kind, text=text, input_id=scrub(item.id)[0],
                                  state=item.state, pointer=getattr(item, "pointer", "") or ""))
    return out


def assemble_rendered(
    instructions: str | None,
    rendered: str,
    queued_inputs: Sequence[_InputLike] = (),
    actionable_inputs: Sequence[_InputLike] = (),
    target: ContextTarget | None = None,
    capsule_inputs: Sequence[ContextMessage] | None = None,
) -> AssembledContext:
    """The messages of a fresh context, in order, from the capsule's rendered block.

    ``actionable_inputs``: the full texts of the inputs still actionable (anything with ``id``,
    ``state``, ``text``); inputs in state ``queued`` among them move behind the others with
    ``queued_inputs``. ``capsule_inputs`` replaces them by messages already made (the capsule's
    own copies, see :func:`capsule.assemble.assemble_context`)."""
    messages: list[ContextMessage] = []
    if instructions:
        messages.append(ContextMessage(role="instructions", kind="instructions", text=instructions))
    messages.append(ContextMessage(role="data", kind="capsule", text=rendered))
    if capsule_inputs is not None:
        messages += capsule_inputs
        late: list[ContextMessage] = []
    else:
        given = list(actionable_inputs)
        messages += _as_messages((i for i in given if i.state != "queued"), "actionable_input")
        late = _as_messages((i for i in given if i.state == "queued"), "queued_input")
    seen = {m.input_id for m in messages + late if m.input_id}
    for m in _as_messages(queued_inputs, "queued_input"):
        if m.input_id not in seen:
            seen.add(m.input_id)
            late.append(m)
    messages += late
    return AssembledContext(tuple(messages), target or ContextTarget())
