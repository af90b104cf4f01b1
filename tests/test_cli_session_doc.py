"""docs/commands.md shows a terminal session of the main commands at 80 columns; it is what
scripts/cli_session.py prints now (run it and paste its output when a command's output
changes). Compared with this run's times, folder and host name written alike, and line breaks
as they fall on this machine."""
from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "commands.md"


def _module():
    spec = importlib.util.spec_from_file_location("cli_session", ROOT / "scripts" / "cli_session.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _documented() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A session at 80 columns", 1)[1]
    return section[section.index("```console"):section.index("```\n", section.index("```console") + 10) + 4]


def _comparable(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", "TIME", text)
    text = re.sub(r"pid 999999 on \S+\)", "pid 999999 on HOST)", text)
    return " ".join(text.split())


def test_the_documented_session_fits_80_columns_and_is_what_the_commands_print():
    documented = _documented()
    assert max(len(line) for line in documented.splitlines()) <= 80
    for args in _module().SESSION:
        assert f"$ continuation {' '.join(args)}\n" in documented
    session = _module()
    root = session.new_root()
    try:
        world = session.build_world(root)
        fresh = session.session_markdown(world, str(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert _comparable(fresh) == _comparable(documented), (
        "docs/commands.md's session is stale: paste `python scripts/cli_session.py` into it")
