"""Evaluation of runs as the official tools score them: trec_eval through ir_measures/pytrec_eval.

A measures list mixes *measure sets* (below) and any ir_measures name (``nDCG@10``,
``P(rel=2)@10``, ``R@50``...). Each column has a per-topic value and a rule for which topics its
aggregate averages over; :class:`Evaluation` keeps, per column, exactly the topics averaged over,
so a mean over any subset of them (a cross-validation fold) applies the same rule.

Averaging rules (``topics`` of :class:`Evaluation`):

* ``all``: every topic of the qrels, a topic the run does not answer scoring 0, as trec_eval
  ``-c`` (ir_measures alone averages over the topics both files share). Every column follows it
  unless its set says otherwise. To evaluate a subset of topics (a fold, the 20 concrete NTCIR-12
  topics), pass the qrels of that subset.
* ``judged``: the qrels topics for which the run keeps at least one judged document: the ARQMath
  organisers' rule (see ``arqmath``).

Measure sets (column names, then semantics; ``-lN`` is trec_eval's relevance level, ``-J`` its
judged-only flag):

``arqmath``: ARQMath Task 1 as the organisers evaluate it. Their scripts, redistributed in
approach0/pya0 as ``eval-arqmath2-task1/arqmath_to_prim_task1.py`` and ``task1_get_results.py``,
drop repeated posts (keeping the first) and every post absent from the topic's qrels, giving the
"prime" run ("nDCG' (i.e., nDCG after ignoring unevaluated hits)",
https://www.cs.rit.edu/~dprl/ARQMath/2020/Task1-answers.html), then run trec_eval without ``-c``
on that file: ``-m ndcg``, ``-l2 -m map``, ``-l2 -m P``, ``-l2 -m bpref``. pya0's
``eval-arqmath1-task1.sh`` gets the same per-topic values with ``-J``, which is how they are
computed here. Relevance is 0-3 (Irrelevant, Low, Medium, High).

* ``nDCG'``: trec_eval ``ndcg`` (gain = relevance, no cutoff) with ``-J``; ``judged`` topics.
* ``MAP'``, ``P'@10``: ``map`` and ``P_10`` with ``-J -l2`` (High and Medium relevant, Low not);
  ``judged`` topics.
* ``BPref``: ``bpref`` with ``-l2`` (unjudged documents never count in bpref); ``judged`` topics.
* ``Judged@10``, ``Judged@1000``: see *Judged@k*, on the run as given (before prime filtering);
  ``all`` topics.
* ``Rel_Ret``: ``num_rel_ret`` with ``-l2``; the aggregate is the SUM over topics, as trec_eval's
  summary line. Paper 001's Table 1 counts relevance >= 2: MathDowsers 804, MIRMU 708 and PSU1
  761 are what ``-l2`` gives on the runs in the mirror (``-l1`` gives more).

The ``judged`` averaging follows from trec_eval reading the prime file without ``-c``: a topic
with no judged post has no line there and is skipped. The Linked MSE baseline answers 71 of
ARQMath-1's 77 topics; its nDCG' is 0.3026 over those 71 (paper 001 prints 0.303) and would be
0.2791 over 77. A run with a judged post in every topic is averaged over all 77.

Paper 001's Table 1 mixes two protocols. Its official runs and the other teams' runs are prime
(PSU1 = ``psu-task1-auto-both-A``: nDCG' 0.2625, MAP' 0.0822, P'@10 0.1156, Rel_Ret 761), but its
unsubmitted runs (BM25, BM25+tf, BM25+tf+tf.BERT) were scored with plain trec_eval on runs that
keep unjudged posts: their "NDCG'", "MAP'" and "P@10" are the plain names ``nDCG``,
``AP(rel=2)`` and ``P(rel=2)@10`` (e.g. 0.3142, 0.0970, 0.1494 for BM25+tf+tf.BERT, where the
prime values are 0.3256, 0.1088, 0.1532).

``ntcir12``, or ``ntcir12(full=F, partial=P)``: NTCIR-12 Wiki-Formula as pya0's
``eval-ntcir12.sh`` reports it (``-l3`` and ``-l1`` on the 0-4 aggregated judgments, the sum of
two assessors' 0-2 scores; defaults ``full=3``, ``partial=1``): ``Full BPref``, ``Part. BPref``
(``bpref`` at each level), ``Full P@5`` ... ``Full P@20`` and ``Part. P@5`` ... ``Part. P@20``
(``P_5, P_10, P_15, P_20`` at each level), ``Judged@1000``; all ``all``. pya0 runs trec_eval
without ``-c`` on qrels of all 40 topics with runs of the 20 concrete ones, which gives the same
numbers as ``all`` averaging on the 20 topics' qrels when every topic is answered: pass those
qrels (the ``concrete`` set of :mod:`hybrid_ir.data.collections.ntcir`, equal to pya0's
``qrels.ntcir12-math-browsing-concrete.txt``), or half the average is lost. These are paper
000's columns: pya0's README shows ``eval-ntcir12.sh tsv`` printing ``0.6304 0.5411`` (``-l3``,
then ``-l1``) for its Approach0 run of the concrete topics, Table 2 row (6)'s Full 0.63 and
Part. 0.54 (the paper's prose, "0 to 3, fully relevant >= 2", describes the levels loosely).
Table 1's Judged per mille is ``Judged@1000`` x 1000 on the concrete topics.

``beir``: ``nDCG@10``, ``R@100``, ``R@1000`` (``ndcg_cut_10``, ``recall_100``, ``recall_1000``,
graded gains, recall of relevance >= 1), ``all``.

``cf``: Cystic Fibrosis as paper 003 measures it, on the GRADED qrels of
:mod:`hybrid_ir.data.collections.cf` (relevance = sum of the four judges' 0-2 scores, 0-8). Binary
measures use ``-l1``: relevant = some judge gave 1 or more, the paper's rule and exactly the
``binary`` qrels. ``P@1``, ``P@3``, ``P@5``, ``P@10``, ``MAP`` (``map``), ``IPrec@0.0``,
``IPrec@0.1`` ... ``IPrec@1.0`` (``iprec_at_recall_0.00`` ...: the highest precision at any
recall >= r, the 11-point interpolated curve), ``NDCG@10`` (``ndcg_cut_10`` with the sum as
gain; nDCG is invariant to scaling the gains, and the sum is 4 times the mean judge score the
paper uses, so this is the paper's NDCG); all ``all``.

``recall(k1, k2, ...)``: ``R@k1``, ``R@k2`` ... (trec_eval ``recall_k``), ``all``.

*Judged@k*: the fraction of the run's top ``k`` documents (trec_eval's order: score descending,
then document id descending) that the topic's qrels judge at any level, over ``min(k, number
retrieved)`` documents (ir_measures' definition), 0 when nothing is retrieved. pya0's
``judge_rate`` prints 1000 x judged / retrieved summed over the run's topics (per mille): the
same number when every topic has the same depth and the run answers exactly the qrels' topics.
Multiply by 100 or 1000 for paper 000's Judged % and Judged per mille.

Aggregates are plain means of the per-topic values in double precision; trec_eval prints them
rounded to 4 decimals. Counts (``Rel_Ret`` and the ir_measures ``NumQ``, ``NumRel``, ``NumRet``,
``NumRelRet``) are integers per topic and summed over topics, as trec_eval's summary line sums
them; :mod:`hybrid_ir.fusion.crossval` and :mod:`hybrid_ir.reports.tables.results` follow the same
rule.
"""

from __future__ import annotations

import heapq
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import ir_measures
from ir_measures import measures as ir_measure_types

from hybrid_ir.data.qrels import Qrels, read_qrels
from hybrid_ir.data.runs import Run, read_run, topic_sort_key
from hybrid_ir.errors import ConfigError, EvaluationError, cut

LOGGER = logging.getLogger(__name__)

Averaging = Literal["all", "judged"]

ALL_TOPICS: Averaging = "all"
"""Average over every qrels topic, 0 when unanswered (trec_eval ``-c``)."""
JUDGED_TOPICS: Averaging = "judged"
"""Average over the qrels topics whose run keeps a judged document (the ARQMath organisers)."""

BEIR_NAMES = ("nDCG@10", "R@100", "R@1000")
COUNT_MEASURES = frozenset({"NumQ", "NumRel", "NumRet"})
"""ir_measures measures that count (``NumRelRet`` parses as ``NumRet(rel=1)``): their aggregate
is the sum over topics and every value an integer, as trec_eval prints them."""
RECALL_LEVELS = tuple(f"{level / 10:.1f}" for level in range(11))
"""The 11 standard recall levels 0.0, 0.1, ..., 1.0 of interpolated precision."""


@dataclass(frozen=True)
class Column:
    """One output column: what a topic's value is and which topics the aggregate covers.

    Exactly one of ``measure`` (an ir_measures measure, computed by pytrec_eval) and
    ``judged_at`` (Judged@k, computed here in trec_eval's ranking order) is set.
    """

    name: str
    measure: ir_measure_types.Measure | None = None
    judged_at: int | None = None
    averaging: Averaging = ALL_TOPICS
    total: bool = False

    @property
    def diagnostic(self) -> bool:
        """Judged@k and counts (``Rel_Ret``, ``NumRet``...) describe a run and its pool rather
        than rank its effectiveness: a significance marker on them would claim a better run."""
        return self.judged_at is not None or self.total

    @property
    def relevance_level(self) -> int | None:
        """The lowest grade this column counts as relevant (trec_eval's ``-l``; nDCG gains from
        grade 1), or None for a diagnostic column, which is a true number with no relevant
        document at all (a count of 0, a judged fraction)."""
        if self.diagnostic or self.measure is None:
            return None
        if "rel" in self.measure.SUPPORTED_PARAMS:
            return int(self.measure["rel"])
        return 1


@dataclass(frozen=True)
class MeasureSet:
    """A named list of columns; an item of a measures list, like a measure name."""

    name: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Evaluation:
    """Scores of one run.

    ``per_query[column]`` holds a value for exactly the topics that column averages over (in
    natural topic order), ``topics[column]`` lists them, and ``aggregate[column]`` is their
    mean (their sum for totals such as ``Rel_Ret``).
    """

    per_query: dict[str, dict[str, float]]
    aggregate: dict[str, float]
    topics: dict[str, tuple[str, ...]]


def _measure(name: str) -> ir_measure_types.Measure:
    return ir_measures.parse_measure(name)


def arqmath() -> MeasureSet:
    """ARQMath Task 1, prime measures as the organisers compute them (module docstring)."""
    return MeasureSet(
        "arqmath",
        (
            Column("nDCG'", _measure("nDCG(judged_only=True)"), averaging=JUDGED_TOPICS),
            Column("MAP'", _measure("AP(rel=2,judged_only=True)"), averaging=JUDGED_TOPICS),
            Column("P'@10", _measure("P(rel=2,judged_only=True)@10"), averaging=JUDGED_TOPICS),
            Column("BPref", _measure("Bpref(rel=2)"), averaging=JUDGED_TOPICS),
            Column("Judged@10", judged_at=10),
            Column("Judged@1000", judged_at=1000),
            Column("Rel_Ret", _measure("NumRelRet(rel=2)"), total=True),
        ),
    )


def ntcir12(full: int = 3, partial: int = 1) -> MeasureSet:
    """NTCIR-12 Wiki-Formula at the fully and partially relevant levels (pya0's -l3 and -l1)."""
    columns = [
        Column("Full BPref", _measure(f"Bpref(rel={full})")),
        Column("Part. BPref", _measure(f"Bpref(rel={partial})")),
    ]
    for label, level in (("Full", full), ("Part.", partial)):
        columns += [
            Column(f"{label} P@{k}", _measure(f"P(rel={level})@{k}")) for k in (5, 10, 15, 20)
        ]
    return MeasureSet("ntcir12", (*columns, Column("Judged@1000", judged_at=1000)))


def beir() -> MeasureSet:
    """BEIR's reported measures with trec_eval -c semantics."""
    return MeasureSet("beir", tuple(Column(name, _measure(name)) for name in BEIR_NAMES))


def cf() -> MeasureSet:
    """Paper 003's Cystic Fibrosis measures on graded (sum of judges) qrels."""
    precision = [Column(f"P@{k}", _measure(f"P@{k}")) for k in (1, 3, 5, 10)]
    interpolated = [Column(f"IPrec@{r}", _measure(f"IPrec@{r}")) for r in RECALL_LEVELS]
    columns = (*precision, Column("MAP", _measure("AP")), *interpolated)
    return MeasureSet("cf", (*columns, Column("NDCG@10", _measure("nDCG@10"))))


def recall(*cutoffs: int) -> MeasureSet:
    """``R@k`` (trec_eval ``recall_k``, relevance >= 1) for each ``k``."""
    if not cutoffs:
        raise ConfigError("recall() needs at least one cutoff, e.g. recall(10, 100)")
    if any(type(k) is not int or k < 1 for k in cutoffs):
        raise ConfigError(
            f"recall({', '.join(map(repr, cutoffs))}): a cut-off is not a positive integer"
        )
    return MeasureSet("recall", tuple(Column(f"R@{k}", _measure(f"R@{k}")) for k in cutoffs))


SETS: dict[str, Callable[..., MeasureSet]] = {
    "arqmath": arqmath,
    "ntcir12": ntcir12,
    "beir": beir,
    "cf": cf,
    "recall": recall,
}
"""Measure sets by name; ``name`` or ``name(args)`` in a measures list calls the factory."""

_CALL = re.compile(r"(\w+)\(([^()]*)\)")


def _set_from_name(name: str) -> MeasureSet | None:
    """The set a measures-list item names (``arqmath``, ``ntcir12(full=2)``), else ``None``."""
    if name in SETS:
        return SETS[name]()
    call = _CALL.fullmatch(name.replace(" ", ""))
    if call is None or call.group(1) not in SETS:
        return None
    args: list[int] = []
    kwargs: dict[str, int] = {}
    try:
        for arg in filter(None, call.group(2).split(",")):
            key, _, value = arg.rpartition("=")
            if key:
                kwargs[key] = int(value)
            else:
                args.append(int(value))
        return SETS[call.group(1)](*args, **kwargs)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"bad measure set {name!r}: {error}") from None


def _column_of_a_set(name: str) -> Column | None:
    """A single column of a set with default parameters (``nDCG'``, ``Rel_Ret``, ``MAP``), so
    a measures list can ask for it alone."""
    for factory in SETS.values():
        try:
            measure_set = factory()
        except ConfigError:  # a set that needs arguments, such as recall(k...)
            continue
        for column in measure_set.columns:
            if column.name == name:
                return column
    return None


_C_LONG_MAX = 2**63 - 1


def _columns(item: str | MeasureSet) -> tuple[Column, ...]:
    if isinstance(item, MeasureSet):
        return item.columns
    named_set = _set_from_name(item)
    if named_set is not None:
        return named_set.columns
    named_column = _column_of_a_set(item)
    if named_column is not None:
        return (named_column,)
    try:
        measure = ir_measures.parse_measure(item)
    except (ValueError, NameError, SyntaxError, TypeError) as error:
        raise ConfigError(f"unknown measure or measure set {item!r}: {error}") from None
    cutoff = measure.params.get("cutoff")
    # pytrec_eval aborts the process on a cut-off of 0 and fails on a float one.
    if cutoff is not None and (type(cutoff) is not int or cutoff < 1):
        raise ConfigError(f"measure {item!r}: the cut-off {cutoff!r} is not a positive integer")
    # trec_eval reads a cut-off as a C long, saturating beyond it: the measure it reports is
    # then another one (P_9223372036854775807), which ir_measures fails to find (KeyError).
    if cutoff is not None and cutoff > _C_LONG_MAX:
        raise ConfigError(
            f"measure {cut(item)!r}: the cut-off is beyond {_C_LONG_MAX:,}, the largest trec_eval "
            "reads"
        )
    if measure.NAME == "Judged" and isinstance(measure["cutoff"], int):
        # Computed here so that ties at the cutoff fall as in trec_eval and the other columns.
        return (Column(item, judged_at=measure["cutoff"]),)
    if not _trec_eval_computes(measure):
        # ir_measures would hand it to another tool (gdeval's Perl for ERR, pyndeval for
        # alpha_nDCG) or fail on a parameter no default fills (INST, SDCG): a traceback.
        raise ConfigError(
            f"measure {item!r} is not one trec_eval computes (through pytrec_eval); e.g. "
            "P@10, nDCG@10, AP, R@100, RR, Bpref, infAP, IPrec@0.5, or a set: "
            f"{', '.join(SETS)}"
        )
    return (Column(item, measure, total=measure.NAME in COUNT_MEASURES),)


def _trec_eval_computes(measure: ir_measure_types.Measure) -> bool:
    try:
        return bool(ir_measures.pytrec_eval.supports(measure))
    except AssertionError:  # validate_params: a parameter without a value
        return False


def resolve_measures(items: Iterable[str | MeasureSet]) -> list[Column]:
    """The columns of a measures list, in order; a column listed twice alike is kept once."""
    columns: dict[str, Column] = {}
    for item in items:
        for column in _columns(item):
            if columns.setdefault(column.name, column) != column:
                raise ConfigError(f"column {column.name!r} is requested with two meanings")
    if not columns:
        raise ConfigError("no measures requested")
    return list(columns.values())


def grades_text(grades: Iterable[int]) -> str:
    """Relevance grades as a reader takes them in: ``0-3`` for a run of consecutive grades,
    else a list (``0, 2, 5``), cut after 8."""
    ordered = sorted(set(grades))
    if len(ordered) > 1 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]} to {ordered[-1]}" if ordered[0] < 0 else f"{ordered[0]}-{ordered[-1]}"
    shown = ", ".join(map(str, ordered[:8]))
    return shown + (f", … ({len(ordered)} grades)" if len(ordered) > 8 else "")


def _grades(qrels: Qrels) -> set[int]:
    return {grade for judgments in qrels.values() for grade in judgments.values()}


def default_measures(qrels: Qrels) -> tuple[str, str]:
    """The measure set that fits the qrels, and why: ``arqmath`` (MAP', P'@10, BPref relevant
    from grade 2) when a grade is 2 or more, else ``beir`` (relevant from grade 1). A set whose
    level no grade reaches would score every topic 0, which reads as a result."""
    present = _grades(qrels)
    if max(present, default=0) >= 2:
        return "arqmath", f"the qrels' grades are {grades_text(present)}: relevant from 2"
    return "beir", f"the qrels' grades are {grades_text(present)}"


def check_relevance_levels(
    qrels: Qrels, measures: Sequence[str | MeasureSet], qrels_name: str = "the qrels"
) -> None:
    """An :class:`EvaluationError` naming the first measure whose relevance level no judgment
    of ``qrels`` reaches: no topic then has a relevant document for it, and every score (0,
    or a p-value of 1 between two such zeros) would only say so."""
    present = _grades(qrels)
    highest = max(present, default=None)
    for column in resolve_measures(measures):
        level = column.relevance_level
        if level is not None and (highest is None or highest < level):
            raise EvaluationError(
                f"{qrels_name}: {column.name} counts relevance >= {level} as relevant, but the "
                f"qrels' grades are {grades_text(present)}: no topic has a relevant document "
                "for it (--measures to choose others)"
            )


def measures_for(
    qrels: Qrels, measures: Sequence[str] | None, qrels_name: str = "the qrels"
) -> tuple[list[str], str | None]:
    """The measures list to score ``qrels`` with, and, when ``measures`` is None, a line saying
    which set :func:`default_measures` chose and why; every measure is checked by
    :func:`check_relevance_levels`."""
    note = None
    if measures is None:
        name, reason = default_measures(qrels)
        measures, note = [name], f"measures: {name} ({reason}; --measures to choose)"
    check_relevance_levels(qrels, measures, qrels_name)
    return list(measures), note


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str | MeasureSet],
    names: tuple[str, str] = ("the qrels", "the run"),
    allow_disjoint: bool = False,
) -> Evaluation:
    """Score ``run`` against ``qrels`` on the columns of ``measures`` (sets and/or names).

    pytrec_eval does the ranking measures in C, one call per (relevance level, judged-only)
    combination; the Judged@k counts and the topics keeping a judged document take one pass
    over the run here. Empty qrels, or a run that answers none of their topics, would score 0
    everywhere and look like a real result: an :class:`EvaluationError` naming ``names`` (the
    qrels and run files), or with ``allow_disjoint`` a warning naming them.
    """
    columns = resolve_measures(measures)
    topics = sorted(qrels, key=topic_sort_key)
    qrels_name, run_name = names
    # trec_eval reads a negative grade as "not judged"; pytrec_eval crashes the process on a
    # topic judged only so (Bpref with NumRelRet at rel=2, as the arqmath set asks).
    unjudged = [topic for topic in topics if max(qrels[topic].values(), default=0) < 0]
    if unjudged:
        more = f" (and {len(unjudged) - 1} more topic(s))" if len(unjudged) > 1 else ""
        raise EvaluationError(
            f"{qrels_name}: topic {unjudged[0]!r}{more} has only negative relevance grades, "
            "which trec_eval reads as unjudged: there is nothing to score it on; remove the "
            "topic or grade a document 0 or more"
        )
    answered = {topic: docs for topic, docs in run.items() if topic in qrels and docs}
    if not answered:
        problem = (
            f"{qrels_name} has no judgments"
            if not qrels
            else f"{run_name} and {qrels_name} have no topic in common"
        )
        if not allow_disjoint:
            raise EvaluationError(f"{problem}: every score would be 0")
        LOGGER.warning("%s: every score is 0", problem)
    if len(answered) < len(topics):
        LOGGER.warning(
            "the run answers %d of the %d qrels topics; the others score 0 where averaged",
            len(answered),
            len(topics),
        )
    values = _trec_eval_values(qrels, answered, [c.measure for c in columns if c.measure])
    cutoffs = {column.judged_at for column in columns if column.judged_at is not None}
    judged_topics, judged_rates = _judged_pass(qrels, answered, cutoffs)

    per_query: dict[str, dict[str, float]] = {}
    aggregate: dict[str, float] = {}
    averaged: dict[str, tuple[str, ...]] = {}
    for column in columns:
        source = (
            judged_rates[column.judged_at]
            if column.judged_at is not None
            else values[str(column.measure)]
        )
        kept = tuple(
            topic for topic in topics if column.averaging == ALL_TOPICS or topic in judged_topics
        )
        per_query[column.name] = {topic: source.get(topic, 0.0) for topic in kept}
        if column.measure is not None and column.measure.NAME == "NumRel":
            # An unanswered topic still has its relevant documents (trec_eval -c counts them).
            level = column.measure.params.get("rel", 1)
            per_query[column.name] = {
                topic: sum(rel >= level for rel in qrels[topic].values()) for topic in kept
            }
        averaged[column.name] = kept
        total = sum(per_query[column.name].values())
        if column.total:  # a count: an integer, as trec_eval prints it
            per_query[column.name] = {t: round(v) for t, v in per_query[column.name].items()}
            aggregate[column.name] = round(total)
        else:
            aggregate[column.name] = total / len(kept) if kept else 0.0
    return Evaluation(per_query, aggregate, averaged)


# Measures that a topic's first `cutoff` documents in trec_eval's order decide alone (without
# judged_only, which drops unjudged documents before cutting).
_PREFIX_MEASURES = frozenset({"P", "R", "nDCG"})


def _prefix_depth(measures: list[ir_measure_types.Measure]) -> int | None:
    """The largest cutoff when every measure is a cutoff measure of :data:`_PREFIX_MEASURES`,
    else None: then pytrec_eval need not convert more than that many documents per topic."""
    cutoffs = []
    for measure in measures:
        cutoff = measure.params.get("cutoff")
        if measure.NAME not in _PREFIX_MEASURES or cutoff is None:
            return None
        if measure.params.get("judged_only"):
            return None
        cutoffs.append(cutoff)
    return max(cutoffs, default=None)


def decisive_depth(measures: Sequence[str | MeasureSet]) -> int | None:
    """How many of a topic's first documents (canonical order) decide every column of
    ``measures``, or None when some column needs the whole ranking.

    A run cut to that depth scores exactly as the whole run: every column is a cutoff measure of
    :data:`_PREFIX_MEASURES` averaged over all topics (no Judged@k, whose averaging over topics
    with a judged document looks at every document). A sweep can then fuse only that many.
    """
    columns = resolve_measures(measures)
    if any(column.measure is None or column.averaging != ALL_TOPICS for column in columns):
        return None
    return _prefix_depth([column.measure for column in columns if column.measure is not None])


def _trec_eval_values(
    qrels: Qrels, answered: Run, measures: list[ir_measure_types.Measure]
) -> dict[str, dict[str, float]]:
    """``{str(measure): {topic: value}}`` for the answered topics, by pytrec_eval."""
    unique = list({str(measure): measure for measure in measures}.values())
    values: dict[str, dict[str, float]] = {str(measure): {} for measure in unique}
    depth = _prefix_depth(unique)
    if depth is not None:
        answered = {
            topic: {doc: docs[doc] for doc in _top(docs, depth)} if len(docs) > depth else docs
            for topic, docs in answered.items()
        }
    judged_only = [m for m in unique if m.params.get("judged_only")]
    groups = [
        ([m for m in unique if not m.params.get("judged_only")], answered),
        # pytrec_eval drops the unjudged documents itself, after reading and sorting them all:
        # dropping them first gives the same values and spares it most of the run.
        (judged_only, {t: {d: s for d, s in docs.items() if d in qrels[t]} for t, docs in
                       answered.items()} if judged_only else {}),
    ]  # fmt: skip
    for group, documents in groups:
        if group and documents:
            for metric in ir_measures.iter_calc(group, qrels, documents):
                values[str(metric.measure)][metric.query_id] = float(metric.value)
    return values


def _top(docs: dict[str, float], k: int) -> list[str]:
    """The first ``k`` documents in trec_eval's order (score descending, then id descending).

    Only the documents scoring at least the k-th best score are sorted, not the whole topic.
    """
    threshold = heapq.nlargest(k, docs.values())[-1]
    candidates = [(score, doc) for doc, score in docs.items() if score >= threshold]
    candidates.sort(reverse=True)
    return [doc for _, doc in candidates[:k]]


def _judged_pass(
    qrels: Qrels, answered: Run, cutoffs: set[int]
) -> tuple[set[str], dict[int, dict[str, float]]]:
    """Topics keeping a judged document, and Judged@k for each cutoff, in one pass."""
    judged_topics: set[str] = set()
    rates: dict[int, dict[str, float]] = {cutoff: {} for cutoff in cutoffs}
    for topic, docs in answered.items():
        judgments = qrels[topic]
        judged = len(judgments.keys() & docs.keys())
        if judged:
            judged_topics.add(topic)
        for cutoff in cutoffs:
            if len(docs) <= cutoff:
                rates[cutoff][topic] = judged / len(docs)
            else:
                top = _top(docs, cutoff)
                rates[cutoff][topic] = sum(doc in judgments for doc in top) / cutoff
    return judged_topics, rates


def evaluate_files(
    qrels_path: str | Path, run_path: str | Path, measure_names: Sequence[str]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Aggregate and per-query scores of one run file (TREC or ARQMath TSV) against qrels."""
    names = (str(qrels_path), str(run_path))
    evaluation = evaluate(read_qrels(qrels_path), read_run(run_path), measure_names, names)
    return evaluation.aggregate, evaluation.per_query


def recall_curve(run: Run, qrels: Qrels, ks: Iterable[int] = range(1, 101)) -> dict[int, float]:
    """Recall@k for each ``k`` (paper 002 Fig. 1): trec_eval ``recall_k`` (relevance >= 1)
    averaged over every qrels topic, an unanswered topic counting 0."""
    cutoffs = list(ks)
    aggregate = evaluate(qrels, run, [recall(*cutoffs)]).aggregate
    return {cutoff: aggregate[f"R@{cutoff}"] for cutoff in cutoffs}
