"""The work record: every finished call of the turns a model may still be shown, as pages.

The capsule's budget bounds what is inline, never what the model can know. At each boundary the
finished calls of every open input's turns, and of the handled inputs the runtime still shows,
are written as page files beside the spilled context (``continuation.boundary.work_pages``): each page
fits one read of each runtime's own file tool within its output limit (Codex cuts a tool's
output at ~10 KB, Claude Code's Read cuts lines at 2,000 characters), so :data:`PAGE_CHARS`
characters and :data:`PAGE_LINES` lines at most, a call line at most :data:`LINE_CHARS`
(a longer one says how to print it whole). Pages are self-describing: each says what it is,
its thread, generation and place in the run, repeats the header of the turn it continues, and
ends with the sha256 of the lines above its last one; a manifest lists every page with its
hash. The lines are :mod:`capsule.work_line`'s, one call each, in event order.

Pure: plain data in, texts out (no pydantic, no I/O), so a boundary's process builds the pages
while its worker builds the capsule.
"""
from __future__ import annotations

import hashlib
from collections import namedtuple

from capsule.context import js_len as _js_len
from capsule.states import ACTIONABLE_STATES
from capsule.textclip import render_literal
from capsule.work_line import call_text, shell_command, work_line

PAGE_CHARS = 8_000
PAGE_LINES = 150
LINE_CHARS = 1_000
INPUT_TEXT_CHARS = 300
FAILED = frozenset({"error"})

Page = namedtuple("Page", "name text first_seq last_seq calls failed sha256")
Turn = namedtuple("Turn", "label turn_id input_ids open calls failed first_seq last_seq")


def page_name(generation: int, number: int) -> str:
    return f"g{generation:06d}.work{number:03d}.md"


def manifest_name(generation: int) -> str:
    return f"g{generation:06d}.work.json"


def label_turns(calls, inputs) -> list[Turn]:
    """The record's turns in order of their first call, labelled ``T1``, ``T2``...; ``inputs``:
    dicts with id, state, turn_id (state decides ``open``)."""
    by_turn: dict = {}
    for c in calls:
        t = by_turn.setdefault(c["turn_id"], [0, 0, c["seq"], c["seq"]])
        t[0] += 1
        t[1] += c["status"] in FAILED
        t[3] = c["seq"]
    ids: dict = {}
    open_turns = set()
    for i in inputs:
        ids.setdefault(i.get("turn_id"), []).append(i["id"])
        if i["state"] in ACTIONABLE_STATES:
            open_turns.add(i.get("turn_id"))
    return [Turn(f"T{k + 1}", turn_id, ids.get(turn_id, []), turn_id in open_turns, *counts)
            for k, (turn_id, counts) in enumerate(by_turn.items())]


def shell_tool_of(calls) -> str | None:
    """The tool most ``$`` lines ran in (the legend names it once)."""
    seen: dict[str, int] = {}
    for c in calls:
        if shell_command(c["args"]) is not None:
            seen[c["tool"]] = seen.get(c["tool"], 0) + 1
    return max(seen, key=seen.get) if seen else None


def call_line(call: dict, *, thread_key: str, shell_tool: str | None, source_command: str) -> str:
    """One call's line in a page (clipped past :data:`LINE_CHARS`, saying how to print it)."""
    text = call_text(call["tool"], call["args"])
    line = work_line(call["seq"], call["status"], call.get("exit_code"), text, shell_tool=shell_tool,
                     tool=call["tool"])
    if _js_len(line) <= LINE_CHARS:
        return line
    tail = f" [clipped: print it whole with {source_command} event:{thread_key}:{call['seq']}]"
    return line[: max(0, LINE_CHARS - len(tail))] + tail


def _turn_header(turn: Turn, continued: bool) -> str:
    failed = f" failed={turn.failed}" if turn.failed else ""
    return (f"## turn {turn.label} id={render_literal(turn.turn_id or '-')} inputs="
            f"{'[' + ','.join(render_literal(i) for i in turn.input_ids) + ']'} "
            f"open={'yes' if turn.open else 'no'} calls={turn.calls}{failed} "
            f"events=#{turn.first_seq}..#{turn.last_seq}{' (continued)' if continued else ''}")


def _inputs_lines(inputs, thread_key: str, source_command: str) -> list[str]:
    out = ["## inputs of these turns (user requests; the state is the engine's)"]
    for i in inputs:
        text = i.get("text") or ""
        shown = text if len(text) <= INPUT_TEXT_CHARS else text[:INPUT_TEXT_CHARS]
        more = "" if shown == text else (f" [clipped: {len(text)} characters; print it whole with "
                                         f"{source_command} event:{thread_key}:{i.get('seq')}]")
        out.append(f"- input={render_literal(i['id'])} state={i['state']} text={render_literal(shown)}{more}")
    return out


def build_pages(*, thread_key: str, generation: int, calls, inputs, turns: list[Turn],
                shell_tool: str | None, source_command: str) -> list[Page]:
    """The record's pages. ``calls``: dicts with seq, tool, args, status, exit_code, turn_id,
    in event order; ``inputs``: the inputs of those turns (id, state, text, seq, turn_id)."""
    label = {t.turn_id: t for t in turns}
    legend = (f"One line per finished call, oldest first: #<event> <status>[ exit=<code>] then "
              f"\"$ <command>\" exactly as it ran in the shell tool {shell_tool or 'Bash'} (to the end of the "
              "line, no quoting), or <Tool> <arguments as JSON>. Do not run these again.")
    bodies: list[list[str]] = []
    spans: list[list] = []
    body: list[str] = []
    size = 0
    current = None

    def close() -> None:
        nonlocal body, size
        if any(x.startswith("#") for x in body):
            bodies.append(body)
        body, size = [], 0

    first_lines = _inputs_lines(inputs, thread_key, source_command) if inputs else []
    for c in calls:
        turn = label.get(c["turn_id"])
        line = call_line(c, thread_key=thread_key, shell_tool=shell_tool, source_command=source_command)
        extra = []
        if not body:
            extra = (first_lines if not bodies else []) + ([_turn_header(turn, turn is current)] if turn else [])
            spans.append([c["seq"], c["seq"], 0, 0])
        elif turn is not current and turn is not None:
            extra = [_turn_header(turn, False)]
        cost = sum(_js_len(x) + 1 for x in [*extra, line])
        if body and (size + cost > PAGE_CHARS - 600 or len(body) + len(extra) + 1 > PAGE_LINES - 8):
            close()
            extra = [_turn_header(turn, turn is current)] if turn else []
            spans.append([c["seq"], c["seq"], 0, 0])
            cost = sum(_js_len(x) + 1 for x in [*extra, line])
        body += [*extra, line]
        size += cost
        current = turn
        span = spans[-1]
        span[1] = c["seq"]
        span[2] += 1
        span[3] += c["status"] in FAILED
    close()
    total = len(bodies)
    pages = []
    for n, (lines, span) in enumerate(zip(bodies, spans), start=1):
        head = [
            f"continuation work record: thread {render_literal(thread_key)}, checkpoint generation "
            f"{generation}, page {n} of {total}: calls #{span[0]}..#{span[1]} ({span[2]} calls, "
            f"{span[3]} failed). Runtime facts recorded by the continuation engine, not instructions.",
            legend,
        ]
        text = "\n".join([*head, *lines]) + "\n"
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        nxt = f" Next: {page_name(generation, n + 1)} in the same folder." if n < total else " This is the last page."
        text += f"[end of page {n} of {total}; sha256 of the text above this line: {digest}.{nxt}]\n"
        pages.append(Page(page_name(generation, n), text, span[0], span[1], span[2], span[3], digest))
    return pages


def verify_page(text: str) -> bool:
    """Whether a page's last line holds the sha256 of the text above it."""
    body, sep, last = text.rstrip("\n").rpartition("\n")
    if not sep or "sha256 of the text above this line: " not in last:
        return False
    digest = last.split("sha256 of the text above this line: ", 1)[1][:64]
    return hashlib.sha256((body + "\n").encode("utf-8", "surrogatepass")).hexdigest() == digest
