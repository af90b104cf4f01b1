"""What the recovery loop tells the model and the user, in words.

Every text starts with :data:`MARK`, so a runtime that hands a turn-end answer back as a new
prompt (Gemini CLI's AfterAgent ``block`` fires BeforeAgent again with it) can be told from the
user's own typing. Texts stay well under the 10,000 characters Claude Code and Codex pass inline
(:data:`MAX_CHARS`): lists are cut at :data:`MAX_ITEMS` with the count of the rest, the check's
output at :data:`OUTPUT_CHARS`.
"""
from __future__ import annotations

MARK = "[continuation guard]"
MAX_CHARS = 8_000
MAX_ITEMS = 12
OUTPUT_CHARS = 3_000
LINE_CHARS = 160


def _clip(text, limit: int = LINE_CHARS) -> str:
    text = " ".join(str(text if text is not None else "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _output(run: dict, limit: int = OUTPUT_CHARS) -> list[str]:
    text = (run.get("output") or "").rstrip()
    if not text:
        return ["  (no output)"]
    if len(text) > limit:
        text = "[...]\n" + text[-limit:]
    return ["  " + line for line in text.splitlines()]


def _bounded(lines: list[str], more: str) -> list[str]:
    if len(lines) <= MAX_ITEMS:
        return lines
    return lines[:MAX_ITEMS] + [f"  ... and {len(lines) - MAX_ITEMS} more ({more})"]


def how_it_failed(run: dict) -> str:
    if run.get("timed_out"):
        return f"did not finish within its timeout ({run.get('seconds', 0):.0f} s)"
    code = run.get("exit_code")
    kind = "failed fatally" if run.get("verdict") == "fatal" else "failed"
    return f"{kind} (exit {code}, {run.get('seconds', 0):.1f} s)"


def call_line(call) -> str:
    args = call.args or {}
    target = next((args[k] for k in ("command", "cmd", "file_path", "path", "notebook_path")
                   if isinstance(args.get(k), str)), None)
    if target is None and args:
        import json

        target = json.dumps(args, ensure_ascii=False, sort_keys=True)
    outcome = call.status
    code = (call.outcome or {}).get("exit_code")
    if code is not None:
        outcome += f", exit {code}"
    return f"  - {call.tool or 'tool'} `{_clip(target or '', 120)}` -> {outcome}"


def _checkpoint_words(cp_id: str | None, seq: int | None) -> str:
    if not cp_id:
        return "no passing state was recorded yet"
    return f"checkpoint {cp_id} (event {seq})"


def _outside(outside: list[tuple[object, str]]) -> list[str]:
    if not outside:
        return []
    lines = [f"{call_line(call)}  [{why}]" for call, why in outside]
    return ["Calls that reached OUTSIDE the workspace: a rewind does not undo them. Do not run "
            "them again unless you have checked that it is needed and safe:",
            *_bounded(lines, "continuation events")]


def report(command: str, run: dict, *, failures: int, policy: str, threshold: int,
           good: tuple[str | None, int | None], cannot: str | None, outside,
           turn_end: bool) -> str:
    lines = [f"{MARK} The project's check `{_clip(command, 200)}` {how_it_failed(run)} "
             + ("at the end of your turn." if turn_end else "after your last change."),
             "Its output (first and last part):", *_output(run),
             f"The last state where the check passed: {_checkpoint_words(*good)}."]
    if policy == "rewind" and cannot is None:
        left = threshold - failures
        lines.append("Fix the failure before going on. " + (
            f"After {left} more failed check(s) in a row the workspace files are put back to "
            "that checkpoint automatically." if left > 0 else
            "The next failed check puts the workspace files back to that checkpoint."))
    elif policy == "rewind" and good[0]:
        lines.append(f"Fix the failure before going on: {_clip(cannot, 300)}, so nothing is put "
                     "back automatically.")
    else:
        lines.append("Fix the failure before going on; the user asked to be told of it.")
    lines += _outside(outside)
    if turn_end:
        lines.append("Your turn is not over: continue until the check passes, or say plainly "
                     "what blocks you.")
    return _fit(lines)


def rewind(command: str, run: dict, *, failures: int, fatal: bool, good: tuple[str, int | None],
           tried: list, files: dict, outside, used: int, budget: int,
           left: dict | None = None) -> str:
    why = ("the check called the failure fatal" if fatal else
           f"it failed {failures} time(s) in a row")
    lines = [f"{MARK} The project's check `{_clip(command, 200)}` {how_it_failed(run)}, and "
             f"{why}: the workspace files were put back automatically to "
             f"{_checkpoint_words(*good)}, the last state where the check passed. Your "
             "conversation was kept: you can see what you tried; its effects on the files after "
             "that checkpoint are undone" + (", except on the files named NOT put back below."
                                              if left else ".")]
    if tried:
        lines += ["What was tried since that checkpoint:",
                  *_bounded([call_line(c) for c in tried], "continuation events")]
    lines += ["What failed, the check's last output:", *_output(run)]
    put_back = [f"  - {p} (restored)" for p in files.get("restored") or []]
    put_back += [f"  - {p} (re-created)" for p in files.get("recreated") or []]
    put_back += [f"  - {p} (deleted: the agent had created it)" for p in files.get("deleted") or []]
    lines += ["Files put back:", *(_bounded(put_back, "continuation checkpoints --json")
                                   or ["  (none: the files were already as at the checkpoint)"])]
    kept = [f"  - {k.get('path')} ({k.get('why')})" for k in files.get("kept_edits") or []]
    kept += [f"  - {p} (new, not created by an agent call)" for p in files.get("kept") or []]
    if kept:
        lines += ["Kept as they are (the user's own edits, not touched):",
                  *_bounded(kept, "continuation events")]
    if left:
        lines += ["NOT put back (the checkpoint could not store them; they are as your calls "
                  "left them: check them yourself):",
                  *_bounded([f"  - {p} ({_clip(w, 120)})" for p, w in sorted(left.items())],
                            "continuation events")]
    lines += _outside(outside)
    lines += ["What to do differently: re-read the files listed above before editing them; do "
              "not repeat the change that made the check fail (its output is above); make one "
              "change at a time and keep the check passing.",
              f"Automatic rewinds used for this request: {used} of {budget}."]
    return _fit(lines)


def halt(command: str, run: dict, *, why: str, good: tuple[str | None, int | None],
         outside, thread_key: str, can_rewind: bool = True) -> str:
    cp_id = good[0]
    lines = [f"{MARK} The agent was stopped: the project's check `{_clip(command, 200)}` "
             f"{how_it_failed(run)}, and {why}.",
             f"The last state where the check passed: {_checkpoint_words(*good)}."]
    if cp_id and can_rewind:
        lines.append(f"`continuation rewind {cp_id} --files --thread {thread_key}` puts the "
                     "files back to it; `continuation restore --undo` undoes the newest "
                     "automatic rewind.")
    lines += ["The check's last output:", *_output(run, 1200)]
    lines += _outside(outside)
    return _fit(lines)


def error(command: str, run: dict, origin: str) -> str:
    return (f"{MARK} the guard's check `{_clip(command, 200)}` could not run: "
            f"{run.get('error') or 'unknown error'}. Nothing was done about it; fix the command "
            f"in {origin or 'the guard settings'}.")


def _fit(lines: list[str]) -> str:
    text = "\n".join(lines)
    if len(text) <= MAX_CHARS:
        return text
    return text[: MAX_CHARS - 60] + "\n[... cut to fit; `continuation events` has the rest]"
