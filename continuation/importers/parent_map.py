"""The Claude conversation DAG (record uuid -> parentUuid), compact: ~32 bytes a record.

The rewind check walks up this DAG, so every record's link is kept for the whole import; as a
dict of uuid strings it cost ~200 bytes a record (two 36-character strings and a dict entry),
the largest part of an import's memory that grew with the file once the ops left memory.
Here a canonical uuid (36 characters, lowercase hex, as Claude Code writes them) is stored as
its 128-bit value in two ``array('Q')`` columns, its parent as the parent's entry number, and
an open-addressing table of entry numbers finds them. Anything else (an uppercase or made-up
id, as in hand-written transcripts) goes to a plain dict beside it: the answers are exactly a
dict's, for any string.
"""
from __future__ import annotations

from array import array

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
NONE, ODD, ABSENT = -1, -2, -3  # no parent; a parent that is not canonical; not a key (yet)


def _pack(s: str) -> int | None:
    """The uuid's 128-bit value when ``s`` is exactly its canonical spelling, else None."""
    if len(s) != 36 or s[8] != "-" or s[13] != "-" or s[18] != "-" or s[23] != "-":
        return None
    h = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
    try:
        n = int(h, 16)
    except ValueError:
        return None
    # int() also takes uppercase, "_" and signs: only the exact spelling round-trips
    return n if f"{n:032x}" == h else None


def _unpack(hi: int, lo: int) -> str:
    h = f"{(hi << 64) | lo:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class ParentMap:
    """``setdefault`` / ``get`` / ``in`` of a ``dict[str, str | None]``."""

    def __init__(self):
        self._hi = array("Q")
        self._lo = array("Q")
        self._parent = array("i")  # an entry number, or NONE / ODD / ABSENT
        self._table = array("i", [-1]) * 1024  # entry numbers; -1: an empty slot
        self._bits = 10
        self._odd: dict[str, str | None] = {}  # keys that are not canonical uuids
        self._odd_parent: dict[int, str] = {}  # entry -> its parent, not a canonical uuid
        # the last uuid handled and its entry: a record's parent is mostly the record just
        # before it, and a walk up asks next for the parent it was just given
        self._last: tuple[str | None, int] = (None, -1)

    def _find(self, hi: int, lo: int) -> tuple[int, int]:
        """(entry number or -1, the slot it is in or would go to)."""
        table = self._table
        mask = len(table) - 1
        i = (((hi ^ lo) * _GOLDEN) & _M64) >> (64 - self._bits)
        while True:
            e = table[i]
            if e < 0 or (self._lo[e] == lo and self._hi[e] == hi):
                return e, i
            i = (i + 1) & mask

    def _entry(self, n: int) -> int:
        """The entry of uuid value ``n``, added as ABSENT (only a parent so far) when new."""
        hi, lo = n >> 64, n & _M64
        e, slot = self._find(hi, lo)
        if e >= 0:
            return e
        e = len(self._hi)
        self._hi.append(hi)
        self._lo.append(lo)
        self._parent.append(ABSENT)
        self._table[slot] = e
        if 2 * len(self._hi) > len(self._table):  # keep the table at most half full
            self._grow()
        return e

    def _grow(self) -> None:
        self._bits += 1
        self._table = array("i", [-1]) * (1 << self._bits)
        for e in range(len(self._hi)):
            _, slot = self._find(self._hi[e], self._lo[e])
            self._table[slot] = e

    def setdefault(self, uuid: str, parent: str | None) -> None:
        n = _pack(uuid)
        if n is None:
            self._odd.setdefault(uuid, parent)
            return
        e = self._entry(n)
        last_key, last_entry = self._last
        self._last = (uuid, e)
        if self._parent[e] != ABSENT:
            return  # the first record with this uuid decided its parent
        if parent is None:
            self._parent[e] = NONE
            return
        if parent == last_key:
            self._parent[e] = last_entry
            return
        p = _pack(parent)
        if p is None:
            self._parent[e] = ODD
            self._odd_parent[e] = parent
        else:
            self._parent[e] = self._entry(p)

    def _key_entry(self, uuid: str) -> int | None:
        """The entry of a canonical ``uuid`` that is a key; -1 when it is not; None when
        ``uuid`` is not canonical (the dict beside has it)."""
        last_key, e = self._last
        if uuid != last_key:
            n = _pack(uuid)
            if n is None:
                return None
            e, _ = self._find(n >> 64, n & _M64)
        return e if e >= 0 and self._parent[e] != ABSENT else -1

    def __contains__(self, uuid: str) -> bool:
        e = self._key_entry(uuid)
        return uuid in self._odd if e is None else e >= 0

    def get(self, uuid: str) -> str | None:
        e = self._key_entry(uuid)
        if e is None:
            return self._odd.get(uuid)
        if e < 0:
            return None
        p = self._parent[e]
        if p == ODD:
            return self._odd_parent[e]
        if p < 0:
            return None
        parent = _unpack(self._hi[p], self._lo[p])
        self._last = (parent, p)
        return parent

    def __len__(self) -> int:
        return sum(1 for p in self._parent if p != ABSENT) + len(self._odd)
