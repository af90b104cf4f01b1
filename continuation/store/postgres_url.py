"""Server store URLs in messages: never with their password."""
from __future__ import annotations

import re


def redact(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)
