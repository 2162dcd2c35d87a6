"""Errors that reach the user as one line: which file, which line, what is wrong."""

from __future__ import annotations

from pathlib import Path

QUOTE_LIMIT = 200


def cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were, so that a hostile
    or binary input cannot flood a log or a terminal."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\x1b``, ``\\n``), so that
    an id or a file name in a message cannot recolour the terminal, move its cursor or fake a
    line of output."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` of an offending value, :func:`cut` to ``limit`` characters."""
    return cut(repr(value), limit)


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


class EvaluationError(HybridIRError):
    """A run and its qrels cannot give a meaningful score (no judgments, no topic in common)."""


class ParameterError(HybridIRError, ValueError):
    """A parameter a computation cannot use: more folds than topics, a depth below 1, a value
    listed twice."""


class FetchError(HybridIRError):
    """A raw file could not be obtained or failed its checksum."""


class ConfigError(HybridIRError):
    """The workflow configuration is invalid."""


class CheckFailed(HybridIRError):
    """A reproduced score left its expected band."""


class UnknownName(HybridIRError):
    """An argument that is neither a file nor a name of what the workflow produced (nor an
    ir_datasets id): the message lists the nearest names the results folder holds."""
