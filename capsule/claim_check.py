"""Check what an assistant claim says it did against the tool calls its turn recorded.

A claim stays a claim; this only puts the runtime's record next to it. The rule:

- a claim *asserts an action* of a kind below when one of its sentences matches the kind's
  claim pattern ("I ran the tests", "all tests pass", "built it", "committed the fix", ...) and
  says neither an intent nor a negation ("next I will run the tests", "I did not run them");
- the turn's recorded tool calls *support* that action when one of them is a shell-like call
  (its ``command`` / ``cmd`` argument, a string or an argv list) matching the kind's command
  pattern (``pytest``, ``cargo test``, ``npm test``, ``make``, ``git commit``, ...);
- no supporting call: the note ``no tool call of this turn <did it>``; supporting calls that all
  finished with an error while the claim says it passed / succeeded: ``every <kind> call of this
  turn failed (exit N)``; supporting calls still without outcome: ``the <kind> call of this turn
  has no recorded outcome``. Otherwise nothing is said.

Kinds: tests, build, lint, type check, format, install, commit, push. A claim of no kind, or of a
turn whose calls are not known (no turn id), gets no note. Patterns are English, like the
runtimes' own messages; a claim in another language is left unchecked (no false alarm).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

_I = re.IGNORECASE


@dataclass(frozen=True)
class _Kind:
    """One kind of action, its patterns kept as text: compiled on first use (``re`` keeps them),
    so a boundary compiles the claim patterns, and a kind's command and success patterns only
    when a claim asserts it (all of them at import took ~5 ms of a boundary's gathering)."""

    name: str  # as in "every tests call"
    did: str  # as in "no tool call of this turn ran tests"
    claim_pattern: str
    command_pattern: str
    success_pattern: str | None = None  # the claim says it passed / succeeded

    @property
    def claim(self) -> re.Pattern:
        return re.compile(self.claim_pattern, _I)

    @property
    def command(self) -> re.Pattern:
        return re.compile(self.command_pattern, _I)

    @property
    def success(self) -> re.Pattern | None:
        return re.compile(self.success_pattern, _I) if self.success_pattern is not None else None


_PAST = r"(?:ran|run|re-?ran|re-?run|running|executed|tried)"
KINDS: tuple[_Kind, ...] = (
    _Kind("test", "ran tests",
          (rf"\b{_PAST}\b[^.!?\n]{{0,40}}\b(?:tests?|test suite|specs?|pytest)\b|"
           r"\btests?\b[^.!?\n]{0,20}\b(?:pass(?:es|ed|ing)?|green|succeed(?:s|ed)?|ok)\b|"
           r"\b(?:tested|verified with (?:the )?tests)\b"),
          (r"\b(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|ava|karma|rspec|"
           r"phpunit|ctest|go test|cargo (?:test|nextest)|(?:npm|yarn|pnpm|bun)(?: run)? test|"
           r"make (?:test|check)|mvn (?:\S+ )*test|gradle(?:w)? (?:\S+ )*test|dotnet test|"
           r"swift test|mix test|deno test|python -m (?:pytest|unittest))\b"),
          r"\bpass(?:es|ed|ing)?\b|\bgreen\b|\bsucceed|\bok\b|\bwork"),
    _Kind("build", "built anything",
          (r"\b(?:built|compiled|rebuilt)\b|\bbuild (?:pass(?:es|ed)?|succeed(?:s|ed)?|is green|works)\b|"
           rf"\b{_PAST}\b[^.!?\n]{{0,20}}\bbuild\b"),
          (r"\b(?:make|cmake|ninja|bazel|cargo (?:build|check)|go build|tsc|gcc|g\+\+|clang|javac|"
           r"mvn|gradle(?:w)?|dotnet build|swift build|(?:npm|yarn|pnpm|bun)(?: run)? build|"
           r"python -m build|pip wheel|webpack|vite build|next build)\b"),
          r"\bpass|\bsucceed|\bgreen\b|\bworks?\b|\bclean"),
    _Kind("lint", "ran a linter",
          (r"\blint(?:ed|er|ing)?\b[^.!?\n]{0,20}\b(?:pass(?:es|ed)?|clean|ok)\b|\blinted\b|"
           rf"\b{_PAST}\b[^.!?\n]{{0,20}}\b(?:lint(?:er)?|ruff|flake8|eslint|pylint|clippy)\b"),
          (r"\b(?:ruff(?! format)|flake8|pylint|eslint|clippy|golangci-lint|shellcheck|rubocop|"
           r"stylelint|(?:npm|yarn|pnpm|bun)(?: run)? lint|make lint)\b")),
    _Kind("type check", "ran a type checker",
          r"\btype[- ]?check(?:ed|s|ing)?\b|\b(?:mypy|pyright|tsc --noEmit)\b[^.!?\n]{0,20}\b(?:pass|clean)",
          r"\b(?:mypy|pyright|pytype|tsc|flow check|(?:npm|yarn|pnpm)(?: run)? typecheck)\b"),
    _Kind("format", "ran a formatter",
          (r"\b(?:formatted|reformatted)\b|"
           rf"\b{_PAST}\b[^.!?\n]{{0,20}}\b(?:black|prettier|gofmt|rustfmt|formatter)\b"),
          (r"\b(?:black|prettier|gofmt|goimports|rustfmt|cargo fmt|ruff format|clang-format|"
           r"isort|autopep8|yapf|(?:npm|yarn|pnpm)(?: run)? format)\b")),
    _Kind("install", "installed anything",
          r"\binstalled\b",
          (r"\b(?:pip3? install|uv (?:pip install|add|sync)|poetry (?:add|install)|npm (?:install|i|ci)|"
           r"yarn(?: add| install)?|pnpm (?:add|install|i)|apt(?:-get)? install|brew install|"
           r"cargo (?:add|install)|go (?:get|install)|gem install|conda install)\b")),
    _Kind("commit", "committed", r"\bcommitted\b|\bmade a commit\b|\bcreated a commit\b",
          r"\bgit\b(?:\s+-\S+(?:\s+\S+)?)*\s+commit\b"),
    _Kind("push", "pushed", r"\bpushed\b",
          r"\bgit\b(?:\s+-\S+(?:\s+\S+)?)*\s+push\b"),
)

_SHELL_ARGS = ("command", "cmd", "script")


def command_text(args: Any) -> str:
    """The shell command a call's arguments carry ("" when it is not a shell-like call)."""
    if not isinstance(args, dict):
        return ""
    for name in _SHELL_ARGS:
        value = args.get(name)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return ""


@dataclass(frozen=True)
class TurnCall:
    """What the check needs of one recorded call."""

    args: Any
    status: str  # in_flight | ok | error | unknown
    exit_code: int | None = None


_SENTENCE = re.compile(r"[.!?;\n]+")
_NOT_DONE = re.compile(r"\b(?:will|going to|next|plan(?:ning)? to|should|need(?:s)? to|let me|want to|"
                       r"could|would|can|may|might|todo|not yet|not run|haven'?t|have not|hasn'?t|"
                       r"didn'?t|did not|couldn'?t|could not|unable|instead of|before)\b|'ll\b", _I)


def compile_claim_patterns() -> None:
    """Compile every kind's claim pattern now (``re`` keeps them; ~2 ms): what a boundary's
    gathering would compile first, done where a process waits anyway (a rewind, while git
    scans the work tree)."""
    for kind in KINDS:
        kind.claim  # noqa: B018 - compiled and cached by ``re``


def claimed_kinds(text: str) -> list[_Kind]:
    """The kinds of action ``text`` says were done (intents and negations are not claims)."""
    sentences = [s for s in _SENTENCE.split(text or "") if s.strip() and not _NOT_DONE.search(s)]
    return [k for k in KINDS if any(k.claim.search(s) for s in sentences)]


def check_claim(text: str, calls: Sequence[TurnCall]) -> list[str]:
    """Notes on what ``text`` asserts that ``calls`` (every call of its turn) do not back."""
    notes: list[str] = []
    commands = [(command_text(c.args), c) for c in calls]
    for kind in claimed_kinds(text):
        support = [c for cmd, c in commands if cmd and kind.command.search(cmd)]
        if not support:
            notes.append(f"no tool call of this turn {kind.did}")
        elif all(c.status in ("in_flight", "unknown") for c in support):
            notes.append(f"the {kind.name} call of this turn has no recorded outcome")
        elif kind.success is not None and kind.success.search(text or ""):
            settled = [c for c in support if c.status in ("ok", "error")]
            if settled and all(c.status == "error" for c in settled):
                code = settled[-1].exit_code
                notes.append(f"every {kind.name} call of this turn failed"
                             + (f" (last: exit {code})" if code is not None else ""))
    return notes


def check_claims(claims: Iterable[tuple[str, str | None]],
                 calls_by_turn: dict[str, Sequence[TurnCall]]) -> list[list[str]]:
    """``check_claim`` for each (text, turn id); a claim with no turn id gets no note."""
    return [check_claim(text, calls_by_turn.get(turn, ())) if turn is not None else []
            for text, turn in claims]
