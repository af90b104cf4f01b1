"""Secret-looking text: the formats of common tokens and credentials, found and redacted.

Two lists, by how sure a match is:

- :data:`TOKEN_FORMATS`: tokens a service prints with its own prefix or frame (a GitHub token,
  an AWS access key id, a private key block...). A match is a secret with few false alarms, so
  the workspace's content scan leaves a file holding one out of snapshots
  (``continuation.workspace.secrets``), and :func:`redact` hides it.
- :data:`CREDENTIAL_FORMATS`: secrets known by what stands before them (``password=...``,
  ``Authorization: Bearer ...``, the password of ``https://user:pass@host``). Too loose to decide
  a file's fate; what is shown hides them too (hiding a harmless value costs less than showing
  a password).

What is SHOWN to a person (command output, ``logs/hooks.log``, the timeline page) passes through
:func:`redact` unless the user asks for secrets (``--show-secrets``). What is STORED, and what is
handed to the model (capsules, ``continuation context``, ``continuation source``, hook answers),
keeps the user's text as it was: the model had it already, and a changed command would be
a different command.

A redaction names the kind (``[redacted: GitHub token]``), keeps the text around it (the
``password=`` before a password, the user in a URL), never spans a JSON string's end (redacting
JSON text keeps it valid JSON), and is stable: redacting redacted text changes nothing.

Uses ``re``: not for the hook hot path (a hook imports this only to write an error's log line).
"""
from __future__ import annotations

import re

#: kind -> pattern of a token recognised by its own shape
TOKEN_FORMATS: dict[str, str] = {
    "private key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    "AWS access key id": r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    "GitHub token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
    "GitLab token": r"\bglpat-[A-Za-z0-9_-]{20,}",
    # before OpenAI's, whose pattern it also matches
    "Anthropic key": r"\bsk-ant-[A-Za-z0-9_-]{32,}",
    "OpenAI key": r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}",
    "Slack token": r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
    "Slack webhook": r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]{16,}",
    "Google API key": r"\bAIza[0-9A-Za-z_-]{35}",
    "Stripe key": r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{24,}",
    "npm token": r"\bnpm_[A-Za-z0-9]{36}\b",
    "PyPI token": r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}",
    "Hugging Face token": r"\bhf_[A-Za-z0-9]{34,}",
    "SendGrid key": r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
    "DigitalOcean token": r"\bdo[opr]_v1_[a-f0-9]{64}\b",
    "JSON web token": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
}

#: what may follow a private key's first line: its base64 body (raw, or with line breaks
#: escaped as in JSON text), headers, and its last line. Never a quote: a redaction stays
#: inside the JSON string it starts in.
_KEY_BODY = (r"(?:(?:[A-Za-z0-9+/=:,.\t -]|\r|\n|\\[rn])*?"
             r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
             r"|(?:[A-Za-z0-9+/=:,.\t-]|\r|\n|\\[rn])*)")

#: what ends a credential's value (a value runs to the first of these; a quote ends it so that
#: a redaction stays inside its JSON string)
_VALUE_END = r"""(?=[\s"'\\,;&<>)}\]]|$)"""
#: kind -> (the text that says a secret follows, kept; the secret itself, hidden)
CREDENTIAL_FORMATS: dict[str, tuple[str, str]] = {
    "password in a URL": (r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'\\]+:",
                          r"(?!\*+@)[^\s@/\"'\\\[]+(?=@)"),  # not one masked already
    "authorization header": (r"(?i:\bauthorization\\?[\"']?\s*[:=]\s*\\?[\"']?"
                             r"(?:bearer|basic|token|bot)\s+)",
                             r"[A-Za-z0-9._~+/=-]{8,}" + _VALUE_END),
    "bearer token": (r"(?i:\bbearer\s+)", r"[A-Za-z0-9._~+/-]{16,}=*" + _VALUE_END),
    # a key whose name ends in one of these words, then `=` or `:` and a value that is not a
    # reference ($VAR, %VAR%, {{ var }}), a call or only digits
    "secret value": (r"(?i:\b[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|secret|token"
                     r"|(?:api|access|secret|private|auth|signing|encryption|master)[_-]?key"
                     r"|credentials?)\\?[\"']?\s*[:=]\s*\\?[\"']?)",
                     r"(?![$%{\[(])(?![0-9]+" + _VALUE_END + r")[^\s\"'\\,;&<>(){}\[\]]{8,}"
                     + _VALUE_END),
}

#: kind -> literal text one of which every token of that kind holds: a text holding none of
#: them is not searched (a substring test runs at memory speed, the patterns do not)
TOKEN_ANCHORS: dict[str, tuple[str, ...]] = {
    "private key": ("PRIVATE KEY",),
    "AWS access key id": ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
    "GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "GitLab token": ("glpat-",),
    "Anthropic key": ("sk-ant-",),
    "OpenAI key": ("sk-",),
    "Slack token": ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-"),
    "Slack webhook": ("hooks.slack.com",),
    "Google API key": ("AIza",),
    "Stripe key": ("_live_", "_test_"),
    "npm token": ("npm_",),
    "PyPI token": ("pypi-",),
    "Hugging Face token": ("hf_",),
    "SendGrid key": ("SG.",),
    "DigitalOcean token": ("_v1_",),
    "JSON web token": ("eyJ",),
}
#: kind -> lower-case text one of which every credential of that kind holds (searched in the
#: text lowered)
CREDENTIAL_ANCHORS: dict[str, tuple[str, ...]] = {
    "password in a URL": ("://",),
    "authorization header": ("authorization",),
    "bearer token": ("bearer",),
    "secret value": ("pass", "secret", "token", "key", "credential"),
}


def _any_of(words) -> re.Pattern:
    """One pattern finding any of ``words``, factored by first character (the engine then
    tries a few alternatives at a position instead of every word)."""
    by_first: dict[str, list[str]] = {}
    for word in sorted(set(words), key=lambda w: (-len(w), w)):
        by_first.setdefault(word[0], []).append(re.escape(word[1:]))
    return re.compile("|".join(f"{re.escape(c)}(?:{'|'.join(rest)})" for c, rest in by_first.items()))


_TOKEN_GATE = _any_of(a for group in TOKEN_ANCHORS.values() for a in group)
_TOKEN_NAMES = list(TOKEN_FORMATS)
_CREDENTIAL_NAMES = list(CREDENTIAL_FORMATS)


def _token_kinds(text: str) -> tuple[int, ...]:
    """The token kinds whose anchors ``text`` holds (most texts: none, found in one pass)."""
    if _TOKEN_GATE.search(text) is None:
        return ()
    return tuple(i for i, kind in enumerate(_TOKEN_NAMES)
                 if any(a in text for a in TOKEN_ANCHORS[kind]))


def _credential_kinds(text: str) -> tuple[int, ...]:
    lowered = text.lower()
    return tuple(i for i, kind in enumerate(_CREDENTIAL_NAMES)
                 if any(a in lowered for a in CREDENTIAL_ANCHORS[kind]))


_COMPILED: dict = {}


def _pattern(tokens: tuple[int, ...], credentials: tuple[int, ...], shown: bool) -> re.Pattern:
    """The alternation of the given kinds (tokens first, in their order), compiled once."""
    key = (tokens, credentials, shown)
    found = _COMPILED.get(key)
    if found is None:
        parts = []
        for i in tokens:
            body = TOKEN_FORMATS[_TOKEN_NAMES[i]]
            if shown and _TOKEN_NAMES[i] == "private key":
                body += _KEY_BODY
            parts.append(f"(?P<t{i}>{body})")
        for i in credentials:
            before, secret = CREDENTIAL_FORMATS[_CREDENTIAL_NAMES[i]]
            parts.append(f"(?P<b{i}>{before})(?P<c{i}>{secret})")
        found = _COMPILED[key] = re.compile("|".join(parts))
    return found


def marker(kind: str) -> str:
    """What stands where a secret of ``kind`` was."""
    return f"[redacted: {kind}]"


def find_token(text: str) -> str | None:
    """The kind of the first token of :data:`TOKEN_FORMATS` in ``text``, or None."""
    kinds = _token_kinds(text)
    match = _pattern(kinds, (), False).search(text) if kinds else None
    return None if match is None else _TOKEN_NAMES[int(match.lastgroup[1:])]


def _replace(match: re.Match) -> str:
    group = match.lastgroup
    if group[0] == "t":
        return marker(_TOKEN_NAMES[int(group[1:])])
    i = int(group[1:])  # a credential: its lead-in was matched by the group before
    return match.group(f"b{i}") + marker(find_token(match.group(group)) or _CREDENTIAL_NAMES[i])


def redact(text: str) -> str:
    """``text`` with every token (:data:`TOKEN_FORMATS`) and credential
    (:data:`CREDENTIAL_FORMATS`) replaced by :func:`marker`."""
    if not text:
        return text
    tokens, credentials = _token_kinds(text), _credential_kinds(text)
    if not (tokens or credentials):
        return text
    return _pattern(tokens, credentials, True).sub(_replace, text)


def redact_data(value):
    """``value`` (decoded JSON: dicts, lists, strings, numbers) with every string redacted;
    keys too (a dict keyed by a command)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value
