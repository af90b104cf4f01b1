"""What a stored row holds: its JSON text, or, with encryption on, the row sealed.

The one place both backends (and anything that carries their statements) encode and decode the
text they keep: event payloads, the derived rows (inputs, turns, tool calls, their earlier
versions), a thread's facts (settings, plan...), claims, and a checkpoint's capsule, rendering
and workspace record. The SQL never sees the difference.

A sealed row is a JSON object: ``{"~": "<sealed text>", ...}`` where the sealed text
(``host.sealing``) holds the whole row, and beside it, in clear, the few fields the store's
statements read inside the database (:data:`CLEAR_FIELDS`: a turn id, an event's kind, the path
a file event names, a turn's start and end seqs, a call's exit code), so an indexed lookup works the same
sealed or not. Every other field (texts, arguments, outputs, claims...) is in the sealed part
only. A plain text column (a claim's text, a rendering) holds the sealed text itself; a
capsule's bytes their sealed file form.

Which key seals is the store's to say (``store_meta``'s ``encryption`` row: the key id and the
cipher, never the key): :func:`codec_for`. No ``json``, no ``re``, no crypto import here: the
hook hot path decodes through this module.
"""
from __future__ import annotations

from continuation.host import jsontext
from continuation.host.sealing import TEXT_MARK, SealError, Sealer
from continuation.store.errors import StoreError

#: the fields a statement reads inside the database (``json_extract`` / ``#>>``), kept in clear
#: beside a sealed row; a dict value keeps only its listed sub-fields
CLEAR_FIELDS: dict[str, tuple[str, ...] | None] = {
    "turn_id": None, "kind": None, "path": None, "started_seq": None, "ended_seq": None,
    "outcome": ("exit_code",),
}
SEALED_ROW = '{"~":"'
META_KEY = "encryption"
CIPHER = "AES-256-GCM"
#: (table, its key columns, (column, kind) of what is sealed in it): every value a rotation
#: rewrites. Kinds: ``row`` (JSON text), ``text`` (a plain text column), ``bytes`` (a capsule).
#: A checkpoint's workspace record (paths, refs, sizes) and the threads' own columns (ids, the
#: workspace root) stay in clear: docs/encryption.md
SEALED_COLUMNS: tuple[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]], ...] = (
    ("events", ("thread_key", "seq"), (("data", "row"),)),
    ("inputs", ("thread_key", "input_id"), (("data", "row"),)),
    ("turns", ("thread_key", "turn_id"), (("data", "row"),)),
    ("tool_calls", ("thread_key", "call_id"), (("data", "row"),)),
    ("row_versions", ("thread_key", "seq", "n"), (("data", "row"),)),
    ("thread_meta", ("thread_key", "key"), (("value", "row"),)),
    ("claims", ("thread_key", "seq"), (("text", "text"),)),
    ("checkpoints", ("checkpoint_id",), (("capsule", "bytes"), ("rendered", "text"))),
)
#: rows read and rewritten at a time by a rotation
BATCH = 1000


def row_json(row: dict) -> str:
    """A row's JSON text: ASCII (lone surrogates survive escaped), so ``len`` is its bytes."""
    return jsontext.dumps(row, ensure_ascii=True, separators=(",", ":"))


class KeyUnavailable(StoreError):
    """The store is encrypted and its key cannot be had (missing, wrong, unreadable): one
    line saying what to do. Nothing is written in clear instead."""


class Codec:
    """Rows in and out of the store. ``sealer`` None: rows are written in clear (a sealed row
    found anyway, from an encrypted store whose key is not loaded, is refused)."""

    __slots__ = ("sealer", "key_id")

    def __init__(self, sealer: Sealer | None = None, key_id: str | None = None):
        self.sealer, self.key_id = sealer, key_id

    @property
    def sealing(self) -> bool:
        return self.sealer is not None

    # -- JSON rows -----------------------------------------------------------------------------
    def dump(self, row: dict) -> str:
        return self.dump_sized(row)[0]

    def dump_sized(self, row: dict) -> tuple[str, int]:
        """(the stored text, the bytes of the row in clear: what a size total counts)."""
        text = row_json(row)
        if self.sealer is None:
            return text, len(text)
        clear = {"~": self.sealer.seal_text(text)}
        for name, sub in CLEAR_FIELDS.items():
            value = row.get(name)
            if value is None:
                continue
            if sub is None:
                clear[name] = value
            elif isinstance(value, dict):
                kept = {k: value[k] for k in sub if k in value}
                if kept:
                    clear[name] = kept
        return row_json(clear), len(text)

    def load(self, text: str):
        if not text.startswith(SEALED_ROW):
            return jsontext.loads(text)
        return jsontext.loads(self._open(jsontext.loads(text)["~"]))

    # -- plain text columns ---------------------------------------------------------------------
    def dump_text(self, text: str) -> str:
        return text if self.sealer is None else self.sealer.seal_text(text)

    def load_text(self, text):
        # only a store that is encrypted holds sealed text: in one that is not, a text that
        # merely starts like one is somebody's text
        if text is None or self.sealer is None or not text.startswith(TEXT_MARK):
            return text
        return self._open(text)

    # -- bytes (a capsule) ---------------------------------------------------------------------
    def dump_bytes(self, data: bytes) -> bytes:
        return data if self.sealer is None else self.sealer.seal_file(data)

    def load_bytes(self, data) -> bytes:
        data = bytes(data)
        from continuation.host.sealing import file_key_id

        if file_key_id(data) is None:
            return data
        return self._opened("open_file", data, "a sealed capsule was found")

    def _open(self, sealed: str) -> str:
        return self._opened("open_text", sealed, "the store holds encrypted rows")

    def _opened(self, how: str, sealed, found: str):
        """``sealed`` opened by the sealer's ``how``; without a key, or with the wrong one, a
        :class:`KeyUnavailable` that says what was found."""
        if self.sealer is None:
            raise KeyUnavailable(f"{found} and no key is loaded (see `continuation key status`)")
        try:
            return getattr(self.sealer, how)(sealed)
        except SealError as exc:
            raise KeyUnavailable(str(exc)) from None


PLAIN = Codec()


def parse_meta(value: str | None) -> dict | None:
    """The store's ``encryption`` meta row: {"cipher", "key_id"}, or None when off."""
    if not value:
        return None
    meta = jsontext.loads(value)
    return meta if isinstance(meta, dict) and meta.get("key_id") else None


def codec_for(meta: dict | None) -> Codec:
    """The codec of a store whose encryption meta is ``meta`` (None: off): its key looked up
    in the key sources (``host.keys``); :class:`KeyUnavailable` when it cannot be had."""
    if meta is None:
        return PLAIN
    if meta.get("cipher", CIPHER) != CIPHER:
        raise KeyUnavailable(f"the store is encrypted with {meta.get('cipher')!r}, which this "
                             "version does not know; upgrade continuation")
    from continuation.host.keys import KeyProblem, keys_for

    key_id = str(meta["key_id"])
    try:
        keys = keys_for(key_id)
    except KeyProblem as exc:
        raise KeyUnavailable(str(exc)) from None
    return Codec(Sealer(keys, key_id), key_id)


def meta_text(key_id: str) -> str:
    return jsontext.dumps({"cipher": CIPHER, "key_id": key_id}, separators=(",", ":"))


def recode(old: Codec, new: Codec, kind: str, value):
    """A stored ``value`` of ``kind`` read with ``old`` and written with ``new``."""
    if value is None:
        return None
    if kind == "row":
        return new.dump(old.load(value))
    if kind == "text":
        return new.dump_text(old.load_text(value))
    return new.dump_bytes(old.load_bytes(value))


#: in the state home: its store's encryption meta as last seen, so a store made there anew (the
#: spool of an unreachable server, the store that takes over from a damaged one) seals under
#: the same key instead of starting in clear
REMEMBERED = "store-encryption.json"


def remember(home: str | None, meta: dict | None) -> None:
    """Keep ``meta`` (None: encryption off) in the state home when it changed."""
    if not home:
        return
    import os

    path = os.path.join(home, REMEMBERED)
    text = None if meta is None else meta_text(str(meta["key_id"]))
    if remembered_text(home) == text:
        return
    if text is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    from continuation.host.atomic import atomic_write

    atomic_write(path, text.encode("ascii"), durable=True)


def remembered_text(home: str) -> str | None:
    import os

    try:
        with open(os.path.join(home, REMEMBERED), encoding="ascii") as fh:
            return fh.read().strip() or None
    except (FileNotFoundError, UnicodeDecodeError):
        return None
