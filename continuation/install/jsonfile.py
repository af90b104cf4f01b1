"""Read a JSON config file and write it back in the user's own style.

The installer edits files people maintain by hand (``settings.json``,
``hooks.json``), so a write keeps what can be kept: key order (dicts keep
insertion order), the indentation unit (spaces or a tab), CRLF line endings,
a UTF-8 byte-order mark and the presence of a final newline. Byte-for-byte
restoration is not this module's job: the backup keeps the original bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from continuation.host.atomic import atomic_write as _atomic_write
from continuation.host.atomic import fsync_dir  # noqa: F401  (re-exported for the installer core)
from continuation.install.errors import InstallError

_BOM = b"\xef\xbb\xbf"
_INDENTED_LINE = re.compile(r"\n([ \t]+)\S")


@dataclass(frozen=True)
class JsonStyle:
    indent: int | str | None = 2
    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False


@dataclass(frozen=True)
class JsonDocument:
    """A parsed JSON object file: ``raw`` is ``None`` when the file does not exist."""

    path: Path
    raw: bytes | None
    data: dict[str, Any]
    style: JsonStyle

    @property
    def exists(self) -> bool:
        return self.raw is not None


def detect_style(text: str) -> JsonStyle:
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text.replace("\r\n", "\n")
    match = _INDENTED_LINE.search(body)
    indent: int | str | None
    if match:
        unit = match.group(1)
        indent = "\t" if unit.startswith("\t") else len(unit)
    elif "\n" in body.strip():
        indent = 2
    else:
        # A one-line file stays one line; an empty one gets the common default.
        indent = None if body.strip() else 2
    return JsonStyle(indent=indent, newline=newline, final_newline=body.endswith("\n") or not body.strip())


#: a runtime's settings file larger than this is not one we should rewrite
CONFIG_MAX_BYTES = 16 * 1024 * 1024


def read_config(path: Path) -> bytes:
    """A runtime config file's bytes: a regular file only, bounded (a FIFO there would hang
    ``install`` and ``doctor``; see :mod:`continuation.host.userfiles`)."""
    from continuation.host.userfiles import read_bounded

    return read_bounded(path, CONFIG_MAX_BYTES)


def read_json_object(path: Path) -> JsonDocument:
    """Parse ``path`` as a JSON object; a missing or blank file is an empty object.

    Raises :class:`InstallError` (never writes anything) when the file is not
    UTF-8, not JSON, or not an object at the top level.
    """
    try:
        raw = read_config(path)
    except FileNotFoundError:
        return JsonDocument(path, None, {}, JsonStyle())
    except OSError as exc:
        raise InstallError(f"{path}: cannot read ({exc.strerror or exc}); nothing was written") from exc
    bom = raw.startswith(_BOM)
    try:
        text = raw[len(_BOM) :].decode("utf-8") if bom else raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InstallError(f"{path}: not UTF-8 text (byte {exc.start}); nothing was written") from exc
    style = detect_style(text)
    style = JsonStyle(style.indent, style.newline, style.final_newline, bom)
    if not text.strip():
        return JsonDocument(path, raw, {}, style)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix or move the file, nothing was written"
        ) from exc
    if not isinstance(data, dict):
        raise InstallError(
            f"{path}: expected a JSON object at the top level, found {type(data).__name__}; nothing was written"
        )
    return JsonDocument(path, raw, data, style)


def render(data: dict[str, Any], style: JsonStyle, original: bytes | None = None) -> bytes:
    """``data`` as file bytes in ``style``; given the ``original`` bytes of the file, every value
    that did not change keeps its exact text and each changed container its layout (see
    :mod:`.layout`): an inline ``[ { ... } ]`` stays inline."""
    text = None
    if original is not None:
        source = original[len(_BOM):] if original.startswith(_BOM) else original
        try:
            source_text = source.decode("utf-8").replace("\r\n", "\n")
            if source_text.strip():
                from continuation.install.layout import render_keeping

                text = render_keeping(source_text, data, style.indent)
        except (UnicodeDecodeError, ValueError, IndexError):
            text = None  # not parseable as we read it: lay it out afresh
    if text is None:
        text = json.dumps(data, indent=style.indent, ensure_ascii=False)
        if style.final_newline:
            text += "\n"
    if style.newline != "\n":
        text = text.replace("\n", style.newline)
    encoded = text.encode("utf-8")
    return _BOM + encoded if style.bom else encoded


def atomic_write(path: Path, data: bytes, *, mode_from: Path | None = None) -> None:
    """Write ``data`` to ``path`` through a temp file, fsync and rename
    (:func:`continuation.host.atomic.atomic_write`).

    The file keeps the permission bits of ``mode_from`` (the file it replaces)
    where the OS supports it.
    """
    mode = None
    if mode_from is not None:
        try:
            mode = mode_from.stat().st_mode & 0o7777
        except OSError:
            mode = None
    _atomic_write(path, data, mode=mode, fault_points=None)
