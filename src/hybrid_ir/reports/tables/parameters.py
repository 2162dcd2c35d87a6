"""Tables of the parameters the workflow chose, beside a paper's: paper 002's Table 2 (BM25's
share eta in the ensemble, per language), with the k1 and b its BM25 was tuned to per language.

A specification (``parameter_tables.<name>`` in the configuration) names a per-language sweep
(its report's ``by_language`` choices), the rows (label -> language), optionally a tuned
retriever's facts (per-language ``k1``, ``b``) and the paper's values (``published_from``: a
YAML file whose ``published`` maps a language to the paper's value).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir.data.formats import atomic_output, load_yaml
from hybrid_ir.errors import ConfigError


@dataclass(frozen=True)
class ParameterRow:
    label: str
    language: str
    chosen: float
    selection_score: float
    published: float | None
    k1: float | None = None
    b: float | None = None


def load_published(path: str | Path) -> dict[str, float]:
    """A published-values file's ``published`` mapping (language -> the paper's value)."""
    with open(path, encoding="utf-8") as handle:
        document = load_yaml(handle)
    published = document.get("published") if isinstance(document, dict) else None
    if not isinstance(published, dict) or not all(
        isinstance(value, (int, float)) for value in published.values()
    ):
        raise ConfigError(f"{path}: 'published' must map each language to a number")
    return {str(key): float(value) for key, value in published.items()}


def parameter_rows(
    name: str,
    languages: Mapping[str, str],
    report: Mapping,
    facts: Mapping | None = None,
    published: Mapping[str, float] | None = None,
) -> list[ParameterRow]:
    """One row per ``label -> language``: the sweep's choice and its selection score, the
    paper's value, and the tuned retriever's k1 and b when ``facts`` are given."""
    choices = report.get("by_language")
    if choices is None:
        raise ConfigError(f"parameter_tables.{name}: its sweep does not choose per language")
    tuned = (facts or {}).get("languages", {})
    rows = []
    for label, language in languages.items():
        if language not in choices:
            raise ConfigError(
                f"parameter_tables.{name}: row {label!r}: the sweep chose no value for language "
                f"{language!r} (it has {', '.join(choices)})"
            )
        choice = choices[language]
        index = list(report["values"]).index(choice["best"])
        rows.append(
            ParameterRow(
                label,
                language,
                choice["best"],
                choice["selection_scores"][index],
                (published or {}).get(language),
                tuned.get(language, {}).get("k1"),
                tuned.get(language, {}).get("b"),
            )
        )
    return rows


def preprocessing_notes(facts: Mapping | None) -> list[str]:
    """The text analysis each language got, as the tuned run's facts record it, fallbacks
    named (:mod:`hybrid_ir.retrieval.multilingual`)."""
    languages = (facts or {}).get("languages", {})
    if not languages:
        return []
    steps = "; ".join(
        f"{language}: {fact['preprocessing']}" for language, fact in languages.items()
    )
    fallbacks = [language for language, fact in languages.items() if fact.get("fallback")]
    where = (
        f" Fallbacks from the paper's preprocessing: {', '.join(fallbacks)}." if fallbacks else ""
    )
    return [f"Preprocessing per language (both models analyse alike): {steps}.{where}"]


def _text(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _columns(report: Mapping, with_tuning: bool) -> list[str]:
    parameter = report["parameter"]
    columns = ["Language", f"{parameter} (ours)", f"{parameter} (paper)", report["select"]]
    return columns + (["BM25 k1", "BM25 b"] if with_tuning else [])


def _cells(row: ParameterRow, with_tuning: bool) -> list[str]:
    cells = [
        row.label,
        _text(row.chosen),
        _text(row.published),
        _text(row.selection_score, 4),
    ]
    return cells + ([_text(row.k1), _text(row.b)] if with_tuning else [])


def render_markdown(
    title: str,
    report: Mapping,
    rows: Sequence[ParameterRow],
    notes: Sequence[str],
    footer: str = "",
) -> str:
    with_tuning = any(row.k1 is not None for row in rows)
    columns = _columns(report, with_tuning)
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(columns) - 1)) + "|")
    lines += ["| " + " | ".join(_cells(row, with_tuning)) + " |" for row in rows]
    lines += ["", *[f"- {note}" for note in notes]]
    text = "\n".join(lines).rstrip() + "\n"
    return text + (f"\n_{footer}_\n" if footer else "")


def write_csv(rows: Sequence[ParameterRow], parameter: str, path: str | Path) -> None:
    with atomic_output(path) as out:
        writer = csv.writer(out, lineterminator="\n")
        header = ["label", "language", "parameter", "value", "published", "selection_score"]
        writer.writerow([*header, "k1", "b"])
        for row in rows:
            writer.writerow(
                [
                    row.label,
                    row.language,
                    parameter,
                    repr(row.chosen),
                    "" if row.published is None else repr(row.published),
                    repr(row.selection_score),
                    "" if row.k1 is None else repr(row.k1),
                    "" if row.b is None else repr(row.b),
                ]
            )
