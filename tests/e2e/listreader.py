"""The pure logic of a *list-reading* model: what a plan is, which files a context names, which
plan steps a context shows as done.

``scripts/handoff_real.py`` puts this behind each real runtime (Codex CLI, Claude Code,
Gemini CLI) as the loopback model's brain after a compaction. The reader is deliberately
literal, so that what it redoes or loses measures what our hook context told it, not how
clever it is:

- a *plan* is a numbered list of one-line commands in backticks (``3. `cmd` ``) anywhere in
  the text it is shown (a prompt the runtime kept, a verbatim user input in the hook context);
- the files it reads are exactly those the context names: the spilled full text (one file,
  or several parts in one folder) and the work record's pages (``folder=...`` then
  ``- page "<name>"`` lines, which may also first appear inside a file it read);
- with encryption on those files are sealed and the context names ``continuation source``
  commands instead (``The full text ... is printed by the command "<cmd>"`` or ``in N parts of
  one command each``, ``- page $ <cmd> calls=...``, ``- M more page(s): $ <cmd>:K for K from 1
  to N``): it runs exactly those, in the runtime's shell tool, and reads their output;
- a step is *shown as done* when a work line (:func:`capsule.work_line.parse_work_line`,
  ``N=`` groups expanded with :func:`capsule.ledger.expand_group`) with status ok or error
  has that step's command exactly. A line whose outcome is unknown or still in flight does
  not count: the step is run again.

Run ``python tests/e2e/listreader.py`` for the self-checks (no pytest needed).
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # the project's own parser, when run as a script
    sys.path.insert(0, str(REPO))

from capsule.ledger import expand_group  # noqa: E402
from capsule.work_line import SHELL_MARK, parse_work_line  # noqa: E402

MARKER = "CONTINUATION-CHECKPOINT"  # capsule/render.py: <<<CONTINUATION-CHECKPOINT <nonce> BEGIN>>>
DONE_STATUSES = frozenset({"ok", "error"})  # a failed step ran: it is done, not to be redone

_STEP = re.compile(r"^\s*(\d+)\. `([^`\n]+)`\s*$", re.MULTILINE)
_LITERAL = r'"(?:[^"\\]|\\.)*"'
_SPILL = re.compile(r"The full text \(\d+ characters\) is in the file (" + _LITERAL + ")")
_SPILL_PARTS = re.compile(r"The full text \(\d+ characters\) is in (\d+) parts of one file read each: "
                          r"((?:(?:" + _LITERAL + r"|\.\.\.)(?:, )?)+)")
_PART_NUMBER = re.compile(r"(\.part)(\d+)(\.md)$")
# Codex CLI cuts a long kept message in its middle and says so: such a line is no command
_RUNTIME_CUT = re.compile(r"…\d+ (?:tokens|chars|characters|bytes) truncated…")
_FOLDER = re.compile(r"^folder=(" + _LITERAL + ")", re.MULTILINE)
_PAGE = re.compile(r"^- page (" + _LITERAL + ")", re.MULTILINE)
_SOURCE_ONE = re.compile(r"is printed by the command (" + _LITERAL + ")")
_SOURCE_PARTS = re.compile(r"is printed in (\d+) parts of one command each: ((?:(?:" + _LITERAL
                           + r"|\.\.\.)(?:, )?)+)")
# the command may be named by its path ("/venv/bin/continuation source work:...")
_SOURCE_PAGE = re.compile(r"^- page \$ (\S*continuation source work:\S+) calls=", re.MULTILINE)
_SOURCE_MORE = re.compile(r"^- \d+ more page\(s\): \$ (\S*continuation source work:\S+):K for K from 1 to "
                          r"(\d+)", re.MULTILINE)
_NONCE = re.compile(MARKER + r" (\w+) BEGIN")
_END_LINE = re.compile(r"^(?:<<<|\[\[\[)CONTINUATION-[A-Z-]+ \w+ END(?:>>>|\]\]\])$", re.MULTILINE)
_NOTICE = "[continuation]"


def ungemini(text: str) -> str:
    """Gemini CLI writes hook context with ``<``/``>`` HTML-escaped and the checkpoint markers
    as ``[[[``/``]]]``: put both back, so the same reader reads all three runtimes.
    (``$json`` work lines carry their ``<``/``>`` as ``\\u003c``/``\\u003e``, untouched here.)"""
    return html.unescape(text.replace("[[[", "<<<").replace("]]]", ">>>"))


def plans(text: str) -> list[list[str]]:
    """Every numbered list of backticked commands in ``text``, each as its commands in order.
    A list starts at ``1.`` and goes on while the numbers follow each other; it ends at an item
    the runtime cut (Codex keeps a long prompt as its head and tail around "…N tokens
    truncated…"): that item is not a command the user wrote."""
    found: list[list[str]] = []
    current: list[str] = []
    for m in _STEP.finditer(text):
        number, command = int(m.group(1)), m.group(2)
        if _RUNTIME_CUT.search(command):  # cut by the runtime: this list goes no further
            if current:
                found.append(current)
            current = []
            continue
        if number == 1:
            if current:
                found.append(current)
            current = [command]
        elif current and number == len(current) + 1:
            current.append(command)
    if current:
        found.append(current)
    return found


def plan_steps(text: str) -> list[str]:
    """The commands of all plans in ``text``, in order, each once (a prompt shown twice, e.g.
    kept by the runtime and repeated in the hook context, is one plan)."""
    seen: dict[str, None] = {}
    for plan in plans(text):
        for command in plan:
            seen.setdefault(command, None)
    return list(seen)


def _literal(raw: str) -> str:
    return json.loads(raw)


def spill_files(text: str) -> list[str]:
    """The files holding a shortened context's full text: one file, or parts whose names after
    the first are in the first one's folder (a long list names the first and last few parts
    with ``...`` between: ``part<k>`` for every k of the count given)."""
    one = _SPILL.search(text)
    if one:
        return [_literal(one.group(1))]
    parts = _SPILL_PARTS.search(text)
    if not parts:
        return []
    count, names = int(parts.group(1)), [_literal(x) for x in re.findall(_LITERAL, parts.group(2))]
    folder = _parent(names[0])
    paths = [names[0], *(_join(folder, _basename(n)) for n in names[1:])]
    numbered = _PART_NUMBER.search(names[0])
    if len(paths) < count and numbered:  # "p1, p2, ..., p14": the numbering names the rest
        paths = [_PART_NUMBER.sub(rf"\g<1>{k}\g<3>", paths[0]) for k in range(1, count + 1)]
    return paths


def page_files(text: str, folder: str | None = None) -> tuple[list[str], str | None]:
    """The work record pages ``text`` names, as paths, and the folder in force at its end
    (a ``- page`` line belongs to the last ``folder=`` line before it, in this text or an
    earlier one: pages may be named in a spill part read after the inline text)."""
    events = sorted([(m.start(), "folder", _literal(m.group(1))) for m in _FOLDER.finditer(text)]
                    + [(m.start(), "page", _literal(m.group(1))) for m in _PAGE.finditer(text)])
    paths = []
    for _, kind, value in events:
        if kind == "folder":
            folder = value
        elif folder is not None:
            paths.append(_join(folder, value))
    return paths, folder


def named_files(text: str, folder: str | None = None) -> tuple[list[str], str | None]:
    """Every file ``text`` tells the reader to read (spill first, then pages), and the folder
    in force for the next text."""
    pages, folder = page_files(text, folder)
    return _unique([*spill_files(text), *pages]), folder


def source_commands(text: str) -> list[str]:
    """The ``continuation source`` commands ``text`` tells the reader to run (a sealed spill
    first, then sealed pages), in order, each once. Parts named as ``"c:1", ..., "c:14"``:
    the numbering names the rest."""
    found: list[str] = []
    one = _SOURCE_ONE.search(text)
    if one:
        found.append(_literal(one.group(1)))
    parts = _SOURCE_PARTS.search(text)
    if parts:
        count, names = int(parts.group(1)), [_literal(x) for x in re.findall(_LITERAL, parts.group(2))]
        head, _, number = names[0].rpartition(":")
        if len(names) < count and number == "1":
            names = [f"{head}:{k}" for k in range(1, count + 1)]
        found += names
    spans = sorted([(m.start(), [m.group(1)]) for m in _SOURCE_PAGE.finditer(text)]
                   + [(m.start(), [f"{m.group(1)}:{k}" for k in range(1, int(m.group(2)) + 1)])
                      for m in _SOURCE_MORE.finditer(text)])
    for _, commands in spans:
        found += commands
    return _unique(found)


def named_sources(text: str, folder: str | None = None) -> tuple[list[tuple[str, str]], str | None]:
    """What ``text`` tells the reader to read, as ``("read", path)`` (a file, for the runtime's
    file tool) or ``("run", command)`` (a command, for its shell tool), and the folder in force."""
    files, folder = named_files(text, folder)
    return [*(("read", f) for f in files), *(("run", c) for c in source_commands(text))], folder


def done_commands(texts: list[str]) -> set[str]:
    """The shell commands that work lines in ``texts`` show as finished (ok or error)."""
    done: set[str] = set()
    for text in texts:
        for line in text.splitlines():
            fields = parse_work_line(line.strip())
            if fields is None or fields["status"] not in DONE_STATUSES:
                continue
            for call in expand_group(fields["text"], fields["values"]):
                if call.startswith(SHELL_MARK):
                    done.add(call[len(SHELL_MARK):])
    return done


def unsettled_commands(texts: list[str]) -> set[str]:
    """Shell commands on work lines whose outcome is unknown or in flight (diagnostics only)."""
    out: set[str] = set()
    for text in texts:
        for line in text.splitlines():
            fields = parse_work_line(line.strip())
            if fields and fields["status"] not in DONE_STATUSES and fields["text"].startswith(SHELL_MARK):
                out.add(fields["text"][len(SHELL_MARK):])
    return out


def todo(steps: list[str], texts: list[str]) -> list[str]:
    """The steps not shown as done by ``texts`` (inline context and the files read), in order."""
    done = done_commands(texts)
    return [s for s in steps if s not in done]


def checkpoint_nonce(text: str) -> str | None:
    """The nonce of the last checkpoint block in ``text`` (one per compaction), or None."""
    found = _NONCE.findall(text)
    return found[-1] if found else None


def context_chars(text: str) -> int:
    """How long the hook context inside ``text`` is: from its first ``[continuation]`` notice
    (or its checkpoint's begin marker) to its last END marker line. A runtime wraps hook
    context with other text (Claude Code joins several system reminders in one block, Gemini
    CLI appends it to a tool result): that is not counted. Gemini's escaped form is measured
    as the model received it."""
    begin = re.search(r"(?:<<<|\[\[\[)" + MARKER, text)
    if begin is None:
        return 0
    notice = text.find(_NOTICE)
    start = notice if 0 <= notice < begin.start() else begin.start()
    ends = [m.end() for m in _END_LINE.finditer(text, begin.start())]
    return (ends[-1] if ends else len(text)) - start


def _parent(path: str) -> str:
    return str(PurePosixPath(path.replace("\\", "/")).parent)


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _join(folder: str, name: str) -> str:
    return str(PurePosixPath(folder.replace("\\", "/")) / _basename(name))


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


# ---------------------------------------------------------------------------------------------
# Self-checks: python tests/e2e/listreader.py


def _checks() -> None:
    prompt = ("Run these steps in order, one shell call per step:\n1. `echo 'step 1' >> runlog.txt; a`\n"
              "2. `echo 'step 2' >> runlog.txt; b`\n3. `c`\nthen more text\n1. `x`\n2. `y`\n")
    assert plans(prompt) == [["echo 'step 1' >> runlog.txt; a", "echo 'step 2' >> runlog.txt; b", "c"], ["x", "y"]]
    assert plan_steps(prompt + prompt) == ["echo 'step 1' >> runlog.txt; a", "echo 'step 2' >> runlog.txt; b",
                                           "c", "x", "y"]
    assert plans("2. `skipped`\n1. `a`\n3. `gap`\n2. `b`") == [["a", "b"]]

    inline = ('[continuation] Shortened to fit 9900 characters. The full text (20000 characters) is in 3 parts'
              ' of one file read each: "/s/ctx/g1.part1.md", "g1.part2.md", "g1.part3.md" (in the same folder):'
              ' read them\nfolder="/s/ctx" calls=3 failed=1 pages=2 manifest="g1.work.json"\n'
              '- page "g1.work001.md" calls=#1..#9 count=2\n')
    files, folder = named_files(inline)
    assert files == ["/s/ctx/g1.part1.md", "/s/ctx/g1.part2.md", "/s/ctx/g1.part3.md", "/s/ctx/g1.work001.md"], files
    more, _ = named_files('- page "g1.work002.md" calls=#10..#12 count=1\n', folder)
    assert more == ["/s/ctx/g1.work002.md"]
    many = ('The full text (90000 characters) is in 14 parts of one file read each: "/c/g1.part1.md", '
            '"g1.part2.md", ..., "g1.part14.md" (numbered 1 to 14, in the same folder): read them')
    assert spill_files(many) == [f"/c/g1.part{k}.md" for k in range(1, 15)], spill_files(many)
    cut = "1. `a`\n2. `echo 'note 2b…6348 tokens truncated…ng plan'`\n3. `c`\n"
    assert plans(cut) == [["a"]], plans(cut)
    one = 'Shortened. The full text (12 characters) is in the file "/t/a \\"b\\".md": read it'
    assert spill_files(one) == ['/t/a "b".md']

    record = ("#4 $ echo 'step 1' >> runlog.txt; a\nT2 #7 error exit=1 $ c\n#9 unknown $ x\n"
              '#11 $json "echo \\u003e y"\n#12..#14 N=1,2 $ n{N}\nnot a work line $ b\n')
    assert done_commands([record]) == {"echo 'step 1' >> runlog.txt; a", "c", "echo > y", "n1", "n2"}
    assert unsettled_commands([record]) == {"x"}
    assert todo(["echo 'step 1' >> runlog.txt; a", "b", "c", "x"], [record]) == ["b", "x"]

    gem = "[[[CONTINUATION-CHECKPOINT ab12 BEGIN]]]\n1. `echo a &gt;&gt; f`\n"
    assert checkpoint_nonce(ungemini(gem)) == "ab12" and plans(ungemini(gem)) == [["echo a >> f"]]
    wrapped = ("<system-reminder>other</system-reminder> hook context: [continuation] note\n\n"
               "<<<CONTINUATION-CHECKPOINT ab12 BEGIN>>>\nx\n<<<CONTINUATION-CHECKPOINT ab12 END>>>\ntrailer")
    assert context_chars(wrapped) == len(wrapped) - wrapped.find("[continuation]") - len("\ntrailer")
    assert context_chars("[[[CONTINUATION-CHECKPOINT ab BEGIN]]]\n[[[CONTINUATION-CHECKPOINT ab END]]]") == 75
    sealed = ('[continuation] Shortened to fit 9900 characters. The full text (90000 characters) is printed in '
              '14 parts of one command each: "continuation source context:t1:3:1", "continuation source '
              'context:t1:3:2", ..., "continuation source context:t1:3:14" (numbered 1 to 14): run them\n'
              'calls=9 failed=0 pages=3 sealed=yes\n'
              '- page $ continuation source work:t1:3:1 calls=#1..#9 count=2\n')
    assert source_commands(sealed) == [f"continuation source context:t1:3:{k}" for k in range(1, 15)] + [
        "continuation source work:t1:3:1"], source_commands(sealed)
    more = ('- page $ /v/bin/continuation source work:t1:3:3 calls=#40..#49 count=3\n'
            '- 3 more page(s): $ /v/bin/continuation source work:t1:3:K for K from 1 to 3\n')
    assert source_commands(more) == [f"/v/bin/continuation source work:t1:3:{k}" for k in (3, 1, 2)]
    one = 'Shortened. The full text (12 characters) is printed by the command "continuation source context:t:2": run'
    assert named_sources(one) == ([("run", "continuation source context:t:2")], None)
    assert named_sources(inline)[0][0] == ("read", "/s/ctx/g1.part1.md")
    print("listreader self-checks passed")


if __name__ == "__main__":
    _checks()
