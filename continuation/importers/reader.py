"""Read a JSONL transcript that a runtime may still be writing, or that a crash left damaged.

Never fatal: every problem is counted in the report and reading goes on where it can.
- a final line with no newline that does not parse is a *torn* line (the writer died or is
  still writing): reading stops before it, so a later import resumes there;
- a tail of NUL bytes (a pre-allocated or crash-zeroed file end) stops reading at its start;
- a line that is not valid JSON, or valid JSON that is not an object, is *malformed*: counted
  with its line number and byte offset, then skipped;
- invalid UTF-8 is repaired (U+FFFD) and the line is kept, its number listed;
- a line longer than ``MAX_LINE_BYTES`` is skipped as malformed without holding it in memory.

``Line.end`` of the last good line is the resume cursor; ``prefix_sha256`` lets the next import
check the bytes before the cursor are unchanged.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from continuation.host.userfiles import open_regular
from continuation.importers.report import ImportReport

MAX_LINE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


@dataclass
class Line:
    number: int  # 1-based line number
    offset: int  # byte offset of the line's start
    end: int  # byte offset just after the line (and its newline)
    record: dict


class TranscriptReader:
    """Iterate the JSON objects of one transcript file, recording every problem in ``report``."""

    def __init__(self, path: Path, report: ImportReport, *, hash_upto: int | None = None):
        self.path = Path(path)
        self.report = report
        self.hash_upto = hash_upto
        self.prefix_digest: str | None = None  # sha256 of bytes [0, hash_upto)
        self.cursor = 0  # end of the last line that is complete (good or malformed)
        self.cursor_digest = hashlib.sha256(b"").hexdigest()
        self._hasher = hashlib.sha256()

    def _advance(self, raw: bytes, end: int) -> None:
        self._hasher.update(raw)
        if self.hash_upto is not None and end == self.hash_upto:
            self.prefix_digest = self._hasher.hexdigest()

    def __iter__(self) -> Iterator[Line]:
        report = self.report
        if self.hash_upto == 0:
            self.prefix_digest = self._hasher.hexdigest()
        with open_regular(self.path) as fh:  # a FIFO or a device never ends
            offset = 0
            number = 0
            nul_start: int | None = None  # start of a run of NUL-only lines
            while True:
                raw, size = _read_line(fh)
                if not size:
                    break
                oversized = size != len(raw)
                start = offset
                number += 1
                end = offset + size
                complete = raw.endswith(b"\n")
                report.lines += 1
                report.bytes_read = end
                body = raw.strip(b"\r\n")
                if oversized:
                    report.malformed.append({"line": number, "offset": offset,
                                             "reason": f"line longer than {MAX_LINE_BYTES} bytes"})
                    self._advance(b"\x00oversized %d\n" % size, end)
                    self._commit(end)
                    offset = end
                    continue
                stripped = body.strip(b"\x00")
                if not stripped.strip():
                    if b"\x00" in body:
                        nul_start = offset if nul_start is None else nul_start
                    self._advance(raw, end)
                    if nul_start is None:
                        self._commit(end)
                    offset = end
                    continue
                if nul_start is not None:
                    # NUL bytes followed by data: a hole, not a tail
                    report.malformed.append({"line": number, "offset": nul_start,
                                             "reason": "NUL-filled region inside the file"})
                    nul_start = None
                if stripped != body:
                    report.nul_stripped_lines.append(number)
                try:
                    text = stripped.decode("utf-8")
                except UnicodeDecodeError:
                    text = stripped.decode("utf-8", "replace")
                    report.invalid_utf8_lines.append(number)
                try:
                    record = json.loads(text)
                except ValueError as exc:
                    if not complete:
                        report.stopped_at = offset
                        report.stop_reason = "torn final line (no newline, not valid JSON)"
                        report.torn_line = number
                        return
                    report.malformed.append({"line": number, "offset": offset,
                                             "reason": f"invalid JSON: {exc}"})
                    self._advance(raw, end)
                    self._commit(end)
                    offset = end
                    continue
                self._advance(raw, end)
                self._commit(end)
                offset = end
                if not isinstance(record, dict):
                    report.malformed.append({"line": number, "offset": start,
                                             "reason": f"not a JSON object ({type(record).__name__})"})
                    continue
                report.records_read += 1
                yield Line(number, start, end, record)
            if nul_start is not None:
                report.stopped_at = nul_start
                report.stop_reason = "NUL-filled tail"

    def _commit(self, end: int) -> None:
        self.cursor = end
        self.cursor_digest = self._hasher.hexdigest()


def _read_line(fh) -> tuple[bytes, int]:
    """One line and its size in bytes. An oversized line is consumed in chunks and not kept:
    its returned bytes are empty while its size is right (offsets stay exact)."""
    raw = fh.readline(MAX_LINE_BYTES + 1)
    if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
        return raw, len(raw)
    size = len(raw)
    while True:
        chunk = fh.readline(_CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"", size
