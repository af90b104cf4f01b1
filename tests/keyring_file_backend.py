"""A keyring backend kept in a JSON file (``$TEST_KEYRING_FILE``), for the encryption tests: the
machine running them has no OS keyring (no D-Bus session). Chosen with
``PYTHON_KEYRING_BACKEND=keyring_file_backend.FileKeyring`` and this folder on PYTHONPATH."""
from __future__ import annotations

import json
import os

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1

    def _load(self) -> dict:
        try:
            with open(os.environ["TEST_KEYRING_FILE"], encoding="utf-8") as fh:
                return json.load(fh)
        except FileNotFoundError:
            return {}

    def _save(self, data: dict) -> None:
        with open(os.environ["TEST_KEYRING_FILE"], "w", encoding="utf-8") as fh:
            json.dump(data, fh)

    def get_password(self, service, username):
        return self._load().get(service, {}).get(username)

    def set_password(self, service, username, password):
        data = self._load()
        data.setdefault(service, {})[username] = password
        self._save(data)

    def delete_password(self, service, username):
        data = self._load()
        if username not in data.get(service, {}):
            raise PasswordDeleteError(username)
        del data[service][username]
        self._save(data)
