"""The one error the installer raises: a message meant for the user, nothing written."""

from __future__ import annotations


class InstallError(Exception):
    """A config file cannot be changed safely; the message says which and why."""
