"""The key that encrypts what continuation stores: where it comes from, never from the store.

A key is 32 random bytes, written as 43 to 44 characters of URL-safe base64 (as
``continuation key init`` prints it). It comes from, first found first:

1. ``$CONTINUATION_KEY`` (the key itself), and ``$CONTINUATION_KEY_NEXT`` during a rotation;
2. a key file: ``$CONTINUATION_KEY_FILE``, else ``$XDG_CONFIG_HOME/continuation/key`` (else
   ``~/.config/continuation/key``): outside the state home, so a copy of the state home is
   not a copy of its key. The file must be the user's own and private (mode 0600 or stricter
   on POSIX); its ``.next`` beside it holds a rotation's new key until the rotation ends;
3. the OS keyring (the optional ``keyring`` package): service ``continuation``, entries
   ``key`` and ``key.next`` (``$CONTINUATION_KEYRING_ENTRY`` names another entry).

Which key a store is encrypted with is the store's to say (its key id, a hash of the key, is
kept in clear in the store): :func:`keys_for` finds the key with that id among the sources, and
says in one line what is wrong when none has it (missing, wrong, unreadable, bad permissions).

No ``re``, no ``pathlib``, no crypto: a hook of an encrypted store calls this on its hot path.
"""
from __future__ import annotations

import os

ENV = "CONTINUATION_KEY"
ENV_NEXT = "CONTINUATION_KEY_NEXT"
FILE_ENV = "CONTINUATION_KEY_FILE"
KEYRING_ENV = "CONTINUATION_KEYRING_ENTRY"
KEYRING_SERVICE = "continuation"
KEY_BYTES = 32


class KeyProblem(Exception):
    """The key cannot be had or is not the store's: one line that says what to do."""


def key_id(key: bytes) -> str:
    """A key's public name: 16 hex digits of a hash of it (not a way back to the key)."""
    import hashlib

    return hashlib.sha256(b"continuation key id\0" + key).hexdigest()[:16]


def new_key() -> bytes:
    return os.urandom(KEY_BYTES)


def key_text(key: bytes) -> str:
    import binascii

    return binascii.b2a_base64(key, newline=False).decode("ascii").replace("+", "-").replace("/", "_")


def parse_key(text: str, where: str) -> bytes:
    """The key written in ``text`` (URL-safe or standard base64 of 32 bytes)."""
    import binascii

    raw = text.strip().replace("-", "+").replace("_", "/")
    raw += "=" * (-len(raw) % 4)
    try:
        key = binascii.a2b_base64(raw.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise KeyProblem(f"{where} does not hold a key (expected {KEY_BYTES} bytes in base64, "
                         "as `continuation key init` writes)")
    return key


def default_key_file() -> str:
    explicit = os.environ.get(FILE_ENV)
    if explicit:
        return os.path.expanduser(explicit)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(os.path.expanduser(config), "continuation", "key")


def read_key_file(path: str) -> bytes | None:
    """The key in ``path``; None when there is no such file; :class:`KeyProblem` when it is
    unreadable, not private or not a key."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KeyProblem(f"cannot read the key file {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o170000 != 0o100000:  # S_ISREG, without importing stat
            raise KeyProblem(f"cannot read the key file {path}: it is not a regular file")
        if os.name == "posix":
            if info.st_mode & 0o077:
                raise KeyProblem(f"the key file {path} can be read by others (mode "
                                 f"{info.st_mode & 0o777:03o}): chmod 600 it")
            if info.st_uid != os.geteuid():
                raise KeyProblem(f"the key file {path} belongs to another user")
        data = os.read(fd, 4096)
    except OSError as exc:
        raise KeyProblem(f"cannot read the key file {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        return parse_key(data.decode("ascii"), f"the key file {path}")
    except UnicodeDecodeError:
        raise KeyProblem(f"the key file {path} does not hold a key") from None


def write_key_file(path: str, key: bytes) -> None:
    """Write ``key`` to ``path`` (0600, its folder 0700 when made), atomically."""
    from continuation.host.atomic import atomic_write
    from continuation.host.paths import ensure_private_dir

    ensure_private_dir(os.path.dirname(path) or ".")
    atomic_write(path, (key_text(key) + "\n").encode("ascii"), mode=0o600)


def keyring_entry(next_: bool = False) -> str:
    base = os.environ.get(KEYRING_ENV) or "key"
    return base + (".next" if next_ else "")


def read_keyring(next_: bool = False) -> bytes | None:
    """The key kept in the OS keyring; None without the ``keyring`` package or an entry."""
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    from keyring.errors import NoKeyringError

    try:
        text = keyring.get_password(KEYRING_SERVICE, keyring_entry(next_))
    except NoKeyringError:
        return None  # no keyring on this machine (no D-Bus session, a container): no key there
    except KeyringError as exc:
        raise KeyProblem(f"the OS keyring cannot be read: {exc}") from None
    except Exception as exc:  # a backend's own failure (no D-Bus session, a locked keychain)
        raise KeyProblem(f"the OS keyring cannot be read: {type(exc).__name__}: {exc}") from None
    return None if text is None else parse_key(text, f"the keyring entry {keyring_entry(next_)}")


def write_keyring(key: bytes | None, next_: bool = False) -> None:
    try:
        import keyring
    except ImportError:
        raise KeyProblem("the OS keyring needs the `keyring` package: pip install "
                         "'continuation-engine[encryption]'") from None
    try:
        if key is None:
            try:
                keyring.delete_password(KEYRING_SERVICE, keyring_entry(next_))
            except keyring.errors.PasswordDeleteError:
                pass
        else:
            keyring.set_password(KEYRING_SERVICE, keyring_entry(next_), key_text(key))
    except Exception as exc:
        raise KeyProblem(f"the OS keyring cannot be written: {type(exc).__name__}: {exc}") from None


class Found:
    """The keys the sources hold: (where, key) in the order found; ``problems`` those that failed."""

    __slots__ = ("keys", "problems")

    def __init__(self):
        self.keys: list[tuple[str, bytes]] = []
        self.problems: list[str] = []

    def by_id(self) -> dict[str, bytes]:
        return {key_id(k): k for _, k in self.keys}


def find_keys(*, keyring: bool = True) -> Found:
    """Every key the sources hold (a rotation's new one included), and what failed."""
    found = Found()
    for name in (ENV, ENV_NEXT):
        text = os.environ.get(name)
        if text:
            try:
                found.keys.append((f"${name}", parse_key(text, f"${name}")))
            except KeyProblem as exc:
                found.problems.append(str(exc))
    path = default_key_file()
    for candidate in (path, path + ".next"):
        try:
            key = read_key_file(candidate)
        except KeyProblem as exc:
            found.problems.append(str(exc))
        else:
            if key is not None:
                found.keys.append((candidate, key))
    if keyring:
        for next_ in (False, True):
            try:
                key = read_keyring(next_)
            except KeyProblem as exc:
                found.problems.append(str(exc))
                break
            if key is not None:
                found.keys.append((f"keyring:{keyring_entry(next_)}", key))
    return found


def keys_for(wanted: str) -> dict[str, bytes]:
    """The keys found (by id), which must include the one with id ``wanted``; else
    :class:`KeyProblem` saying why (the keyring is asked only when the others miss it)."""
    found = find_keys(keyring=False)
    if wanted not in found.by_id():
        more = find_keys(keyring=True)
        found = more
    keys = found.by_id()
    if wanted in keys:
        return keys
    if found.problems:
        raise KeyProblem(found.problems[0])
    if found.keys:
        where = ", ".join(w for w, _ in found.keys)
        raise KeyProblem(f"wrong key: the store is encrypted with key {wanted}, and {where} "
                         f"holds key {key_id(found.keys[0][1])} (see `continuation key status`)")
    raise KeyProblem(f"the store is encrypted (key {wanted}) and no key was found: set "
                     f"${ENV}, or put the key in {default_key_file()} (see `continuation key status`)")
