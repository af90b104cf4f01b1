"""continuation.host.digest: the same sha256 as hashlib's, without hashlib's import (OpenSSL)
on CPython."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from continuation.host.digest import sha256_hex


def test_the_digest_is_hashlibs():
    for data in (b"", b"abc", "run:\udc80".encode("utf-8", "surrogatepass"),
                 bytes(range(256)) * 999):
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_it_does_not_import_hashlib():
    r = subprocess.run([sys.executable, "-S", "-c",
                        "import sys; import continuation.host.digest as d; d.sha256_hex(b'x');"
                        " print('hashlib' in sys.modules, '_hashlib' in sys.modules)"],
                       capture_output=True, text=True, timeout=60,
                       env={"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"]
