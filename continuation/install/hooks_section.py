"""Merge our command hooks into a ``"hooks"`` section, and take them out again.

Codex ``hooks.json`` and Claude Code ``settings.json`` share one shape::

    {"hooks": {"<Event>": [{"matcher": "...", "hooks": [{"type": "command", "command": "..."}]}]}}

Our handlers are recognised by their command (see ``is_ours``), never by
position. Rules that keep other people's hooks intact:

* our group goes at the END of an event's list (Codex keys trust by position:
  ``<file>:<event>:<group>:<handler>``, so appending never shifts the user's
  already-trusted hooks);
* a group of ours that is already there and identical is left where it is
  (installing twice changes nothing);
* a handler of ours inside a user's group (hand-edited) is taken out of that
  group and the user's other handlers stay;
* removal drops only containers that became empty because we removed
  something from them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from continuation.install.errors import InstallError

IsOurs = Callable[[str], bool]


def _hooks_mapping(data: Mapping[str, Any], where: str) -> Mapping[str, Any] | None:
    hooks = data.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise InstallError(f"{where}: \"hooks\" must be a JSON object, found {type(hooks).__name__}; nothing was written")
    return hooks


def _check_groups(event: str, groups: Any, where: str) -> list[Any]:
    if not isinstance(groups, list):
        raise InstallError(
            f"{where}: hooks.{event} must be a list of matcher groups, found {type(groups).__name__}; nothing was written"
        )
    return groups


def _handler_is_ours(handler: Any, is_ours: IsOurs) -> bool:
    return isinstance(handler, dict) and isinstance(handler.get("command"), str) and is_ours(handler["command"])


def _group_handlers(group: Any) -> list[Any]:
    if isinstance(group, dict) and isinstance(group.get("hooks"), list):
        return group["hooks"]
    return []


def events_with_ours(data: Mapping[str, Any], is_ours: IsOurs, where: str = "config",
                     skip: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """Event name -> the commands of our handlers found under it. ``skip``: keys of the hooks
    object that are settings, not events (Gemini CLI's ``enabled``, ``disabled``...)."""
    found: dict[str, list[str]] = {}
    hooks = _hooks_mapping(data, where)
    if not hooks:
        return found
    for event, groups in hooks.items():
        if event in skip:
            continue
        for group in _check_groups(event, groups, where):
            for handler in _group_handlers(group):
                if _handler_is_ours(handler, is_ours):
                    found.setdefault(event, []).append(handler["command"])
    return found


def remove_ours(data: dict[str, Any], is_ours: IsOurs, where: str = "config",
                skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A copy of ``data`` without our handlers (and containers emptied by that)."""
    result = copy.deepcopy(data)
    hooks = _hooks_mapping(result, where)
    if not hooks:
        return result
    for event in list(hooks):
        groups = hooks[event]
        if event in skip or not isinstance(groups, list):
            continue
        kept_groups = []
        removed_any = False
        for group in groups:
            handlers = _group_handlers(group)
            kept = [h for h in handlers if not _handler_is_ours(h, is_ours)]
            if len(kept) == len(handlers):
                kept_groups.append(group)
                continue
            removed_any = True
            if kept:
                group["hooks"] = kept
                kept_groups.append(group)
        if removed_any:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if isinstance(result.get("hooks"), dict) and not result["hooks"] and events_with_ours(data, is_ours, where, skip):
        del result["hooks"]
    return result


def merge_ours(
    data: dict[str, Any],
    desired: Mapping[str, dict[str, Any]],
    is_ours: IsOurs,
    where: str = "config",
    skip: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A copy of ``data`` whose hooks hold exactly ``desired`` (event -> our group) as ours.

    Everything that is not ours keeps its place and content.
    """
    result = copy.deepcopy(data)
    hooks = _hooks_mapping(result, where)
    if hooks is None:
        result["hooks"] = {}
        hooks = result["hooks"]
    for event, groups in hooks.items():
        if event not in skip:
            _check_groups(event, groups, where)

    for event in list(hooks):
        if event in skip:
            continue
        groups = hooks[event]
        want = desired.get(event)
        kept_groups: list[Any] = []
        placed = False
        for group in groups:
            handlers = _group_handlers(group)
            ours = [h for h in handlers if _handler_is_ours(h, is_ours)]
            if not ours:
                kept_groups.append(group)
                continue
            if want is not None and not placed and group == want:
                kept_groups.append(group)  # already installed exactly like this: leave it in place
                placed = True
                continue
            others = [h for h in handlers if not _handler_is_ours(h, is_ours)]
            if others:
                group["hooks"] = others
                kept_groups.append(group)
        if want is not None and not placed:
            kept_groups.append(copy.deepcopy(want))
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]

    for event, want in desired.items():
        if event not in hooks:
            hooks[event] = [copy.deepcopy(want)]
    return result
