"""What a hook and the local relay say to each other over the relay's Unix socket, and where
that socket is: standard library only, and light (the hook hot path imports this).

A message is one frame: 4 bytes of length (big-endian), then JSON text (ASCII: a lone
surrogate travels as its escape and comes back the same). The hook sends a list whose first
item names the operation:

- ``["hello", PROTOCOL]``: the relay checks out a server connection for this socket and
  answers ``{"schema": version}`` (or ``{"error": "unreachable", ...}``);
- ``["b", [statement, ...]]``: statements run in order up to the first error, each
  ``["x", sql, args]`` (answered ``{"d": column names or null, "r": rows, "n": rowcount}``,
  with ``"p": 1`` when every column holds JSON's own values, so no row needs decoding) or
  ``["m", sql, [args, ...]]`` (one run per argument list; ``{"n": rowcount}``); the answer is
  ``{"a": [answer, ...]}``, as many as were run (the last one an error when one failed);
- ``["status"]``: what the relay did since it started (``continuation doctor``).

An error answer (to ``hello``, or a statement's) is ``{"error": kind, "message": ..., "closed": bool}``: kind ``lost`` (the
server went away, or refused as a lost server would: the caller's ``ServerUnreachable``),
``unreachable`` (no server connection at hello), ``db`` (any other server error, with its
``sqlstate`` and class name). ``closed``: the relay dropped the server connection, so the
transaction is gone with it.

Values beyond JSON's are tagged one-key objects: ``{"b": base64}`` bytes, ``{"j": value}`` a
JSON document column, ``{"d": text}`` a decimal (``sum`` of integers), ``{"t": iso}`` a time.
"""
from __future__ import annotations

import os

from continuation.host import jsontext

PROTOCOL = 1
#: the environment variable naming the relay's folder (default: see :func:`relay_dir`)
DIR_ENV = "CONTINUATION_RELAY_DIR"
MAX_FRAME = 1 << 30
#: the longest socket path a sockaddr_un holds, with room to spare
MAX_SOCKET_PATH = 100


class WireError(Exception):
    """The peer broke the protocol or went away (EOF in the middle of a frame)."""


def send(sock, message) -> None:
    data = jsontext.dumps(message, separators=(",", ":")).encode("ascii")
    sock.sendall(len(data).to_bytes(4, "big") + data)


def _read_exactly(sock, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise WireError("the peer closed the connection")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def receive(sock):
    """The next message; :class:`WireError` at EOF."""
    size = int.from_bytes(_read_exactly(sock, 4), "big")
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes")
    return jsontext.loads(_read_exactly(sock, size).decode("ascii"))


_PLAIN = (str, int, float, bool, type(None))


def encode_value(value):
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        import binascii

        return {"b": binascii.b2a_base64(bytes(value), newline=False).decode("ascii")}
    if isinstance(value, dict):
        return {"j": value}
    kind = type(value).__name__
    if kind == "Decimal":
        return {"d": str(value)}
    if kind in ("datetime", "date", "time"):
        return {"t": value.isoformat(), "k": kind}
    raise TypeError(f"the relay cannot carry a {kind} value")


def decode_value(value):
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "b" in value:
        import binascii

        return binascii.a2b_base64(value["b"])
    if "j" in value:
        return value["j"]
    if "d" in value:
        from decimal import Decimal

        return Decimal(value["d"])
    import datetime

    return getattr(datetime, value["k"]).fromisoformat(value["t"])


def decode_row(row: list) -> tuple:
    return tuple(v if isinstance(v, _PLAIN) else decode_value(v) for v in row)


#: the longest folder a relay's socket name fits in (``relay-<20 hex>.sock`` and a separator)
_MAX_DIR = MAX_SOCKET_PATH - len("/relay-.sock") - 20


def relay_dir() -> str:
    """The per-user folder of the relays' sockets: ``CONTINUATION_RELAY_DIR``, else
    ``$XDG_RUNTIME_DIR/continuation``, else ``<tmp>/continuation-relay-<uid>``, the first of
    these two whose socket path fits a socket's name (else under /tmp)."""
    chosen = os.environ.get(DIR_ENV)
    if chosen:
        return chosen
    below = f"continuation-relay-{os.getuid()}"
    candidates = [os.path.join(os.environ.get("TMPDIR") or "/tmp", below),
                  os.path.join("/tmp", below)]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        candidates.insert(0, os.path.join(runtime, "continuation"))
    return next((c for c in candidates if len(os.path.abspath(c)) <= _MAX_DIR), candidates[-1])


def too_long(folder: str) -> bool:
    """Whether a socket in ``folder`` would have a name longer than a socket may have."""
    return len(os.path.abspath(folder)) > _MAX_DIR


def private_dir(create: bool) -> str | None:
    """:func:`relay_dir`, made mode 0700 when ``create``; None when it is missing or not
    private to this user (another user could then reach the socket, or replace it)."""
    folder = relay_dir()
    if create:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return folder


#: the environment that decides where and as whom the same URL connects: libpq's variables,
#: HOME (its ~/.pg_service.conf, ~/.pgpass and ~/.postgresql certificates) and a Kerberos
#: ticket cache; other values of these are another connection, so another relay
_LIBPQ_ENV_PREFIXES = ("PG", "KRB5")
_LIBPQ_ENV_NAMES = ("HOME",)


def relay_key(url: str) -> str:
    """One relay per (user, server connection, protocol): the URL and the libpq environment
    the hook would connect with, hashed (the name shows neither)."""
    from continuation.host.digest import sha256_hex

    libpq = sorted((k, v) for k, v in os.environ.items()
                   if k.startswith(_LIBPQ_ENV_PREFIXES) or k in _LIBPQ_ENV_NAMES)
    text = "\n".join([str(PROTOCOL), url, *(f"{k}={v}" for k, v in libpq)])
    return sha256_hex(text.encode("utf-8", "surrogatepass"))[:20]


def socket_path(folder: str, url: str) -> str:
    return os.path.join(folder, f"relay-{relay_key(url)}.sock")
