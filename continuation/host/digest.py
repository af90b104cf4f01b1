"""sha256 of bytes, hex, without importing ``hashlib`` where it can: ``hashlib`` loads
OpenSSL's library on import, a visible share of a short process (a hook on the team store
hashes its facts' stamps and the relay's name). CPython's own implementation gives the same
digest: ``_sha2`` (3.12 on), ``_sha256`` before; ``hashlib`` where neither exists."""
from __future__ import annotations

try:
    from _sha2 import sha256 as _sha256
except ImportError:
    try:
        from _sha256 import sha256 as _sha256
    except ImportError:  # another Python implementation
        from hashlib import sha256 as _sha256


def sha256_hex(data: bytes) -> str:
    return _sha256(data).hexdigest()
