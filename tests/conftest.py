"""Shared fixtures: an isolated state home per test, and the third-party fixtures folder."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
PROJECT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh CONTINUATION_HOME (and HOME) for the test."""
    state = tmp_path / "state"
    monkeypatch.setenv("CONTINUATION_HOME", str(state))
    monkeypatch.delenv("CONTINUATION_STRICT", raising=False)
    return state


@pytest.fixture
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is absent (third-party fixtures are read from there)")
    return SHARED_FIXTURES


@pytest.fixture
def engine(home):
    from continuation.engine import Engine

    with Engine(home) as e:
        yield e
