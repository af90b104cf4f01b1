"""BPE ranks as one buffer: an open-addressing hash table over the tokens, read from the cache
without building a Python object per token.

The vocabulary counter (``capsule.tokens.VocabularyCounter``) asks the ranks two things: is a
piece a token, and the rank of a pair (tiktoken's reference merge). A dict answers both but
takes ~15 ms to load (every one of 100,000 keys hashed); sorted tokens searched by bisection
(the previous cache) ~8 ms in a capsule worker, one bytes object per token from ``marshal``.
Here the cache file *is* the table: slots (CRC-32 of the token, linear probing, at most half
full), token offsets into one blob, ranks; all little-endian unsigned 32-bit. Loading is a
read and three memoryview casts; a lookup is a CRC-32, a slot or two and one comparison
(~0.5 µs against ~1.3 for the bisection).
"""
from __future__ import annotations

import sys
from array import array
from zlib import crc32

MAGIC = b"CRT1"
_WORD = 4


class RankTable:
    """The read-only mapping token -> rank that tiktoken's reference merge needs (``get``,
    ``[]``, ``in``, ``len``); :meth:`as_dict` for tiktoken's own encoder."""

    __slots__ = ("_slots", "_offsets", "_ranks", "_blob", "_mask")

    def __init__(self, slots, offsets, ranks, blob):
        if (not len(slots) or len(slots) & (len(slots) - 1) or len(slots) < len(ranks)
                or len(offsets) != len(ranks) + 1):
            raise ValueError("not a rank table")
        self._slots, self._offsets, self._ranks, self._blob = slots, offsets, ranks, blob
        self._mask = len(slots) - 1

    @classmethod
    def of(cls, ranks: dict[bytes, int]) -> RankTable:
        tokens = list(ranks)
        size = 1
        while size < 2 * len(tokens):  # at most half full: a miss ends within a slot or two
            size *= 2
        mask = size - 1
        slots = array("I", bytes(_WORD * size))
        offsets, blob = array("I", [0]), bytearray()
        for number, token in enumerate(tokens, start=1):  # slot value 0: empty
            blob += token
            offsets.append(len(blob))
            slot = crc32(token) & mask
            while slots[slot]:
                slot = (slot + 1) & mask
            slots[slot] = number
        return cls(slots, offsets, array("I", [ranks[t] for t in tokens]), memoryview(bytes(blob)))

    def get(self, token: bytes, default=None):
        slots, offsets, blob, mask = self._slots, self._offsets, self._blob, self._mask
        slot = crc32(token) & mask
        while True:
            number = slots[slot]
            if not number:
                return default
            if blob[offsets[number - 1]:offsets[number]] == token:
                return self._ranks[number - 1]
            slot = (slot + 1) & mask

    def __getitem__(self, token: bytes) -> int:
        rank = self.get(token)
        if rank is None:
            raise KeyError(token)
        return rank

    def __contains__(self, token: bytes) -> bool:
        return self.get(token) is not None

    def __len__(self) -> int:
        return len(self._ranks)

    def as_dict(self) -> dict[bytes, int]:
        offsets, blob = self._offsets, self._blob
        return {bytes(blob[offsets[i]:offsets[i + 1]]): rank for i, rank in enumerate(self._ranks)}

    def dumps(self) -> bytes:
        """Magic, slot and token numbers, then slots, offsets, ranks and the blob; the numbers
        little-endian whatever this machine's order (a state home may be read by another)."""
        counts = array("I", [len(self._slots), len(self._ranks)])
        numbers = (counts, self._slots, self._offsets, self._ranks)
        return MAGIC + b"".join(_little(part) for part in numbers) + bytes(self._blob)

    @classmethod
    def loads(cls, buffer: bytes) -> RankTable:
        """The table :meth:`dumps` wrote, over ``buffer`` itself where this machine is
        little-endian (no copy); ValueError when it is not one."""
        view = memoryview(buffer)
        head = len(MAGIC) + 2 * _WORD
        if len(view) < head or bytes(view[:len(MAGIC)]) != MAGIC:
            raise ValueError("not a rank table")
        size, count = _words(view[len(MAGIC):head])
        end = head + _WORD * (size + 2 * count + 1)
        if len(view) < end:
            raise ValueError("a torn rank table")
        slots = _words(view[head:head + _WORD * size])
        offsets = _words(view[head + _WORD * size:head + _WORD * (size + count + 1)])
        ranks = _words(view[head + _WORD * (size + count + 1):end])
        if offsets[count] != len(view) - end:
            raise ValueError("a torn rank table")
        return cls(slots, offsets, ranks, view[end:])


def _words(view: memoryview):
    """Little-endian unsigned 32-bit numbers: the buffer itself where that is this machine's
    order, else unpacked."""
    if sys.byteorder == "little" and array("I").itemsize == _WORD:
        return view.cast("I")
    import struct

    return struct.unpack(f"<{len(view) // _WORD}I", view)


def _little(numbers) -> bytes:
    """Unsigned 32-bit numbers as little-endian bytes: an array's or a view's own bytes where
    that is this machine's order (a 2.5 MB table in ~2 ms), else packed one by one."""
    if sys.byteorder == "little" and getattr(numbers, "itemsize", 0) == _WORD:
        return numbers.tobytes()
    import struct

    return struct.pack(f"<{len(numbers)}I", *numbers)
