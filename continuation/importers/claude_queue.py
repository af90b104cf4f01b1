"""Claude Code's queue of input typed while the agent works, as a transcript shows it.

``queue-operation`` records: ``enqueue`` (with the text), then one of ``dequeue`` (the head
becomes the next prompt: a ``user`` record follows), ``remove`` (taken out to be folded into
the running turn, or cancelled) and ``popAll`` (all of it put back into the prompt box for
editing). Newer versions name the text on ``remove``; 2.1.39 writes ``remove`` with no
content, so which entry left must be read from what follows (a ``dequeue`` needs no decision:
the prompt record after it names its text):

1. evidence that the model received a queued text: a ``user`` record (a prompt, a meta record,
   a tool result) whose text is the queued text or carries it in Claude Code's "the user sent
   ... message:" envelope, or a ``queued_command`` attachment with it;
2. otherwise, when the turn that was running at the ``remove`` ends, the queue order, with
   user prompts before runtime notifications (Claude Code serves the user's queued prompts
   first; a ``<task-notification>`` can sit ahead of the removed prompt): the entry is taken
   as folded into that turn when the turn ends normally (or is cut), and as put back into the
   prompt box when the user interrupted it (Esc returns queued input for editing): a draft,
   an input only once a prompt sends it. Slash commands are never folded into a turn (Claude
   Code runs them itself): the command record that follows takes them.

An entry counts as typed *while busy* only when the running turn showed life after it (model
output, a real tool result, a turn end). An entry followed by nothing of the old turn before
its prompt was typed into an idle (or dead: a crash, then ``--resume``) session: the hooks see
an ordinary prompt there, and so does the import.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_ENVELOPE = re.compile(r"(?i)(?:the user sent|user(?:'s)? (?:new )?message|new message)[^\n]{0,80}?:\s*")


@dataclass
class Entry:
    text: str
    line: int
    turn: str | None  # the turn running when it was typed
    system: bool = False  # a runtime notification (<task-notification>), not the user's
    alive: bool = False  # the running turn went on after it was typed (it really waited)
    returned: bool = False  # put back into the prompt box (Esc): a draft until it is sent


@dataclass
class Removal:
    turn: str | None  # the turn running at the remove (the one it was folded into)
    line: int


@dataclass
class InputQueue:
    entries: list[Entry] = field(default_factory=list)
    removals: list[Removal] = field(default_factory=list)  # content-less, not yet decided

    def enqueue(self, entry: Entry) -> None:
        self.entries.append(entry)

    def turn_alive(self) -> None:
        """The running turn produced something: whatever is queued now really waited."""
        for e in self.entries:
            e.alive = True

    def take(self, text: str, *, command: bool = False) -> Entry | None:
        """The entry with ``text`` (a command matches on its name), removed from the queue;
        a pending content-less removal is resolved by it."""
        want = text.strip()
        for i, e in enumerate(self.entries):
            have = e.text.strip()
            if have == want or (command and have.split()[:1] == [want]):
                if self.removals:
                    self.removals.pop(0)
                return self.entries.pop(i)
        return None

    def received_in(self, blob: str) -> list[Entry]:
        """Entries whose text ``blob`` (what the model was given) carries: taken out."""
        if not blob or not self.entries:
            return []
        found = [e for e in self.entries if not e.system and _carries(blob, e.text)]
        for e in found:
            self.entries.remove(e)
            if self.removals:
                self.removals.pop(0)
        return found

    def remove_unnamed(self, turn: str | None, line: int) -> None:
        if self.entries:
            self.removals.append(Removal(turn, line))

    def settle(self, turn: str | None = None, *,
               interrupted: bool = False) -> list[tuple[Entry, str | None]]:
        """Decide the content-less removals made during ``turn`` (all with ``None``) by queue
        order: (entry, turn it was folded into)."""
        out = []
        for r in [r for r in self.removals if turn is None or r.turn == turn]:
            self.removals.remove(r)
            pick = next((e for e in self.entries if not e.system and not e.returned), None)
            if pick is None:
                continue
            if pick.text.strip().startswith("/"):
                continue  # a command: run by the runtime, its own record takes it
            if interrupted:
                pick.returned = True
                continue
            self.entries.remove(pick)
            out.append((pick, r.turn))
        return out

    def pop_all(self) -> list[Entry]:
        """``popAll``: the user's entries went back into the prompt box (a later prompt, if
        any, is what the user sends); runtime notifications stay queued."""
        popped = [e for e in self.entries if not e.system]
        self.entries = [e for e in self.entries if e.system]
        self.removals = []
        return popped


def _carries(blob: str, text: str) -> bool:
    want = text.strip()
    if not want:
        return False
    if blob.strip() == want:
        return True
    for m in _ENVELOPE.finditer(blob):
        rest = blob[m.end():].lstrip()
        if rest.startswith(want):
            return True
    return False
