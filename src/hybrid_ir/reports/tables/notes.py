"""Notes a paper table computes from its own cells (verdicts, overlaps, largest gains, the claims
tested on it, the sweeps behind it), so that a note never states a stale conclusion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hybrid_ir.data.runs import ranked, read_run, topic_sort_key
from hybrid_ir.errors import ConfigError
from hybrid_ir.reports.tables.results import Cell, TableSpec, format_value


def verdict_notes(spec: TableSpec, cells: dict[str, dict[str, Cell]]) -> list[str]:
    """Sentences saying whether a row beats the others named in ``verdicts`` on a column,
    computed from this run's numbers so that the table never states a stale conclusion."""
    notes = []
    for verdict in spec.verdicts:
        row, column = verdict["row"], verdict["column"]
        value = cells[row][column].value
        others = {label: cells[label][column].value for label in verdict["against"]}
        missing = [label for label, other in {row: value, **others}.items() if other is None]
        if missing or value is None:
            notes.append(
                f"{row} cannot be compared on {column}: no value for {', '.join(missing)}."
            )
            continue
        known = {label: other for label, other in others.items() if other is not None}  # = others
        beaten = [label for label, other in known.items() if value > other]
        compared = ", ".join(f"{label} {other:.{spec.digits}f}" for label, other in known.items())
        if len(beaten) == len(known):
            outcome = "beats all of"
        elif beaten:
            outcome = "beats only " + ", ".join(beaten) + " among"
        else:
            outcome = "beats none of"
        notes.append(
            f"{row} ({column} {value:.{spec.digits}f}) {outcome} the compared rows ({compared})."
        )
    return notes


def overlap_notes(spec: TableSpec) -> list[str]:
    """Mean share of the top-k documents two rows' runs have in common, over their shared
    topics (e.g. sparse-matrix BM25 against Lucene BM25 at the same k1 and b)."""

    # A row's first run: overlaps compare runs of one collection, whatever the group.
    sources = {row.label: next(iter(row.sources.values()))[1] for row in spec.rows if row.sources}
    notes = []
    for overlap in spec.overlaps:
        first, second, k = (
            read_run(sources[overlap["a"]]),
            read_run(sources[overlap["b"]]),
            overlap["k"],
        )
        topics = sorted(first.keys() & second.keys())
        shares = [
            len({doc for doc, _ in ranked(first[t], k)} & {doc for doc, _ in ranked(second[t], k)})
            / k
            for t in topics
        ]
        mean = sum(shares) / len(shares) if shares else 0.0
        notes.append(
            f"Top-{k} overlap of {overlap['a']} and {overlap['b']}: {mean:.1%} of the documents "
            f"on average over {len(topics)} topics."
        )
    return notes


def largest_gain_notes(
    spec: TableSpec, per_query: dict[str, dict[str, dict[str, float]]]
) -> list[str]:
    """For each ``largest_gains`` entry and each row it names in ``over``: the topic where
    ``row`` scores most above that row in ``measure``, with both scores (paper 000 Section 5:
    A.219, P@10 0.1 -> 0.5 when fusion is compared with ColBERT).

    Scores are the table's per-topic ones (:func:`score_rows`, as in ``per_query.tsv``); a
    topic one row lacks counts 0. Ties (gains equal to 12 decimals) go to the first topic id in
    natural order (A.2 before A.10). When no topic gains, the note says so.
    """

    def scores(label: str, measure: str) -> dict[str, float]:
        if label not in per_query:
            raise ConfigError(f"tables.{spec.name}.largest_gains: {label!r} is not a row label")
        if measure not in per_query[label]:
            raise ConfigError(
                f"tables.{spec.name}.largest_gains: row {label!r} has no per-topic {measure!r} "
                "(not among the table's measures)"
            )
        return per_query[label][measure]

    notes = []
    for entry in spec.largest_gains:
        row, measure = entry["row"], entry["measure"]
        mine = scores(row, measure)
        for other in entry["over"]:
            theirs = scores(other, measure)
            topics = sorted(mine.keys() | theirs.keys(), key=topic_sort_key)
            # Rounded so that equal gains tie (0.6 - 0.2 is 0.39999999999999997, 0.5 - 0.1 0.4).
            gains = {t: round(mine.get(t, 0.0) - theirs.get(t, 0.0), 12) for t in topics}
            best = max(topics, key=lambda t: gains[t], default=None)  # first of the largest
            head = f'Largest {measure} gain of "{row}" over "{other}": '
            if best is None or gains[best] <= 0:
                notes.append(f"{head}none (no topic of {len(topics)} scores higher).")
                continue
            before, after = theirs.get(best, 0.0), mine.get(best, 0.0)
            notes.append(
                f"{head}topic {best} ({format_value(before, spec.digits)} -> "
                f"{format_value(after, spec.digits)})."
            )
    return notes


def claims_notes(claims: Mapping[str, Sequence[str]]) -> list[str]:
    """Where the claims tested on this table are judged: paper -> claim ids."""
    return [
        f"Claims of paper {paper} tested on this table ({', '.join(ids)}): their verdicts, "
        f"effects and p-values are in results/claims/paper{paper}.md (`hybrid-ir claims`)."
        for paper, ids in sorted(claims.items())
    ]


def explorer_notes(page: str | None) -> list[str]:
    """Where the table's per-topic explorer page is, when it has one."""
    if page is None:
        return []
    return [
        f"Per-topic explorer: {page} (in the report, the result named after this table with "
        "-explorer): pick two rows and a measure for the per-topic differences, their breakdown "
        "by topic label, and each topic's two rankings side by side with grades and texts."
    ]


def sweep_notes(reports: Mapping[str, Mapping]) -> list[str]:
    """One sentence per sweep: the selected value, by which measure, chosen on which topics."""
    notes = []
    for name, report in reports.items():
        if "by_language" in report:
            chosen = ", ".join(
                f"{language} {choice['best']} "
                f"({choice['selection_scores'][report['values'].index(choice['best'])]:.4f})"
                for language, choice in report["by_language"].items()
            )
            notes.append(
                f"Sweep {name}: {report['parameter']} of {report['method']} chosen per language "
                f"by {report['select']} on the {report['selected_on']}: {chosen}."
            )
            continue
        best = report["values"].index(report["best"])
        notes.append(
            f"Sweep {name}: {report['method']} is best at {report['parameter']} = "
            f"{report['best']} by {report['select']} ({report['selection_scores'][best]:.4f}, "
            f"chosen on the {report['selected_on']})."
        )
    return notes
