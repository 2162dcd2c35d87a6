"""A paper's claim verdicts as people read them: the Markdown page beside the JSON, and
``hybrid-ir claims``, which prints the verdicts of every paper found."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from hybrid_ir.errors import ConfigError, InputFormatError, printable
from hybrid_ir.formats import parse_json, read_document


def _number(value: float | None, signed: bool = False, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


HEADER = (
    "claim", "verdict", "effect [95% CI]", "p (adj.)", "detectable", "paper's effect",
    "Effect Ratio", "ΔRI", "n",
)  # fmt: skip


def verdict_cells(verdict: Mapping) -> list[str]:
    """One row of the claims table."""
    if verdict["effect"] is None:
        effect = "–"
    else:
        effect = f"{verdict['effect']:+.3f} [{verdict['ci_low']:+.3f}, {verdict['ci_high']:+.3f}]"
    p = "–" if verdict["p"] is None else f"{_p(verdict['p'])} ({_p(verdict['p_adjusted'])})"
    return [
        verdict["id"],
        verdict["verdict"],
        effect,
        p,
        _number(verdict["detectable_effect"]),
        _number(verdict["paper_effect"], signed=True),
        _number(verdict["effect_ratio"], digits=2),
        _number(verdict["delta_ri"], signed=True, digits=2),
        str(verdict["topics"] or "–"),
    ]


def render_markdown(document: Mapping) -> str:
    """The claims page: one row per claim, then what each claim says and compares."""
    title = f"# Paper {document['paper']}: claims" + (
        f" ({document['title']})" if document["title"] else ""
    )
    lines = [title, "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for verdict in document["verdicts"]:
        lines.append("| " + " | ".join(verdict_cells(verdict)) + " |")
    correction = "Holm" if document["correction"] == "holm" else "no"
    lines += [
        "",
        "- effect: mean per-topic difference, system minus baseline, with its 95% t interval; "
        f"p: two-tailed paired test, with {correction} correction across this paper's tested "
        "claims in parentheses; detectable: the smallest effect a paired t-test at the claim's "
        "alpha detects with 80% power on these topics (from the differences' standard "
        "deviation); Effect Ratio: this effect over the paper's; ΔRI: this relative "
        "improvement minus the paper's (Breuer et al., SIGIR 2020).",
    ]
    if document.get("reproductions"):
        lines += ["", "## Original runs beside their reproductions", ""]
        lines += [
            "| reproduction | column | original | reproduced | RMSE | Kendall's tau | RBO | n |"
        ]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for item in document["reproductions"]:
            lines.append(
                f"| {item['id']} | {item['column']} | {_number(item['original_mean'])} | "
                f"{_number(item['reproduced_mean'])} | {_number(item['rmse'])} | "
                f"{_number(item['kendall_tau'])} | {_number(item['rbo'])} | {item['topics']} |"
            )
        lines += [""]
        for item in document["reproductions"]:
            lines.append(
                f"- **{item['id']}** ({item['where']}): {item['what']} Original row "
                f"{item['original']}, reproduced row {item['reproduced']} of {item['table']}; "
                f"RMSE of the per-topic {item['column']}, and Kendall's tau (over the union of "
                f"both top {item['depth']}) and RBO (p = {item['persistence']:g}, extrapolated, "
                f"top {item['depth']}) averaged over the topics both runs answer."
            )
        lines += ["", "## The claims", ""]
    for verdict in document["verdicts"]:
        direction = ">" if verdict["direction"] == "greater" else "<"
        lines.append(
            f"- **{verdict['id']}** ({verdict['where']}): {verdict['claim']} Tested as "
            f"{verdict['system']} {direction} {verdict['baseline']} in {verdict['table']}, "
            f"column {verdict['column']}: {verdict['verdict']}, {verdict['reason']}."
            + (f" {verdict['note']}" if verdict.get("note") else "")
        )
    return "\n".join(lines) + "\n"


_TEXT_KEYS = ("id", "verdict")
_NUMBER_KEYS = (
    "effect", "ci_low", "ci_high", "p", "p_adjusted", "detectable_effect", "paper_effect",
    "effect_ratio", "delta_ri",
)  # fmt: skip


def read_verdicts(paths: Iterable[str | Path]) -> list[dict]:
    """The documents :func:`write_verdicts` wrote; one that is not JSON, or lacks what
    :func:`print_claims` shows, is an error naming the file."""
    return [_verdicts_document(Path(path)) for path in paths]


def _verdicts_document(path: Path) -> dict:
    document = parse_json(read_document(path), path)

    def refuse(problem: str) -> InputFormatError:
        return InputFormatError(path, None, f"not a claims verdicts file: {problem}")

    if not isinstance(document, dict):
        raise refuse(f"a JSON {type(document).__name__}, not an object")
    for key in ("paper", "title"):
        if not isinstance(document.get(key), str):
            raise refuse(f"{key!r} missing or not a string")
    if not isinstance(document.get("verdicts"), list):
        raise refuse("'verdicts' missing or not a list")
    for position, verdict in enumerate(document["verdicts"]):
        where = f"verdicts[{position}]"
        if not isinstance(verdict, dict):
            raise refuse(f"{where} is not an object")
        for key in _TEXT_KEYS:
            if not isinstance(verdict.get(key), str):
                raise refuse(f"{where}: {key!r} missing or not a string")
        for key in _NUMBER_KEYS:
            value = verdict.get(key)
            if not isinstance(value, int | float | type(None)) or isinstance(value, bool):
                raise refuse(f"{where}: {key!r} missing or not a number or null")
        if not isinstance(verdict.get("topics"), int) or isinstance(verdict["topics"], bool):
            raise refuse(f"{where}: 'topics' missing or not an integer")
    return document


def print_claims(results: str | Path, output: str = "text") -> str:
    """Every paper's judged claims under ``results/claims``: aligned text, or one JSON list."""
    found = sorted(Path(results, "claims").glob("paper*.json"))
    if not found:
        raise ConfigError(
            f"{Path(results, 'claims')}: no judged claims (run the workflow first: snakemake "
            "--cores N)"
        )
    documents = read_verdicts(found)
    if output == "json":
        return json.dumps(documents, indent=1) + "\n"
    lines = []
    for document in documents:
        rows = [list(HEADER)] + [verdict_cells(v) for v in document["verdicts"]]
        widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
        lines.append(f"Paper {document['paper']}: {document['title']}")
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
        lines.append("")
    # A title or id with control characters must not recolour or rewrite the terminal.
    return "\n".join(printable(line) for line in lines)
