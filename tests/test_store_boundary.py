"""Callers ask the store named questions; SQL and the connection stay inside continuation/store/.

``NOT_YET`` lists files that still do (none now): the list is exact, so a file that starts
holding SQL fails, and so does one that stops without leaving the list.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAW_SQL = re.compile(r"\.conn\b|\.execute\(|\.executemany\(|\.transaction\(\)|store\._")

NOT_YET: set[str] = set()


def _holders() -> set[str]:
    found = set()
    for package in ("continuation", "capsule", "statemachine"):
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("continuation/store/"):
                continue
            if RAW_SQL.search(path.read_text(encoding="utf-8")):
                found.add(rel)
    return found


def test_only_the_listed_files_outside_the_store_hold_sql():
    assert _holders() == NOT_YET


def test_the_recording_core_hooks_api_importers_and_recovery_hold_no_sql():
    core = {h for h in _holders() if h.startswith(("continuation/session/", "continuation/hooks/",
                                                   "continuation/importers/", "continuation/recovery/",
                                                   "continuation/api.py"))}
    assert core == set()


def test_the_store_interface_names_no_connection():
    from continuation.store.interface import Store

    assert "conn" not in Store.__annotations__ and not hasattr(Store, "conn")
    assert not hasattr(Store, "transaction")
