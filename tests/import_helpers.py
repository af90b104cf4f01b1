"""Helpers shared by the transcript importer tests (module name kept distinctive)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from continuation import hooks
from continuation.session.engine import Engine
from continuation.importers import import_transcript

PROJECT_TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def run_import(home, runtime, path, **kw):
    with Engine(home) as e:
        return import_transcript(runtime, path, engine=e, **kw)


def thread_of(engine, runtime, session):
    t = engine.find_thread(runtime, session)
    assert t is not None, f"no {runtime} thread for {session}"
    return t


def states(home, runtime, session) -> dict[str, str]:
    with Engine(home) as e:
        return {r.text: r.state for r in thread_of(e, runtime, session).inputs()}


def snapshot(home, runtime, session) -> dict:
    """Everything a re-import must leave unchanged (events by type, inputs, calls, claims)."""
    with Engine(home) as e:
        t = thread_of(e, runtime, session)
        events = t.events()
        return {
            "types": Counter(ev["type"] for ev in events),
            "inputs": sorted((r.input_id, r.state) for r in t.inputs()),
            "calls": sorted((c.call_id, c.status) for c in t.tool_calls()),
            "claims": sorted((c["turn_id"] or "", c["text"]) for c in t.claims()),
            "last_seq": t.row["last_seq"],
        }


def replay_hooks(runtime: str, payload_file: Path) -> None:
    for line in payload_file.read_bytes().splitlines():
        out, code = hooks.run(runtime, line)
        assert code == 0
        json.loads(out)
