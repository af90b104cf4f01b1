"""Handing a rewound (or forked) thread to a fresh Codex or Claude Code session.

Chosen form: the assembled context is written to a file under the state home
(``handoff/<thread>/g<generation>.md``) and passed as the first prompt of a new session:

- Codex CLI, interactive:      ``codex "$(cat FILE)"``   (non-interactive: ``codex exec - < FILE``)
- Claude Code, interactive:    ``claude "$(cat FILE)"``  (non-interactive: ``claude -p < FILE``)
- PowerShell:                  ``codex (Get-Content -Raw FILE)`` / ``claude (Get-Content -Raw FILE)``

A file (not the text inline on the command line) because the context holds quotes, dollars and
newlines that no shell quoting survives everywhere. With encryption on the file is sealed and
the commands read it through ``continuation source handoff:<thread>:<generation>``. The text is the same block a hook delivers
at a boundary, so the model sees one format whichever way it arrives. The new session records
into its own thread when our hooks are installed; a fork's Claude Code command names the fork's
session id (``--session-id``) so that its hooks record into the fork itself.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from continuation.boundary import checkpoints as cps
from continuation.boundary import sealed_files
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
    sealer = thread.engine.store.codec.sealer
    sealed_files.write(path, text.encode("utf-8", "surrogatepass"), sealer)
    if sealer is None:
        q = shlex.quote(str(path))
        ps = "'" + str(path).replace("'", "''") + "'"
        cat, stdin, raw = f"cat {q}", f"< {q}", f"Get-Content -Raw {ps}"
    else:  # sealed (the store is encrypted): printed by `continuation source`, which opens it
        pointer = f"{sealed_files.HANDOFF_POINTER}:{thread.key}:{gen}"
        cat = f"{sealed_files.SOURCE_COMMAND} {pointer}"
        stdin, raw = f"< <({cat})", f"{cat} | Out-String"
    claude_sid = f" --session-id {session_id}" if session_id else ""
    commands = {
        "codex": f'codex "$({cat})"',
        "codex exec": f"codex exec - {stdin}",
        "claude": f'claude{claude_sid} "$({cat})"',
        "claude -p": f"claude -p{claude_sid} {stdin}",
        "codex (PowerShell)": f"codex ({raw})",
        "claude (PowerShell)": f"claude{claude_sid} ({raw})",
    }
    if thread.row["runtime"] == "claude":  # the thread's own runtime first
        commands = dict(sorted(commands.items(), key=lambda kv: not kv[0].startswith("claude")))
    return Handoff(thread.key, gen, str(path), text, commands)
