"""How recorded text reaches the page: secrets hidden, and long text clipped with its full
length said (the page never holds more than it can show).

:func:`shown` is the one place the page's text passes through, so hiding secrets is decided
here for every field (inputs, call arguments and outputs, claims, boundaries, capsules): what
is shown to a person is redacted (``host.secret_text.redact``) unless ``--show-secrets``; what
is stored, and what the model was given, stays as it was.
"""
from __future__ import annotations

_settings = {"show_secrets": False}


def configure(*, show_secrets: bool = False) -> None:
    """Set once per command from its arguments (``--show-secrets``)."""
    _settings["show_secrets"] = bool(show_secrets)


def hide_secrets(text: str) -> str:
    """Token-like strings and credentials replaced as the command line replaces them
    (``[redacted: GitHub token]``)."""
    if _settings["show_secrets"]:
        return text
    from continuation.host.secret_text import redact

    return redact(text)


def shown(text, limit: int) -> dict:
    """``{"text": at most limit characters, "length": the full length}``: the page says
    "… (N more characters)" where it clipped."""
    text = "" if text is None else str(text)
    # a lone surrogate (a runtime's broken UTF-16) cannot be encoded into the page
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    text = hide_secrets(text)  # before the clip: a token is never cut in half and half shown
    return {"text": text[:limit], "length": len(text)}
