"""continuation.host.jsontext gives exactly what the standard json module's loads/dumps give,
errors included, without importing json (nor re) on the way."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuation.host import jsontext

ROOT = Path(__file__).resolve().parents[1]

SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-2**200, max_value=2**200)
           | st.floats(allow_nan=True, allow_infinity=True)
           # any code point, lone surrogates included (runtimes send them)
           | st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=40))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=30)
OPTIONS = [dict(), dict(ensure_ascii=False), dict(separators=(",", ":")),
           dict(ensure_ascii=True, separators=(",", ":"), sort_keys=True),
           dict(ensure_ascii=False, sort_keys=True)]


def outcome(fn, *args, **kwargs):
    """The value, or the exception's type and message."""
    try:
        return ("value", fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - compared, not swallowed
        return ("error", type(exc), str(exc))


def canonical(result):
    """A comparable form of a loads() outcome (NaN != NaN; 1 and 1.0 and True must differ)."""
    if result[0] == "value":
        return ("value", repr(result[1]))
    return result


@settings(max_examples=400, deadline=None)
@given(VALUES, st.sampled_from(OPTIONS))
def test_dumps_matches_json_dumps(value, options):
    assert outcome(jsontext.dumps, value, **options) == outcome(json.dumps, value, **options)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_loads_reads_back_what_json_reads(value):
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False),
                 " \n\t" + json.dumps(value, indent=1) + "\r\n "):
        assert canonical(outcome(jsontext.loads, text)) == canonical(outcome(json.loads, text))


@settings(max_examples=600, deadline=None)
@given(st.text(st.sampled_from('{}[]",:0123456789.eE+-tfnrulasNIy \t\n\r\\/bu\ufeff\ud800é'),
               max_size=30))
def test_loads_of_any_text_fails_or_succeeds_as_json_does(text):
    """Malformed text raises json's own error (type and message, position included)."""
    assert canonical(outcome(jsontext.loads, text)) == canonical(outcome(json.loads, text))


@pytest.mark.parametrize("text", ["", "   ", "{", "[1,]", "1 2", "\ufeff{}", "nan", '{"a" 1}',
                                  '"\\x"', '"\x01"', "[" * 100_000, "9" * 5000, "{} x",
                                  '{"a": NaN, "b": -Infinity}', '"\\ud800\\udc00"', "[1e400]"])
def test_edge_texts_behave_as_in_json(text):
    assert canonical(outcome(jsontext.loads, text)) == canonical(outcome(json.loads, text))


def test_non_text_input_and_unencodable_values_get_json_errors():
    assert canonical(outcome(jsontext.loads, b'{"a": 1}')) == canonical(outcome(json.loads, b'{"a": 1}'))
    assert outcome(jsontext.loads, 5) == outcome(json.loads, 5)
    loop: list = []
    loop.append(loop)
    for value in (object(), {"a": {1, 2}}, loop, {(1, 2): 3}, float("nan")):
        assert outcome(jsontext.dumps, value) == outcome(json.dumps, value)
    # a failed encoding leaves nothing behind: the next one is unaffected
    assert jsontext.dumps({"a": [1]}) == json.dumps({"a": [1]})


def test_importing_and_using_it_loads_neither_json_nor_re():
    script = ("import sys; from continuation.host import jsontext; "
              "jsontext.dumps(jsontext.loads('{\"a\": [1, 2.5, \"\\\\u00e9\"]}'), ensure_ascii=False); "
              "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True,
                       timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_without_the_accelerator_json_does_the_work(monkeypatch):
    """Another interpreter (no ``_json``) or an accelerator whose signature changed: the same
    results, from json itself."""
    import types

    value = {"a": [1, 2.5, "\u00e9\ud800"], "b": None}
    text = json.dumps(value)

    def changed(*args):
        raise TypeError("make_encoder() takes different arguments now")

    monkeypatch.setattr(jsontext, "_scan", None)
    monkeypatch.setattr(jsontext, "_json", types.SimpleNamespace(
        make_encoder=changed, encode_basestring_ascii=jsontext._json.encode_basestring_ascii,
        encode_basestring=jsontext._json.encode_basestring))
    assert jsontext.loads(text) == json.loads(text)
    for options in OPTIONS:
        assert jsontext.dumps(value, **options) == json.dumps(value, **options)
    monkeypatch.setattr(jsontext, "_json", None)
    assert jsontext.dumps(value, ensure_ascii=False) == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("text", ['{"a": 1, ', '[1, ', '{"a": [1, {"b": 2}, '])
def test_a_torn_text_gets_jsons_error_before_json_is_imported(text):
    """In a process that has not imported ``json`` (a hook), CPython 3.11's scanner ends on a
    text torn after a comma without setting an error (a SystemError): the text goes to json,
    which names the fault, as for any malformed text."""
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(jsontext.__file__).resolve().parents[1])
    code = ("import sys\nfrom continuation.host import jsontext\n"
            f"try:\n    jsontext.loads({text!r})\nexcept ValueError as exc:\n"
            "    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": root}, check=True).stdout.strip()
    assert out == f"JSONDecodeError {outcome(json.loads, text)[2]}", out
