"""Errors that reach the user as one line: which file, which line, what is wrong."""

from __future__ import annotations

from pathlib import Path


class HybridIRError(Exception):
    """Base class of every error the workflow reports to the user as a single line."""


class InputFormatError(HybridIRError):
    """A raw or canonical input file does not have the format its reader expects."""

    def __init__(self, path: str | Path, line: int | None, problem: str):
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class FetchError(HybridIRError):
    """A raw file could not be obtained or failed its checksum."""


class ConfigError(HybridIRError):
    """The workflow configuration is invalid."""


class CheckFailed(HybridIRError):
    """A reproduced score left its expected band."""
