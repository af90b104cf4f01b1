"""What a config file looked like before we first changed it.

One record per target file under ``<state home>/install/``: the original bytes
(base64) or "absent", the folders we had to create, and the sha256 of the
bytes we last wrote. ``uninstall`` restores the original only while the file
still holds exactly what we wrote; otherwise somebody else edited it since,
and only our entries are taken out.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, ValidationError

from continuation.host.paths import ensure_private_dir
from continuation.install.errors import InstallError
from continuation.install.jsonfile import atomic_write

RECORD_SCHEMA = 1


def sha256_hex(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


class BackupRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    schema_version: int = RECORD_SCHEMA
    runtime: str
    scope: str
    target: str
    original_b64: str | None  # None: the file did not exist
    original_sha256: str | None
    created_dirs: list[str] = []
    installed_sha256: str
    installed_at: str
    # settings we changed so that the runtime runs hooks at all: dotted path -> value before
    # (None: absent); put back on uninstall when they still hold our value
    enabled_settings: dict[str, Any] = {}

    def original_bytes(self) -> bytes | None:
        return None if self.original_b64 is None else base64.b64decode(self.original_b64)

    @classmethod
    def for_original(
        cls, runtime: str, scope: str, target: Path, original: bytes | None, created_dirs: list[Path], installed: bytes
    ) -> "BackupRecord":
        return cls(
            runtime=runtime,
            scope=scope,
            target=str(target),
            original_b64=None if original is None else base64.b64encode(original).decode("ascii"),
            original_sha256=sha256_hex(original),
            created_dirs=[str(d) for d in created_dirs],
            installed_sha256=sha256_hex(installed) or "",
            installed_at=datetime.now(timezone.utc).isoformat(),
        )


class BackupStore:
    """Records for one target file, with a cross-process lock around each change."""

    def __init__(self, state_home: Path, runtime: str, scope: str, target: Path) -> None:
        # Keyed by the file alone: user and project scope can name the same file
        # (a project folder that is the home folder) and must share one record.
        del scope
        key = hashlib.sha256(str(target).encode("utf-8")).hexdigest()[:16]
        self.folder = Path(state_home) / "install"
        self.path = self.folder / f"{runtime}-{key}.json"
        self.lock_path = self.folder / f"{runtime}-{key}.lock"

    def lock(self) -> FileLock:
        ensure_private_dir(self.folder)
        return FileLock(str(self.lock_path), timeout=30, mode=0o600)

    def load(self) -> BackupRecord | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InstallError(f"{self.path}: cannot read the install record ({exc})") from exc
        try:
            record = BackupRecord.model_validate_json(text)
        except ValidationError as exc:
            raise InstallError(
                f"{self.path}: the install record is damaged ({exc.error_count()} problems); "
                "move it away to uninstall by removing our entries only"
            ) from exc
        if record.schema_version > RECORD_SCHEMA:
            raise InstallError(
                f"{self.path}: install record schema {record.schema_version} is newer than this version "
                f"understands ({RECORD_SCHEMA}); upgrade continuation"
            )
        if record.original_b64 is not None and sha256_hex(record.original_bytes()) != record.original_sha256:
            raise InstallError(f"{self.path}: the saved original does not match its sha256; not restoring from it")
        return record

    def save(self, record: BackupRecord) -> None:
        atomic_write(self.path, record.model_dump_json(indent=2).encode("utf-8"))

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
