"""JSON text to Python values and back, exactly as the standard ``json`` module's ``loads`` and
``dumps`` make them, without importing ``json`` on the hook hot path.

Why: ``import json`` is ~4.5 ms of a ~15 ms hook process. Its Python layer compiles regular
expressions when it is imported, which imports ``re`` and ``enum``; the parsing and the
encoding themselves are done by CPython's C accelerator ``_json``, which ``json`` calls with
its default settings. This module calls ``_json`` with those same settings. Whatever it does
not cover goes to ``json`` itself, imported then: an interpreter without ``_json``, text that
is not JSON (so the error is ``json``'s own ``JSONDecodeError`` with its message), a value
that cannot be encoded, bytes instead of text.
"""
from __future__ import annotations

try:
    import _json
except ImportError:  # another Python implementation: the json module does everything
    _json = None

_WHITESPACE = " \t\n\r"  # what json's decoder skips around a document


def _stdlib():
    import json

    return json


class _DecoderSettings:
    """The attributes ``_json.make_scanner`` reads from a ``json.JSONDecoder()``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__


def _make_scanner():
    try:
        return _json.make_scanner(_DecoderSettings())
    except Exception:  # noqa: BLE001 - a CPython whose accelerator changed: json does the work
        return None


_scan = _make_scanner() if _json is not None else None


def loads(text):
    """``json.loads(text)``."""
    if _scan is None or not isinstance(text, str):
        return _stdlib().loads(text)
    start = 0
    while start < len(text) and text[start] in _WHITESPACE:
        start += 1
    try:
        value, end = _scan(text, start)
    except (StopIteration, ValueError):  # not JSON (a BOM too): json raises its own error
        return _stdlib().loads(text)
    except SystemError:  # CPython 3.11's scanner on a text torn after a comma ('{"a": 1, ')
        return _stdlib().loads(text)  # ends without an error set; json reports it properly
    if end != len(text) and text[end:].strip(_WHITESPACE):
        return _stdlib().loads(text)  # "Extra data"
    return value


def _not_serializable(value):
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value, *, ensure_ascii: bool = True, separators: tuple[str, str] | None = None,
          sort_keys: bool = False) -> str:
    """``json.dumps(value, ensure_ascii=..., separators=..., sort_keys=...)``."""
    if _json is None or getattr(_json, "make_encoder", None) is None:
        return _stdlib().dumps(value, ensure_ascii=ensure_ascii, separators=separators,
                               sort_keys=sort_keys)
    encode_text = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(value, str):
        return encode_text(value)
    item_separator, key_separator = separators if separators is not None else (", ", ": ")
    try:
        encoder = _json.make_encoder({}, _not_serializable, encode_text, None, key_separator,
                                     item_separator, sort_keys, False, True)
        return "".join(encoder(value, 0))
    except (TypeError, ValueError):  # a value json cannot encode (its own error and message),
        # or an accelerator whose signature changed: json does the work
        return _stdlib().dumps(value, ensure_ascii=ensure_ascii, separators=separators,
                               sort_keys=sort_keys)
