"""Reading a stored capsule of any supported schema version as the current model.

Beside the model, not in it: the upgrades of older versions build on the model (and on
``capsule.derive``), so the model cannot import them without a circle.
"""
import json
from typing import Any

from pydantic import ValidationError

from capsule.model import (
    SCHEMA_VERSION,
    SUPPORTED_VERSIONS,
    Capsule,
    CapsuleFormatError,
    CapsuleVersionError,
)
from capsule.textclip import scrub


def _scrub_tree(value: Any) -> Any:
    """JSON may spell lone surrogates (``"\\ud800"``); make every string encodable."""
    if isinstance(value, str):
        return scrub(value)[0]
    if isinstance(value, list):
        return [_scrub_tree(v) for v in value]
    if isinstance(value, dict):
        return {_scrub_tree(k): _scrub_tree(v) for k, v in value.items()}
    return value


def decode_capsule(data: bytes | str | dict[str, Any]) -> Capsule:
    """Read a capsule of any supported version and return it as the current model."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CapsuleFormatError(f"capsule is not UTF-8: {exc}") from None
    else:
        text = data
    if isinstance(text, str):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CapsuleFormatError(f"capsule is not valid JSON: {exc}") from None
    else:
        obj = text
    if not isinstance(obj, dict):
        raise CapsuleFormatError("capsule must be a JSON object")
    obj = _scrub_tree(obj)
    version = obj.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise CapsuleFormatError(f"capsule has no integer schema_version (got {version!r})")
    if version > SCHEMA_VERSION:
        raise CapsuleVersionError(version)
    if version not in SUPPORTED_VERSIONS:
        raise CapsuleFormatError(f"capsule schema_version {version} is not supported")
    try:
        if version == 1:
            from capsule.v1 import upgrade_v1

            obj = upgrade_v1(obj)
        if obj.get("schema_version") == 2:
            from capsule.v2 import upgrade_v2

            obj = upgrade_v2(obj)
        if obj.get("schema_version") == 3:  # schema 4 only added optional fields
            obj = {**obj, "schema_version": 4}
        return Capsule.model_validate(obj)
    except ValidationError as exc:
        raise CapsuleFormatError(
            f"capsule (schema {version}) is malformed: {exc.error_count()} problem(s): "
            + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        ) from None
