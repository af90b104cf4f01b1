"""Sealing: AES-256-GCM under the state's key (``cryptography``'s AESGCM, the optional
``encryption`` extra), for text kept in the store and files kept under the state home.

Each sealed value names the key that sealed it (its id, :func:`continuation.host.keys.key_id`)
and carries a fresh random 96-bit nonce and GCM's 128-bit tag: a changed byte, a wrong key or
a value of another key is refused, never read as something else.

- text (a store column): ``~1.<key id>.<base64 of nonce + ciphertext>`` (ASCII);
- a file: the line ``continuation-sealed 1 <key id>`` then the nonce and the ciphertext.

``cryptography`` is imported on the first seal or open, never before: a process of a store
without encryption never loads it.
"""
from __future__ import annotations

import os

TEXT_MARK = "~1."
FILE_MARK = b"continuation-sealed 1 "
NONCE_BYTES = 12


class SealError(Exception):
    """A sealed value that cannot be opened (wrong key, damaged, unknown key id): one line."""


def aesgcm_class():
    """``cryptography``'s AESGCM. Taken from the compiled binding that the public
    ``cryptography.hazmat.primitives.ciphers.aead`` re-exports it from: importing the public
    module first runs its package's other modules (the cipher and mode classes, ``typing``,
    ``enum``), most of the import's cost, paid by every hook of an encrypted store. The public
    path where the binding is not there (another version's layout)."""
    try:
        from cryptography.hazmat.bindings._rust import openssl

        return openssl.aead.AESGCM
    except (ImportError, AttributeError):
        pass
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise SealError("encryption needs the `cryptography` package: pip install "
                        "'continuation-engine[encryption]'") from None
    return AESGCM


def _aead(key: bytes):
    return aesgcm_class()(key)


class Sealer:
    """Seals with the key ``write_id`` and opens with any of ``keys`` (id -> key): during a
    rotation both the old key and the new one are known."""

    __slots__ = ("keys", "write_id", "_ciphers")

    def __init__(self, keys: dict[str, bytes], write_id: str):
        if write_id not in keys:
            raise SealError(f"no key {write_id} to seal with")
        self.keys, self.write_id, self._ciphers = dict(keys), write_id, {}

    def _cipher(self, key_id: str):
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            key = self.keys.get(key_id)
            if key is None:
                raise SealError(f"this value was sealed with key {key_id}, which is not known "
                                "here (see `continuation key status`)")
            cipher = self._ciphers[key_id] = _aead(key)
        return cipher

    def seal(self, data: bytes) -> bytes:
        """nonce + ciphertext (with its tag) under the write key."""
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._cipher(self.write_id).encrypt(nonce, data, None)

    def open(self, key_id: str, blob: bytes) -> bytes:
        if len(blob) < NONCE_BYTES + 16:
            raise SealError("a sealed value is cut short")
        try:
            return self._cipher(key_id).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], None)
        except SealError:
            raise
        except Exception:  # cryptography's InvalidTag: a wrong key or a changed byte
            raise SealError(f"a value sealed with key {key_id} does not open: it was changed, "
                            "or the key is not the one that sealed it") from None

    # -- text in a store column ---------------------------------------------------------------
    def seal_text(self, text: str) -> str:
        import binascii

        blob = self.seal(text.encode("utf-8", "surrogatepass"))
        return (f"{TEXT_MARK}{self.write_id}."
                + binascii.b2a_base64(blob, newline=False).decode("ascii"))

    def open_text(self, sealed: str) -> str:
        import binascii

        key_id, _, body = sealed[len(TEXT_MARK):].partition(".")
        try:
            blob = binascii.a2b_base64(body)
        except (binascii.Error, ValueError):
            raise SealError("a sealed value is damaged (not base64)") from None
        return self.open(key_id, blob).decode("utf-8", "surrogatepass")

    # -- a file ---------------------------------------------------------------------------------
    def seal_file(self, data: bytes) -> bytes:
        return FILE_MARK + self.write_id.encode("ascii") + b"\n" + self.seal(data)

    def open_file(self, data: bytes) -> bytes:
        key_id = file_key_id(data)
        if key_id is None:
            return data
        return self.open(key_id, data[data.index(b"\n") + 1:])


def is_sealed_text(value) -> bool:
    return isinstance(value, str) and value.startswith(TEXT_MARK)


def text_key_id(value: str) -> str:
    return value[len(TEXT_MARK):].partition(".")[0]


def file_key_id(data: bytes) -> str | None:
    """The key id a sealed file's first line names, or None for a file in clear."""
    if not data.startswith(FILE_MARK):
        return None
    end = data.find(b"\n", 0, 128)
    if end < 0:
        raise SealError("a sealed file is damaged (no key id line)")
    return data[len(FILE_MARK):end].decode("ascii", "replace")


def read_file(path, sealer: "Sealer | None") -> bytes:
    """A file's bytes, opened when sealed (:class:`SealError` without the key)."""
    with open(path, "rb") as fh:
        data = fh.read()
    if file_key_id(data) is None:
        return data
    if sealer is None:
        raise SealError(f"{os.fspath(path)} is sealed and no key is loaded (see "
                        "`continuation key status`)")
    return sealer.open_file(data)
