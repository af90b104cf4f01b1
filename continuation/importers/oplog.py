"""The timeline's ops, kept out of memory: an import's memory must not grow with the file.

An op holds what its event will hold (a tool call's full arguments, a prompt's text, an output
excerpt), so a long transcript's ops add up to a good part of its size. :class:`OpLog` pickles
each op as it is made into a small buffer; past ``SPILL_BYTES`` the buffer goes to an anonymous
temporary file (``tempfile.TemporaryFile``: unlinked at creation, so an interrupted import,
Ctrl-C included, leaves nothing behind; ``TMPDIR`` decides where). A small import never touches
the disk. Reading the log back yields the ops in order, as new objects each time.

Renames: the Claude parser sometimes learns late that an input admitted under a derived id has
a runtime id (``Timeline.rename_input``). Ops already written cannot be edited in place, so the
rename is recorded with the position it happened at and applied while reading back, to the ops
written before it only, in the order the renames were made: the same ops a list edited in
place would hold.
"""
from __future__ import annotations

import io
import pickle
import tempfile
from bisect import bisect_right
from typing import Iterator

#: buffered pickles kept in memory before they go to the temporary file
SPILL_BYTES = 1 << 20
_RENAMED_KINDS = ("admit", "deliver")


class OpLog:
    def __init__(self, spill_bytes: int = SPILL_BYTES):
        self._spill_bytes = spill_bytes
        self._buffer = io.BytesIO()
        self._file = None  # the temporary file, once the buffer outgrew spill_bytes
        self._count = 0
        self._ends = 0
        self._renames: list[tuple[int, str, str]] = []  # (ops written before it, old, new)

    def __len__(self) -> int:
        return self._count

    @property
    def facts(self) -> int:
        """Ops that are facts of the conversation (every op but the closing ``end``)."""
        return self._count - self._ends

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def append(self, op) -> None:
        pickle.dump(op, self._buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self._count += 1
        self._ends += op.kind == "end"
        if self._buffer.tell() >= self._spill_bytes:
            self._flush()

    def rename_input(self, old: str, new: str) -> None:
        """``old`` is called ``new`` in every admit / deliver op written so far."""
        self._renames.append((self._count, old, new))

    def _flush(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="continuation-import-")
        self._file.write(self._buffer.getbuffer())
        self._buffer = io.BytesIO()

    def __iter__(self) -> Iterator:
        if self._file is not None:
            self._flush()
            self._file.flush()
            self._file.seek(0)
            source = self._file
        else:
            source = io.BytesIO(self._buffer.getvalue())
        positions = [r[0] for r in self._renames]
        for index in range(self._count):
            op = pickle.load(source)
            if self._renames and op.kind in _RENAMED_KINDS:
                # the renames made after this op was written, oldest first
                for _, old, new in self._renames[bisect_right(positions, index):]:
                    if op.data.get("input_id") == old:
                        op.data = {**op.data, "input_id": new}
                        if op.kind == "admit":
                            op.data["id_source"] = "runtime"
            yield op
        if self._file is not None:
            self._file.seek(0, io.SEEK_END)  # appending after a read goes on at the end

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._buffer = io.BytesIO()
