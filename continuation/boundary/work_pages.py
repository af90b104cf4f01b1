"""The work record's pages on disk: gathered from the store, written at each boundary.

Which calls: every finished call (ok, error, or reconciled as applied) of the turns of every
input a model may still be shown: the open ones, and the handled ones of the thread among the
newest :data:`MAX_SHOWN_HANDLED` (the runtime keeps a finished prompt in its own history after a
compaction, and an agent that finds it there with nothing saying it was done redoes it). A call reconciled as
not applied or retry-safe is not finished work: the decision notice says so, and it is never
listed as done. At most :data:`MAX_RECORD_CALLS`, the newest.

Where: ``<state home>/contexts/<thread>/g<generation>.work<NNN>.md`` beside the spilled context,
with ``g<generation>.work.json`` listing every page and its sha256. ``continuation install``
grants each runtime's own file tools this folder (Claude Code: ``permissions.
additionalDirectories``; Gemini CLI: ``context.includeDirectories``; Codex reads it with its
shell), so a model reads a page with one call, and ``continuation source work:<thread>:<g>:<n>``
prints it too (verified against its hash).
"""
from __future__ import annotations

import json
import os

from capsule import work_record

from continuation.host.atomic import atomic_write
from continuation.host.own_command import source_command

MAX_RECORD_CALLS = 5_000
#: handled inputs whose turns the record lists, the newest (a runtime's own history after a
#: compaction keeps its recent prompts: Codex its user messages, Claude Code a summary)
MAX_SHOWN_HANDLED = 50
#: pages named one by one in the capsule; beyond, the first and the newest, and one line for the rest
MAX_NAMED_PAGES = 16
_RECORD_STATUSES = ("ok", "error", "reconciled")
_NOT_SHOWN = ("superseded", "rolled_back")


def folder(home, thread_key: str) -> str:
    return os.path.join(os.fspath(home), "contexts", thread_key)


def is_done(call) -> bool:
    """A call the record lists as finished work (a reconcile decision other than applied
    leaves its work to do)."""
    return call.status in ("ok", "error") or (call.status == "reconciled" and call.decision == "applied")


def status_of(call) -> str:
    return "ok" if call.status == "reconciled" else call.status


def gather(store, thread_key: str, inputs, read=None) -> dict:
    """Plain data for :func:`build`: the inputs shown and their turns' finished calls.
    ``read``: (turn ids, call records) already read from the store (the capsule's gathering
    reads every finished call of the open inputs' turns): only the other turns are read."""
    open_ = [r for r in inputs if r.state not in _NOT_SHOWN + ("handled",) and r.turn_id]
    handled = [r for r in inputs if r.state == "handled" and r.turn_id][-MAX_SHOWN_HANDLED:]
    shown = sorted(open_ + handled, key=lambda r: r.admitted_seq or 0)
    turns = list(dict.fromkeys(r.turn_id for r in shown))
    known_turns, known = read if read is not None else (set(), [])
    view = store.state_view(thread_key)
    wanted = set(turns)
    found = [c for c in known if c.turn_id in wanted and c.turn_id in known_turns]
    found += view.calls_of_turns([t for t in turns if t not in known_turns], _RECORD_STATUSES)
    found.sort(key=lambda c: c.started_seq)
    records = [c for c in found if is_done(c)]
    calls = [dict(seq=c.started_seq, tool=c.tool or "?", args=c.args or {}, status=status_of(c),
                  exit_code=(c.outcome or {}).get("exit_code"), turn_id=c.turn_id)
             for c in records[-MAX_RECORD_CALLS:]]
    return dict(
        calls=calls, omitted=max(0, len(records) - MAX_RECORD_CALLS),
        inputs=[dict(id=r.input_id, state=r.state, text=r.text, seq=r.admitted_seq, turn_id=r.turn_id)
                for r in shown])


def build(thread_key: str, generation: int, gathered: dict):
    """(pages, index): the pages' texts and the capsule's ``work_record`` (plain data), or
    (``[]``, None) when no call is finished. The source command (which prints a clipped call,
    an event range, and sealed pages) is named by its script's path (``host.own_command``): the
    model's shell may not have it on its PATH (Codex's login shell sets PATH anew)."""
    calls, inputs = gathered["calls"], gathered["inputs"]
    if not calls:
        return [], None
    source = source_command()
    turns = work_record.label_turns(calls, inputs)
    with_calls = {t.turn_id for t in turns}
    shell = work_record.shell_tool_of(calls)
    pages = work_record.build_pages(
        thread_key=thread_key, generation=generation, calls=calls,
        inputs=[i for i in inputs if i["turn_id"] in with_calls], turns=turns, shell_tool=shell,
        source_command=source)
    named = pages if len(pages) <= MAX_NAMED_PAGES else [pages[0], *pages[-(MAX_NAMED_PAGES - 1):]]
    failed_pages = [p for p in pages if p.failed and p not in named]
    index = dict(
        folder="", manifest=work_record.manifest_name(generation), calls=len(calls),
        failed=sum(p.failed for p in pages), pages_total=len(pages),
        pages=[dict(name=p.name, first_seq=p.first_seq, last_seq=p.last_seq, calls=p.calls,
                    failed=p.failed)
               for p in sorted([*named, *failed_pages], key=lambda p: p.first_seq)],
        turns=[t._asdict() for t in turns[-8:]], shell_tool=shell, source_command=source)
    return pages, index


def write(home, thread_key: str, generation: int, pages, index: dict, sealer=None) -> dict:
    """Write the pages and their manifest (each atomically); returns ``index`` with its folder
    and the manifest's sha256. ``sealer``: the store is encrypted, the pages are sealed
    (``boundary.sealed_files``) and the capsule names them as ``continuation source`` commands
    (``sealed``)."""
    import hashlib

    from continuation.boundary import sealed_files

    where = folder(home, thread_key)
    # derived from the store and checked by their hashes: atomic, not synced (a sync per page
    # was ~2-5 ms of a boundary, a 1,000-call record has 13; a crash may leave a page old or
    # torn, which its hash says, and the next boundary writes it again)
    for page in pages:
        sealed_files.write(os.path.join(where, page.name),
                           page.text.encode("utf-8", "surrogatepass"), sealer, durable=False)
    manifest = json.dumps({"thread": thread_key, "generation": generation,
                           "pages": [{"name": p.name, "first_seq": p.first_seq, "last_seq": p.last_seq,
                                      "calls": p.calls, "failed": p.failed, "sha256": p.sha256}
                                     for p in pages]}, indent=1).encode("utf-8")
    atomic_write(os.path.join(where, index["manifest"]), manifest, durable=False)
    done = {**index, "folder": where, "manifest_sha256": hashlib.sha256(manifest).hexdigest()}
    if sealer is not None:
        done["sealed"] = True
    return done


def read_page(home, thread_key: str, generation: int, number: int, sealer=None) -> str:
    """A page's text, verified against the manifest; OSError / ValueError say why not (a
    sealed page without ``sealer`` too)."""
    from continuation.boundary import sealed_files
    from continuation.host.sealing import SealError

    where = folder(home, thread_key)
    with open(os.path.join(where, work_record.manifest_name(generation)), "rb") as f:
        manifest = json.loads(f.read())
    pages = manifest.get("pages") or []
    if not 1 <= number <= len(pages):
        raise ValueError(f"generation {generation} of thread {thread_key} has {len(pages)} work "
                         f"record page(s), not a page {number}")
    try:
        data = sealed_files.read(os.path.join(where, pages[number - 1]["name"]), sealer)
    except SealError as exc:
        raise ValueError(str(exc)) from None
    text = data.decode("utf-8", "surrogatepass")
    if not work_record.verify_page(text):
        raise ValueError(f"work record page {pages[number - 1]['name']} does not match its sha256")
    return text
