"""The npm cache helper: reuse an installed CLI, explain clearly why one cannot be had."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import npm_tools  # noqa: E402
from bounded import run_bounded  # noqa: E402


def _fake_install(folder: Path, package: str, version: str, bin_name: str) -> Path:
    manifest = folder / "node_modules" / Path(*package.split("/")) / "package.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(f'{{"name": "{package}", "version": "{version}"}}', encoding="utf-8")
    binary = folder / "node_modules" / ".bin" / (f"{bin_name}.cmd" if os.name == "nt" else bin_name)
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n", encoding="utf-8")
    return binary


def test_cache_root_and_folder_names(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTINUATION_E2E_CACHE", str(tmp_path))
    assert npm_tools.package_dir("@openai/codex", "0.171.0") == tmp_path / "codex-0.171.0"
    assert npm_tools.package_dir("@anthropic-ai/claude-code", "2.1.332") == tmp_path / "claude-2.1.332"


def test_an_installed_cli_is_reused_without_npm(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTINUATION_E2E_CACHE", str(tmp_path))
    binary = _fake_install(tmp_path / "codex-0.171.0", "@openai/codex", "0.171.0", "codex")
    monkeypatch.setattr(npm_tools.shutil, "which", lambda name: None)  # npm would be needed: it is not
    assert npm_tools.ensure_npm_cli("@openai/codex", "0.171.0", "codex") == binary


def test_a_different_installed_version_is_not_taken_for_the_pinned_one(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTINUATION_E2E_CACHE", str(tmp_path))
    _fake_install(tmp_path / "codex-0.171.0", "@openai/codex", "0.170.0", "codex")
    monkeypatch.setattr(npm_tools.shutil, "which", lambda name: None)
    with pytest.raises(npm_tools.ToolUnavailable, match="node/npm not found"):
        npm_tools.ensure_npm_cli("@openai/codex", "0.171.0", "codex")


def test_missing_node_is_a_reason_not_a_crash(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTINUATION_E2E_CACHE", str(tmp_path))
    monkeypatch.setattr(npm_tools.shutil, "which", lambda name: None)
    with pytest.raises(npm_tools.ToolUnavailable) as info:
        npm_tools.ensure_npm_cli("@openai/codex", "0.171.0", "codex")
    assert "@openai/codex@0.171.0" in str(info.value)


@pytest.mark.skipif(os.name == "nt", reason="POSIX shell and process groups")
def test_run_bounded_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child-still-running"
    # The child shell starts a grandchild that would write the marker after 2 s.
    script = f"(sleep 2; echo alive > '{marker}') & sleep 30"
    done = run_bounded(["/bin/sh", "-c", script], timeout=0.5)
    assert done.timed_out and done.seconds < 5
    import time

    time.sleep(2.5)
    assert not marker.exists(), "a grandchild survived the time limit"
