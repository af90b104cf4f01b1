"""The guard's configuration: the project's ``.continuation/guard.json``.

Read by the tool and stop hooks of every call, so it stays light: ``os`` and the C JSON codec
(:mod:`continuation.host.jsontext`), no ``pathlib``, no ``dataclasses``, nothing else. A
project without the file pays one failed ``open`` per hook that asks.

The file (written by ``continuation install ... --guard CMD`` or by hand)::

    {"command": "pytest -q",          # required: a shell command line, run in the workspace root
     "when": "turn",                  # turn (at each turn's end) | change (after every call that
                                      #   may have changed the workspace)
     "every": 1,                      # with "change": run after every N such calls
     "timeout": 15,                   # seconds; past it the check counts as failed (timeout)
     "policy": "rewind",              # report | rewind | halt
     "failures_before_rewind": 2,     # rewind after this many failed verdicts in a row
     "fatal_exit_codes": [],          # exit codes that rewind at once (the check calls them fatal)
     "rewinds_per_input": 3,          # automatic rewinds per user input, then halt
     "reports_per_input": 5,          # turn ends the guard sends back to work, then halt
     "output_bytes": 4000}            # the check's output kept (its first and last parts),
                                      #   at most MAX_OUTPUT_BYTES

Unknown keys are refused (a typo must not switch a setting off silently); so is a value of the
wrong type. The default ``timeout`` leaves a turn-end hook its usual 25 s deadline, inside the
runtimes' default hook timeouts (30 s); a longer one needs ``continuation install ... --guard``
(which raises the hooks' own timeouts to ``hook_seconds``), else the runtime may end the hook
before it answers. The turn-end hook's own deadline becomes ``timeout`` + :data:`DEADLINE_MARGIN_S`.
"""
from __future__ import annotations

import os

from continuation.host import jsontext

FOLDER = ".continuation"
NAME = "guard.json"
MAX_FILE_BYTES = 64 * 1024
WHEN = ("turn", "change")
POLICIES = ("report", "rewind", "halt")
#: seconds a hook keeps for itself beyond the check (recording, a checkpoint, a rewind)
DEADLINE_MARGIN_S = 10
#: and what the runtime is asked to wait beyond the check (our deadline, then the answer)
HOOK_MARGIN_S = 20

#: the most of a check's output a run keeps: every guarded hook reads the newest run back, and the
#: summaries show its last few thousand characters only
MAX_OUTPUT_BYTES = 65_536

DEFAULTS = {
    "when": "turn", "every": 1, "timeout": 15, "policy": "rewind", "failures_before_rewind": 2,
    "fatal_exit_codes": [], "rewinds_per_input": 3, "reports_per_input": 5, "output_bytes": 4000,
}


class GuardConfigError(ValueError):
    """The guard file cannot be used (the message names the file and the problem)."""


def path_in(root: str) -> str:
    return os.path.join(root, FOLDER, NAME)


class GuardConfig:
    """A validated guard configuration (see the module docstring for the fields)."""

    __slots__ = ("command", "when", "every", "timeout", "policy", "failures_before_rewind",
                 "fatal_exit_codes", "rewinds_per_input", "reports_per_input", "output_bytes",
                 "origin")

    def __init__(self, command: str, *, origin: str = "", **settings):
        self.origin = origin
        values = dict(DEFAULTS)
        values.update(settings)
        values["command"] = command
        _check(values, origin or "guard settings")
        for name, value in values.items():
            setattr(self, name, value)

    def to_mapping(self) -> dict:
        return {name: getattr(self, name) for name in ("command", *DEFAULTS)}

    def __eq__(self, other):
        return isinstance(other, GuardConfig) and self.to_mapping() == other.to_mapping()

    __hash__ = None

    def __repr__(self):
        return f"GuardConfig({self.command!r}, when={self.when!r}, policy={self.policy!r})"

    @property
    def hook_seconds(self) -> int:
        """What a hook running this check may need: the check's timeout and the margin."""
        return int(self.timeout) + HOOK_MARGIN_S


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(values: dict, where: str) -> None:
    unknown = sorted(set(values) - {"command", *DEFAULTS})
    if unknown:
        raise GuardConfigError(f"{where}: unknown setting {unknown[0]!r} (known: command, "
                               f"{', '.join(DEFAULTS)})")
    command = values["command"]
    if not isinstance(command, str) or not command.strip():
        raise GuardConfigError(f"{where}: 'command' must be a non-empty command line")
    if values["when"] not in WHEN:
        raise GuardConfigError(f"{where}: 'when' must be one of {', '.join(WHEN)}, "
                               f"not {values['when']!r}")
    if values["policy"] not in POLICIES:
        raise GuardConfigError(f"{where}: 'policy' must be one of {', '.join(POLICIES)}, "
                               f"not {values['policy']!r}")
    for name, low in (("every", 1), ("failures_before_rewind", 1), ("rewinds_per_input", 0),
                      ("reports_per_input", 0), ("output_bytes", 200)):
        if not _is_int(values[name]) or values[name] < low:
            raise GuardConfigError(f"{where}: {name!r} must be a whole number of at least {low}")
    if values["output_bytes"] > MAX_OUTPUT_BYTES:
        raise GuardConfigError(f"{where}: 'output_bytes' must be at most {MAX_OUTPUT_BYTES}")
    timeout = values["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
        raise GuardConfigError(f"{where}: 'timeout' must be a number of seconds above 0")
    codes = values["fatal_exit_codes"]
    if not isinstance(codes, list) or not all(_is_int(c) for c in codes):
        raise GuardConfigError(f"{where}: 'fatal_exit_codes' must be a list of whole numbers")


def from_mapping(data, origin: str = "") -> GuardConfig:
    where = origin or "guard settings"
    if not isinstance(data, dict):
        raise GuardConfigError(f"{where}: must hold a JSON object")
    data = dict(data)
    if "command" not in data:
        raise GuardConfigError(f"{where}: 'command' is missing")
    return GuardConfig(data.pop("command"), origin=origin, **data)


def load(root: str | None) -> GuardConfig | None:
    """The guard of the workspace ``root``, or None when it has no guard file. Raises
    :class:`GuardConfigError` for a file that is there but cannot be used."""
    if not root:
        return None
    path = path_in(root)
    try:
        from continuation.host.userfiles import read_bounded

        raw = read_bounded(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as exc:
        raise GuardConfigError(f"{path}: cannot be read ({exc})") from None
    try:
        data = jsontext.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise GuardConfigError(f"{path}: not valid JSON ({exc})") from None
    return from_mapping(data, origin=path)


def write(root: str, config: GuardConfig) -> str:
    """Write ``config`` as the workspace's guard file (atomically); returns its path."""
    import json

    from continuation.host.atomic import atomic_write

    path = path_in(root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = json.dumps(config.to_mapping(), ensure_ascii=False, indent=2) + "\n"
    atomic_write(path, text.encode("utf-8"), mode=0o644)
    return path
