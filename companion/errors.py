"""Error types shared by the engine and the command line.

Every error a person can cause carries an exit status, so the CLI maps it without guessing:
2 for bad input or configuration, 1 for an operation that was refused or failed.
"""

from __future__ import annotations


class CompanionError(Exception):
    """An error with a message meant for a person and an exit status for scripts."""

    exit_code = 1


class ConfigError(CompanionError):
    """Bad configuration or bad command-line input (exit status 2)."""

    exit_code = 2


class InputError(CompanionError):
    """A bad argument: a path that does not exist, a malformed value (exit status 2)."""

    exit_code = 2
