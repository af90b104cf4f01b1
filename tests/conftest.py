"""Shared fixtures: an isolated state home per test, and the third-party fixtures folder."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"


def usable_cpus() -> int:
    """The CPUs this process may run on (a capsule worker needs two)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
PROJECT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def home(tmp_path, monkeypatch, request) -> Path:
    """A fresh CONTINUATION_HOME (and HOME) for the test. Its store is the embedded default,
    or, with ``CONTINUATION_TEST_STORE=postgresql``, a fresh database of a throwaway cluster
    (to run engine-level tests on that backend; tests of the SQLite file itself then fail)."""
    state = tmp_path / "state"
    monkeypatch.setenv("CONTINUATION_HOME", str(state))
    monkeypatch.delenv("CONTINUATION_STRICT", raising=False)
    if os.environ.get("CONTINUATION_TEST_STORE") == "postgresql":
        monkeypatch.setenv("CONTINUATION_STORE", request.getfixturevalue("pg_url"))
    else:
        monkeypatch.delenv("CONTINUATION_STORE", raising=False)  # the embedded default
    return state


@pytest.fixture
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is absent (third-party fixtures are read from there)")
    return SHARED_FIXTURES


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    """The folders an install test passes to ``continuation.install``: a project, a HOME and a
    state home, all under the test's tmp_path."""
    project = tmp_path / "project"
    project.mkdir()
    return {"project_dir": project, "home": tmp_path / "home", "state_home": tmp_path / "state"}


@pytest.fixture
def engine(home):
    from continuation.session.engine import Engine

    with Engine(home) as e:
        yield e


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway PostgreSQL cluster for the session (skips with the reason when none)."""
    from pg_cluster import remove, start_cluster

    cluster, reason = start_cluster()
    if cluster is None:
        pytest.skip(reason)
    # the relays hooks start for this session's databases: in a folder of the session's own,
    # stopped with the cluster
    import tempfile

    from pg_cluster import stop_relays

    relays = tempfile.mkdtemp(prefix="crelay-")
    os.environ["CONTINUATION_RELAY_DIR"] = relays
    yield cluster
    stop_relays(relays)
    os.environ.pop("CONTINUATION_RELAY_DIR", None)
    remove(cluster)


@pytest.fixture
def pg_url(pg_cluster):
    """A fresh database of the session's cluster for one test."""
    return pg_cluster.create_database(f"t{next(_DATABASES)}_{os.getpid()}")


_DATABASES = __import__("itertools").count(1)
