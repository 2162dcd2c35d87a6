"""A paper's claim verdicts as people read them: the Markdown page beside the JSON, and
``hybrid-ir claims``, which prints the verdicts of every paper found."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir.data.formats import parse_json, read_document
from hybrid_ir.errors import ConfigError, InputFormatError, printable


def _number(value: float | None, signed: bool = False, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


VERDICT_ORDER = ("supported", "contradicted", "inconclusive", "untestable", "not tested here")
SHORT_LABELS = {
    "the paper's setup": "paper's setup",
    "a scaled-down stand-in": "stand-in",
    "a different collection": "other collection",
}

HEADER = (
    "claim", "kind", "verdict", "setup", "effect [95% CI]", "p (adj.)", "detectable",
    "paper's effect", "Effect Ratio", "ΔRI", "n",
)  # fmt: skip

DEFINITIONS = (
    "**Verdicts.** *supported* / *contradicted*: the claim's test, Holm-corrected across the "
    "paper's tested claims, rejects at the claim's alpha in the claim's favour / against it, "
    "worded by the claim's kind: superiority (the paper's two-tailed paired test), "
    'non-inferiority ("non-inferior within M" / "inferior by more than M": one-sided '
    't-test against the margin M), equivalence ("equivalent within ±M" / "differs by more '
    'than M": two one-sided tests) and non-superiority, a "does not help" claim ("no gain '
    'above M" / "gains more than M"). *inconclusive*: no test rejects; the detectable effect '
    "says how large an effect these topics would have shown with 80 % power, and an "
    "inconclusive verdict is no evidence against the paper. *untestable*: the two rows' "
    "per-topic differences do not vary (identical scores, or one constant shift), so no test or "
    "interval is defined. *not tested here*: this configuration does not build the claim's "
    "table; the command in its line does."
)
SETUPS = (
    "**Setup.** Every verdict carries its label: *the paper's setup* (the paper's collection "
    "and models), *a scaled-down stand-in* (a sample of the paper's collection, or smaller or "
    "other models, trained shorter: it bears on this stand-in, not on the paper's setup), or *a "
    "different collection* (the method on another collection). What each row ran here is "
    "generated from the configuration; the share of the relevant documents the searched corpus "
    "holds is counted from its files."
)
READINGS = (
    "**Effect Ratio and ΔRI** (Breuer et al., SIGIR 2020): the Effect Ratio is this effect over "
    "the paper's, and reads 1 when the paper's improvement is reproduced in full, 0 when none of "
    "it is and below 0 when it is reversed; ΔRI is this relative improvement minus the paper's, "
    "and reads 0 when the relative improvement is the same. This page reads an Effect Ratio "
    "within [0.8, 1.25] as about the paper's size and a ΔRI within ±0.05 as the same relative "
    "improvement (a reading aid, not a test)."
)


def finding(verdict: Mapping) -> str:
    return verdict["finding"]


def label(verdict: Mapping) -> str | None:
    return verdict["comparability"]


def verdict_cells(verdict: Mapping) -> list[str]:
    """One row of the claims table."""
    if verdict["effect"] is None:
        effect = "–"
    elif verdict["ci_low"] is None:
        effect = f"{verdict['effect']:+.3f} (no variation)"
    else:
        effect = f"{verdict['effect']:+.3f} [{verdict['ci_low']:+.3f}, {verdict['ci_high']:+.3f}]"
    p = "–" if verdict["p"] is None else f"{_p(verdict['p'])} ({_p(verdict['p_adjusted'])})"
    kind = verdict["kind"]
    if verdict["margin"] is not None:
        kind += f" (M {verdict['margin']:g})"
    return [
        verdict["id"],
        kind,
        finding(verdict),
        SHORT_LABELS.get(label(verdict) or "", "–")
        if verdict["verdict"] != "not tested here"
        else "not built",
        effect,
        p,
        _number(verdict["detectable_effect"]),
        _number(verdict["paper_effect"], signed=True),
        _number(verdict["effect_ratio"], digits=2),
        _number(verdict["delta_ri"], signed=True, digits=2),
        str(verdict["topics"] or "–"),
    ]


def effect_ratio_reading(value: float | None) -> str:
    if value is None:
        return "no paper effect to compare"
    if value <= 0:
        return "the paper's effect is absent or reversed"
    if value < 0.8:
        return "smaller than the paper's"
    if value <= 1.25:
        return "about the paper's size"
    return "larger than the paper's"


def delta_ri_reading(value: float | None) -> str:
    if value is None:
        return "no paper values to compare"
    if abs(value) <= 0.05:
        return "the same relative improvement"
    return f"a relative improvement {'above' if value > 0 else 'below'} the paper's"


def _priority(verdict: Mapping) -> int | None:
    """How soon a reader should see a verdict: contradictions first (on the paper's setup
    before stand-ins), then effects the paper saw that these topics could have shown and did
    not, then supported effects far from the paper's size; None: not among them."""
    paper_setup = label(verdict) == "the paper's setup"
    if verdict["verdict"] == "contradicted":
        return 0 if paper_setup else 1
    detectable, paper = verdict["detectable_effect"], verdict["paper_effect"]
    if (
        verdict["verdict"] == "inconclusive"
        and detectable is not None
        and paper is not None
        and abs(paper) >= detectable
    ):
        return 2
    ratio = verdict["effect_ratio"]
    if verdict["verdict"] == "supported" and ratio is not None and not 0.5 <= ratio <= 2:
        return 3
    return None


_WHY_FIRST = (
    "contradicted on the paper's setup",
    "the paper's direction reversed here",
    "the paper's effect was within reach of these topics and did not show",
    "supported, at a size far from the paper's",
)


@dataclass(frozen=True)
class Summary:
    """A paper's verdicts counted by label (a row) and verdict, what they say as a whole, the
    commands that test the claims not tested here, and the claims to read first."""

    claims: int
    tested: int
    counts: dict[str, dict[str, int]]
    no_paper_setup: bool
    commands: list[str]
    first: list[tuple[str, str]]
    """(claim id, its line after the id)."""


NO_PAPER_SETUP = (
    "No claim is tested on the paper's setup here: every verdict bears on this "
    "configuration's stand-ins or collections, not on the paper's own findings."
)


def summarize(document: Mapping, first: int = 5) -> Summary:
    verdicts = document["verdicts"]
    counts: dict[str, dict[str, int]] = {}
    for verdict in verdicts:
        row = (
            "not built here"
            if verdict["verdict"] == "not tested here"
            else (label(verdict) or "setup not described")
        )
        counts.setdefault(row, dict.fromkeys(VERDICT_ORDER, 0))[verdict["verdict"]] += 1
    labels = {label(v) for v in verdicts if v["verdict"] != "not tested here"}
    ranked = sorted(
        (priority, position, verdict)
        for position, verdict in enumerate(verdicts)
        if (priority := _priority(verdict)) is not None
    )[:first]
    return Summary(
        claims=len(verdicts),
        tested=sum(1 for v in verdicts if v["verdict"] != "not tested here"),
        counts=counts,
        no_paper_setup=bool(labels)
        and labels <= {"a scaled-down stand-in", "a different collection"},
        commands=sorted(
            {v["configuration"] for v in verdicts if v["verdict"] == "not tested here"} - {None}
        ),
        first=[
            (
                verdict["id"],
                f"{finding(verdict)} ({_WHY_FIRST[priority]}); effect "
                f"{_number(verdict['effect'], signed=True)} against the paper's "
                f"{_number(verdict['paper_effect'], signed=True)}, Effect Ratio "
                f"{_number(verdict['effect_ratio'], digits=2)} "
                f"({effect_ratio_reading(verdict['effect_ratio'])}).",
            )
            for priority, _, verdict in ranked
        ],
    )


def _claims_line(summary: Summary) -> str:
    return (
        f"{summary.claims} claim{'s' if summary.claims != 1 else ''}: {summary.tested} tested "
        f"here, {summary.claims - summary.tested} not tested here."
    )


def summary_lines(document: Mapping) -> list[str]:
    """The summary as Markdown: the counts as a table, the claims to read first as a list."""
    summary = summarize(document)
    lines = [
        _claims_line(summary),
        "",
        "| setup | " + " | ".join(VERDICT_ORDER) + " |",
        "|---|" + "---|" * len(VERDICT_ORDER),
    ]
    for row, by_verdict in summary.counts.items():
        lines.append(f"| {row} | " + " | ".join(str(by_verdict[v]) for v in VERDICT_ORDER) + " |")
    if summary.no_paper_setup:
        lines += ["", NO_PAPER_SETUP]
    if summary.commands:
        lines += ["", "Not tested here: " + "; ".join(
            f"`snakemake --cores N {command}`" for command in summary.commands
        ) + " tests them."]  # fmt: skip
    if summary.first:
        lines += ["", "Read these first:", ""]
        lines += [f"1. **{claim}**: {line}" for claim, line in summary.first]
    return lines


def text_summary(document: Mapping) -> list[str]:
    """The summary for a terminal: the counts per label in a line each, the claims to read
    first by id."""
    summary = summarize(document)
    lines = [_claims_line(summary)]
    for row, by_verdict in summary.counts.items():
        counted = [f"{n} {v}" for v, n in by_verdict.items() if n]
        lines.append(f"{row}: {', '.join(counted)}")
    if summary.no_paper_setup:
        lines.append(NO_PAPER_SETUP)
    if summary.commands:
        commands = "; ".join(f"snakemake --cores N {command}" for command in summary.commands)
        lines.append(f"Not tested here: {commands} tests them.")
    lines += [f"read first: {claim}: {line}" for claim, line in summary.first]
    return lines


def setup_lines(verdict: Mapping) -> list[str]:
    """What the claim's rows ran here beside the paper's setup."""
    setup = verdict.get("setup")
    if not setup:
        return ["  - setup: not described (no configuration was given when it was judged)"]
    lines = [
        f"  - setup: **{setup['label']}** ({setup['why']})",
        f"  - system here: {setup['system']}",
        f"  - baseline here: {setup['baseline']}",
    ]
    share = setup.get("share")
    corpus = f"collection {setup['collection']}, topics {setup['topics']}"
    if share and "documents" in share:
        fraction = f" ({share['held'] / share['relevant']:.1%})" if share["relevant"] else ""
        corpus += (
            f": {share['documents']:,} documents, holding {share['held']:,} of the "
            f"{share['relevant']:,} documents judged relevant (grade ≥ {share['level']}) for "
            f"these topics{fraction}"
        )
    lines += [f"  - {corpus}", f"  - the paper: {setup['paper']}"]
    return lines


def claim_lines(verdict: Mapping) -> list[str]:
    """A claim in full: the paper's words, the test, the verdict, the setup, the readings."""
    kind = verdict["kind"]
    if kind == "superiority":
        sign = ">" if verdict["direction"] == "greater" else "<"
        tested = f"{verdict['system']} {sign} {verdict['baseline']}"
    else:
        tested = (
            f"{kind} of {verdict['system']} against {verdict['baseline']}, margin "
            f"{verdict['margin']:g}"
        )
    paper_test = verdict.get("paper_test")
    lines = [
        f"- **{verdict['id']}** ({verdict['where']}): {verdict['claim']}"
        + (f' The paper: "{verdict["quote"]}"' if verdict.get("quote") else ""),
        f"  - the paper's test: {paper_test}"
        if paper_test
        else "  - the paper's test: none (the paper states it without a significance test)",
        f"  - tested here as {tested} in {verdict['table']}, column {verdict['column']}: "
        f"**{finding(verdict)}**, {verdict['reason']}.",
    ]
    if verdict["verdict"] != "not tested here":
        lines += setup_lines(verdict)
    if verdict["effect_ratio"] is not None:
        lines.append(
            f"  - reading: Effect Ratio {verdict['effect_ratio']:.2f} "
            f"({effect_ratio_reading(verdict['effect_ratio'])}), ΔRI "
            f"{verdict['delta_ri']:+.2f} ({delta_ri_reading(verdict['delta_ri'])})"
        )
    if verdict.get("note"):
        lines.append(f"  - note: {verdict['note']}")
    return lines


def render_markdown(document: Mapping) -> str:
    """The claims page: the summary first, one row per claim, the definitions, the original
    runs beside their reproductions, then each claim in full with its setup."""
    title = f"# Paper {document['paper']}: claims" + (
        f" ({document['title']})" if document["title"] else ""
    )
    lines = [title, "", "## Summary", "", *summary_lines(document), "", "## Verdicts", ""]
    lines += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for verdict in document["verdicts"]:
        lines.append("| " + " | ".join(verdict_cells(verdict)) + " |")
    correction = "Holm" if document["correction"] == "holm" else "no"
    lines += [
        "",
        "- effect: mean per-topic difference, system minus baseline, with its 95% t interval; "
        f"p: the deciding test's, with {correction} correction across this paper's tested "
        "claims in parentheses; detectable: the smallest effect a two-tailed paired t-test at "
        "the claim's alpha detects with 80% power on these topics (from the differences' "
        "standard deviation); M: the claim's margin.",
        f"- {DEFINITIONS}",
        f"- {SETUPS}",
        f"- {READINGS}",
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
        lines += claim_lines(verdict)
    return "\n".join(lines) + "\n"


_TEXT_KEYS = (
    "id", "verdict", "kind", "finding", "direction", "claim", "where", "table", "column",
    "system", "baseline", "reason",
)  # fmt: skip
_OPTIONAL_TEXT_KEYS = ("comparability", "paper_test", "quote", "configuration", "note")
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
        for key in _OPTIONAL_TEXT_KEYS:
            if not isinstance(verdict.get(key), str | type(None)):
                raise refuse(f"{where}: {key!r} not a string or null")
        if not isinstance(verdict.get("setup"), dict | type(None)):
            raise refuse(f"{where}: 'setup' not an object or null")
        for key in (*_NUMBER_KEYS, "margin"):
            value = verdict.get(key)
            if not isinstance(value, int | float | type(None)) or isinstance(value, bool):
                raise refuse(f"{where}: {key!r} missing or not a number or null")
        if not isinstance(verdict.get("topics"), int) or isinstance(verdict["topics"], bool):
            raise refuse(f"{where}: 'topics' missing or not an integer")
        for key in _TEXT_KEYS:
            if not isinstance(verdict.get(key), str):
                raise refuse(f"{where}: {key!r} missing or not a string")
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
        lines += ["  " + line for line in text_summary(document)]
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
        lines.append("")
    # A title or id with control characters must not recolour or rewrite the terminal.
    return "\n".join(printable(line) for line in lines)
