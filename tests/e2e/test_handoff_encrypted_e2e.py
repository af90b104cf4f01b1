"""The real Codex CLI 0.171.0 with encryption at rest on: after its compaction the model prints
its sealed work record with the ``continuation source`` commands the context names, in Codex's
own shell tool, and finds every step it ran there (``scripts/handoff_real.py --encrypt``, its
40-step case, ~20 s once the CLI is cached).

Codex runs the model's commands in a login shell, whose profile sets PATH anew: the command
must resolve there, not only on the PATH Codex itself was started with (an activated venv)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "scripts"))

import codex_harness as ch  # noqa: E402

pytestmark = pytest.mark.e2e
pytest.importorskip("cryptography", reason="the encryption extra (cryptography) is not installed")


def test_codex_model_prints_its_sealed_record_in_its_own_shell(tmp_path):
    ch.codex_or_skip()
    import handoff_real as hr
    import listreader as lr

    case = hr.build_case("plan40")
    hr.ENCRYPT[0] = "file"
    try:
        result = hr.run_case("codex", case, tmp_path / "codex")
    finally:
        hr.ENCRYPT[0] = ""
    assert result["compactions_forced"] == ["30"], result["runs"]
    [handoff] = result["handoffs"]
    sources = handoff["files"]
    # sealed: nothing named as a file, every page and spilled part as a command
    assert sources and all(" source work:" in c or " source context:" in c for c in sources), sources
    outputs = hr.read_outputs(tmp_path / "codex")
    assert set(outputs) == set(sources)
    for command, text in outputs.items():
        assert "exited with code 0" in text, (command, text[:500])
    # the 30 steps run before the compaction are all in what the commands printed
    done = lr.done_commands(list(outputs.values()))
    assert [s.label for s in case.steps[:30] if s.command not in done] == []
    assert (result["redone"], result["lost"]) == (0, 0), result["redone_steps"]
