"""Handing a rewound (or forked) thread to a fresh Codex or Claude Code session.

Chosen form: the assembled context is written to a file under the state home
(``handoff/<thread>/g<generation>.md``) and passed as the first prompt of a new session:

- Codex CLI, interactive:      ``codex "$(cat FILE)"``   (non-interactive: ``codex exec - < FILE``)
- Claude Code, interactive:    ``claude "$(cat FILE)"``  (non-interactive: ``claude -p < FILE``)
- PowerShell:                  ``codex (Get-Content -Raw FILE)`` / ``claude (Get-Content -Raw FILE)``

A file (not the text inline on the command line) because the context holds quotes, dollars and
newlines that no shell quoting survives everywhere. The text is the same block a hook delivers
at a boundary, so the model sees one format whichever way it arrives. The new session records
into its own thread when our hooks are installed; a fork's Claude Code command names the fork's
session id (``--session-id``) so that its hooks record into the fork itself.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from continuation.boundary import checkpoints as cps
from continuation.host.atomic import atomic_write
from continuation.session.engine import Thread


@dataclass
class Handoff:
    thread_key: str
    generation: int
    path: str
    text: str
    commands: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return self.__dict__.copy()

    def describe(self) -> str:
        lines = [f"# handoff prompt for thread {self.thread_key}, generation {self.generation}",
                 f"# written to {self.path}", "# start a fresh session from it with one of:"]
        lines += [f"#   {name:<18} {cmd}" for name, cmd in self.commands.items()]
        return "\n".join(lines)


def handoff(thread: Thread, *, session_id: str | None = None) -> Handoff:
    from continuation.boundary.crossing import assembled_text

    loaded = cps.load(thread)
    if loaded is None:
        from continuation.rewind.errors import RewindError

        raise RewindError(f"thread {thread.key} has no checkpoint to hand off")
    text = assembled_text(thread, loaded)
    for problem in loaded.problems:
        text = f"[continuation: {problem}]\n" + text
    gen = loaded.checkpoint.generation
    path = thread.engine.home / "handoff" / thread.key / f"g{gen:06d}.md"
    atomic_write(path, text.encode("utf-8", "surrogatepass"))
    q = shlex.quote(str(path))
    ps = "'" + str(path).replace("'", "''") + "'"
    claude_sid = f" --session-id {session_id}" if session_id else ""
    commands = {
        "codex": f'codex "$(cat {q})"',
        "codex exec": f"codex exec - < {q}",
        "claude": f'claude{claude_sid} "$(cat {q})"',
        "claude -p": f"claude -p{claude_sid} < {q}",
        "codex (PowerShell)": f"codex (Get-Content -Raw {ps})",
        "claude (PowerShell)": f"claude{claude_sid} (Get-Content -Raw {ps})",
    }
    if thread.row["runtime"] == "claude":  # the thread's own runtime first
        commands = dict(sorted(commands.items(), key=lambda kv: not kv[0].startswith("claude")))
    return Handoff(thread.key, gen, str(path), text, commands)
