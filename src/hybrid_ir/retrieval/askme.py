"""Paper 004's AskMe re-ranking: BM25 candidates re-scored by six term-matching heuristics.

The paper (Ide et al., "Evaluating Retrieval for Multi-domain Scientific Publications", §2) says
that "AskMe applies several simple re-ranking algorithms to hone the results of ElasticSearch's
BM25 similarity processing" and that "A section's score is the sum of the component algorithm
scores; the overall document score is computed by adding the scores for the individual sections";
its Figure 1 (the query page) adds the weights: "Each section in a document is assigned a score by
summing the weighted scores of a number of different scoring algorithms. The document score is
then calculated by summing the weighted section scores", with every weight at 1.0 and two
sections, title and abstract. Here the sections are a canonical record's ``title`` and ``text``
(BEIR's abstract):

    section score  = sum over enabled heuristics h of  weight[h] * h(query, section)
    document score = sum over sections s of  section_weight[s] * section score(s)

The six heuristics are :func:`term_frequency`, :func:`term_share`, :func:`term_order`,
:func:`sentence_count`, :func:`first_sentence` and :func:`consecutive_terms`; each docstring
quotes the paper's definition and says what is chosen where the paper is vague. The paper's
worked examples (0.2 for heuristic 1, 1.0 for 2, 0.4167 for 6) are unit tests. AskMe's own code
(github.com/lappsgrid-incubator/askme-ranking, ``org.lappsgrid.askme.scoring``) was read to settle
vague points; where it disagrees with the paper, the paper wins and the docstring says so. Its
query page also lists a seventh algorithm, "position", that the paper's list of six omits; it is
not implemented.

Text analysis, shared by queries and sections:

* tokens: lower-cased maximal runs of word characters (regex ``\\w+``), so punctuation is not a
  token and "COVID-19" is two tokens, "covid" and "19";
* search terms: the query's tokens minus scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words; chosen
  over spaCy's 326 because AskMe builds its query the same way, by dropping stop words from the
  question, and any fixed list will do), each distinct term once, in order of first occurrence (the
  order :func:`term_order` compares with). Terms match tokens exactly: no stemming or
  lemmatization, so "cells" does not match "cell" (AskMe's code also accepts a token whose
  Stanford CoreNLP lemma is a term; BM25's Porter stemmer may retrieve a document on forms that
  the heuristics do not see);
* section tokens include stop words: the paper's denominators count every token of the section;
* sentences: the section split by :data:`SENTENCE_BOUNDARY`, after ``.``, ``!`` or ``?`` and
  whitespace unless the next character is a lower-case letter (so "et al. reported" and
  "e.g. the" stay whole); a piece without a token is not a sentence.

Combining with BM25 (:attr:`AskMeConfig.combine`): the default is ``"heuristics"``, the paper's
rule: the score AskMe sorts by is the summed heuristic score alone, BM25 only selecting the
candidates (and AskMe's ranking service indeed starts every document at score 0 and sorts by the
heuristic sum). BM25 breaks ties here. ``"sum"`` adds the raw BM25 score and ``"linear"``
interpolates min-max normalized scores, for comparison.

Where candidates come from: :func:`rerank` looks each head document up in ``corpus`` (anything
with ``dict.get``), topic by topic, and keeps nothing from one topic to the next. The workflow
passes :class:`hybrid_ir.retrieval.lucene.stored.StoredDocuments`, the BM25 index's stored
documents, so memory holds one topic's candidates whatever the corpus size (BioASQ: 14.9M
documents). The heuristics need no collection statistic (document frequencies, lengths): each reads
only the query and one section.
"""

from __future__ import annotations

import functools
import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from tqdm import tqdm

from hybrid_ir.data.runs import Run, canonicalize, ranked
from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.fusion.methods import minmax

TOKEN = re.compile(r"\w+")
"""A token: a maximal run of word characters (letters, digits, underscore), matched lower-cased."""

SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[^a-z])")
"""Where a section splits into sentences: whitespace after ``.!?`` not followed by a lower-case
letter, which keeps abbreviations inside a sentence ("et al. showed", "i.e. the")."""

SECTIONS = ("title", "text")
"""Record fields scored as sections: the title and the abstract (canonical ``text``)."""

COMBINE_MODES = ("heuristics", "sum", "linear")
SENTENCE_COUNT_MODES = ("fraction", "count")


@functools.cache
def stop_words() -> frozenset[str]:
    """scikit-learn's English stop words, imported on first use (importing sklearn takes seconds,
    which every user of this module would otherwise pay)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return TOKEN.findall(text.lower())


def query_terms(query: str) -> tuple[str, ...]:
    """The search terms: distinct non-stop-word tokens, in order of first occurrence."""
    stop = stop_words()
    return tuple(dict.fromkeys(token for token in tokenize(query) if token not in stop))


@dataclass(frozen=True)
class Section:
    """A section analysed once, whatever the query: every heuristic needs only token positions,
    so scoring a query costs time in its matches, not in the section's length.

    ``positions`` maps each token to its positions (0-based, text order); ``sentence_starts``
    holds the position of each sentence's first token (``[0]`` for a one-sentence section).
    """

    length: int
    positions: Mapping[str, tuple[int, ...]]
    sentence_starts: tuple[int, ...]

    @classmethod
    def from_text(cls, text: str) -> Section:
        positions: dict[str, list[int]] = {}
        starts: list[int] = []
        length = 0
        for sentence in SENTENCE_BOUNDARY.split(text.strip()):
            tokens = tokenize(sentence)
            if not tokens:
                continue
            starts.append(length)
            for token in tokens:
                positions.setdefault(token, []).append(length)
                length += 1
        frozen = {token: tuple(where) for token, where in positions.items()}
        return cls(length, frozen, tuple(starts))

    @property
    def sentences(self) -> int:
        return len(self.sentence_starts)

    def sentence_of(self, position: int) -> int:
        """Index of the sentence holding the token at ``position``."""
        return bisect_right(self.sentence_starts, position) - 1


@dataclass(frozen=True)
class Match:
    """The occurrences of a query's search terms in one section: what every heuristic reads.

    ``hits`` lists ``(token position, index of the term in terms)`` in text order.
    """

    section: Section
    terms: tuple[str, ...]
    hits: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, terms: tuple[str, ...], section: Section) -> Match:
        hits = sorted(
            (position, index)
            for index, term in enumerate(terms)
            for position in section.positions.get(term, ())
        )
        return cls(section, terms, tuple(hits))


def term_frequency(match: Match) -> float:
    """Heuristic 1, search-term occurrences over section tokens.

    Paper: "The total number of search terms that appear, including duplicates–e.g., if the
    search terms are X Y and the section contains ...X...Y...X... (where periods represent
    tokens that are not search terms), the score is 0.2 (3/15)." The example divides by the
    section's token count, so "total number" is read as that share. 0 for an empty section.
    """
    length = match.section.length
    return len(match.hits) / length if length else 0.0


def term_share(match: Match) -> float:
    """Heuristic 2, the share of distinct search terms present in the section.

    Paper: "The percentage of the search terms that appear. In the above example the score would
    be 1.0 since all search terms appear in the section." Reported as a fraction (1.0, not 100)
    as the example does. 0 for a query without search terms.
    """
    if not match.terms:
        return 0.0
    return len({index for _, index in match.hits}) / len(match.terms)


def term_order(match: Match) -> float:
    """Heuristic 3, the share of term occurrences that keep the query's order.

    Paper: "The order of terms in the search query, e.g., if the search terms are X Y then
    ...X...Y... will score higher than ...Y...X...." The paper fixes only that comparison.
    Chosen: walking the section's term occurrences in text order, an occurrence is in order when
    its term's query position is not before the previous occurrence's (the first occurrence
    always is); the score is in-order occurrences over all occurrences, 0 without any. So
    X Y = 1.0 > Y X = 0.5, and a repeated term (X X Y = 1.0) does not count as disorder.
    AskMe's code compares strictly and starts from query position 0, which scores X Y and Y X
    both 0.5 and so contradicts the paper's example.
    """
    if not match.hits:
        return 0.0
    in_order, previous = 0, -1
    for _, index in match.hits:
        if index >= previous:
            in_order += 1
        previous = index
    return in_order / len(match.hits)


def sentence_count(match: Match, mode: str = "fraction") -> float:
    """Heuristic 4, sentences containing a search term.

    Paper: "The total number of sentences that contain one or more search terms." With
    ``mode="count"`` this is that number; the default ``"fraction"`` divides it by the number of
    sentences, as AskMe's code does and as the paper's own example for heuristic 1 reads "total
    number" as a share, which also keeps all six heuristics in [0, 1] so that the query page's
    equal weights (1.0) weigh them alike instead of letting long abstracts dominate. 0 for an
    empty section.
    """
    section = match.section
    if not section.sentences:
        return 0.0
    count = len({section.sentence_of(position) for position, _ in match.hits})
    return count / section.sentences if mode == "fraction" else float(count)


def first_sentence(match: Match) -> float:
    """Heuristic 5, the share of distinct search terms present in the first sentence.

    Paper: "The percentage of search terms that appear in the first sentence." A fraction, as
    for heuristic 2. The first sentence of a one-sentence section (most titles) is the section.
    """
    if not match.terms:
        return 0.0
    starts = match.section.sentence_starts
    end = starts[1] if len(starts) > 1 else match.section.length
    return len({index for position, index in match.hits if position < end}) / len(match.terms)


def consecutive_terms(match: Match) -> float:
    """Heuristic 6, tokens in runs of two or more adjacent search-term tokens, over all tokens.

    Paper: "Sequences of consecutive of search terms, e.g., if the search terms are X Y and the
    section contains ...X.YYX..XY the score would be 0.4167 (5/12) as there are two sequences of
    consecutive terms (YYX and XY, with an aggregate length of 5) in the 12 tokens." A sequence
    is any maximal run of term tokens, repeats and query order regardless (YYX counts 3);
    punctuation is not a token, so "X, Y" is a sequence, and runs may cross sentence ends.
    """
    length = match.section.length
    if not length:
        return 0.0
    total, run, previous = 0, 0, -2
    for position, _ in match.hits:
        if position == previous + 1:
            run += 1
        else:
            total += run if run >= 2 else 0
            run = 1
        previous = position
    total += run if run >= 2 else 0
    return total / length


HEURISTICS: dict[str, Callable[[Match], float]] = {
    "term_frequency": term_frequency,
    "term_share": term_share,
    "term_order": term_order,
    "sentence_count": sentence_count,
    "first_sentence": first_sentence,
    "consecutive_terms": consecutive_terms,
}
"""The paper's six heuristics, in its order (1-6), by configuration name."""


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _complete(
    name: str, given: Any, defaults: dict[str, Any], check: Callable[[Any], bool]
) -> dict[str, Any]:
    """``defaults`` updated with ``given`` (a partial mapping), each key and value checked."""
    if not isinstance(given, Mapping):
        raise ConfigError(f"askme.{name}: expected a mapping, got {given!r}")
    for key, value in given.items():
        if key not in defaults:
            raise ConfigError(
                f"askme.{name}: unknown key {key!r} (expected one of {', '.join(defaults)})"
            )
        if not check(value):
            raise ConfigError(f"askme.{name}.{key}: invalid value {value!r}")
    return {**defaults, **given}


@dataclass(frozen=True)
class AskMeConfig:
    """How candidates are re-scored. Defaults are the paper's: all six heuristics on, every
    heuristic and section weight 1.0 (its Figure 1), the heuristic score alone deciding the order.

    * ``weights``, ``enabled``: per heuristic (names of :data:`HEURISTICS`), shared by both
      sections; a partial mapping keeps the defaults for the names it omits.
    * ``sections``: weight per section (``title``, ``text``); 0 ignores a section.
    * ``depth``: how many top BM25 documents per topic are re-ranked (AskMe's default result
      count is 100).
    * ``combine``: ``"heuristics"`` (default; order by the document score, BM25 breaking ties),
      ``"sum"`` (BM25 + document score) or ``"linear"`` (``alpha * minmax(BM25) + (1 - alpha) *
      minmax(document score)``, min-max over the topic's re-ranked candidates, a range of 0
      giving 0 as in :func:`hybrid_ir.fusion.methods.minmax`).
    * ``sentence_count``: ``"fraction"`` or ``"count"``, see :func:`sentence_count`.
    """

    weights: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(HEURISTICS, 1.0))
    enabled: Mapping[str, bool] = field(default_factory=lambda: dict.fromkeys(HEURISTICS, True))
    sections: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(SECTIONS, 1.0))
    depth: int = 100
    combine: str = "heuristics"
    alpha: float = 0.5
    sentence_count: str = "fraction"

    def __post_init__(self) -> None:
        complete = {
            "weights": _complete("weights", self.weights, dict.fromkeys(HEURISTICS, 1.0), _number),
            "enabled": _complete(
                "enabled",
                self.enabled,
                dict.fromkeys(HEURISTICS, True),
                lambda value: isinstance(value, bool),
            ),
            "sections": _complete("sections", self.sections, dict.fromkeys(SECTIONS, 1.0), _number),
        }
        for name, value in complete.items():
            object.__setattr__(self, name, value)
        if not isinstance(self.depth, int) or isinstance(self.depth, bool) or self.depth < 1:
            raise ConfigError(f"askme.depth: expected a positive integer, got {self.depth!r}")
        if self.combine not in COMBINE_MODES:
            raise ConfigError(
                f"askme.combine: expected one of {', '.join(COMBINE_MODES)}, got {self.combine!r}"
            )
        if not _number(self.alpha) or not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"askme.alpha: expected a number in [0, 1], got {self.alpha!r}")
        if self.sentence_count not in SENTENCE_COUNT_MODES:
            raise ConfigError(
                f"askme.sentence_count: expected one of {', '.join(SENTENCE_COUNT_MODES)}, "
                f"got {self.sentence_count!r}"
            )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> AskMeConfig:
        """A configuration from a (YAML) mapping; omitted keys keep their defaults and a bad key
        or value is a one-line :class:`ConfigError` naming it."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"askme: expected a mapping, got {values!r}")
        known = [item.name for item in fields(cls)]
        for key in values:
            if key not in known:
                raise ConfigError(
                    f"askme: unknown key {key!r} (expected one of {', '.join(known)})"
                )
        return cls(**values)

    def heuristic_scores(self, match: Match) -> dict[str, float]:
        """Each enabled heuristic's unweighted value on one section."""
        scores = {}
        for name, heuristic in HEURISTICS.items():
            if self.enabled[name]:
                if heuristic is sentence_count:
                    scores[name] = sentence_count(match, self.sentence_count)
                else:
                    scores[name] = heuristic(match)
        return scores

    def section_score(self, match: Match) -> float:
        """The weighted sum of the enabled heuristics on one section."""
        return sum(
            self.weights[name] * value for name, value in self.heuristic_scores(match).items()
        )

    def document_score(self, terms: tuple[str, ...], sections: Mapping[str, Section]) -> float:
        """The weighted sum of the section scores (a section absent from ``sections`` scores 0)."""
        return sum(
            weight * self.section_score(Match.of(terms, sections[name]))
            for name, weight in self.sections.items()
            if weight and name in sections
        )

    def combined(
        self, bm25: Mapping[str, float], heuristics: Mapping[str, float]
    ) -> dict[str, float]:
        """Per candidate, the score :func:`rerank` orders by (before the BM25 tie-break)."""
        if self.combine == "heuristics":
            return dict(heuristics)
        if self.combine == "sum":
            return {doc: bm25[doc] + heuristics[doc] for doc in bm25}
        lexical, heuristic = minmax(dict(bm25)), minmax(dict(heuristics))
        return {doc: self.alpha * lexical[doc] + (1 - self.alpha) * heuristic[doc] for doc in bm25}


def sections_of(record: Mapping[str, Any]) -> dict[str, Section]:
    """A corpus record's scored sections (a missing or null field is an empty section)."""
    return {name: Section.from_text(str(record.get(name) or "")) for name in SECTIONS}


class Documents(Protocol):
    """Where :func:`rerank` reads its candidates: a dict of records, or an index's stored
    documents (:class:`hybrid_ir.retrieval.lucene.stored.StoredDocuments`), looked up one at a
    time."""

    def get(self, doc: str, /) -> Mapping[str, Any] | None: ...


def rerank(
    bm25: Mapping[str, Mapping[str, float]] | Iterable[tuple[str, Mapping[str, float]]],
    corpus: Documents,
    topics: Mapping[str, str],
    config: AskMeConfig | None = None,
) -> Run:
    """Each topic's top ``config.depth`` BM25 documents re-ranked by AskMe; the rest below.

    Order: the first ``depth`` documents in BM25's canonical order (score, then doc id,
    descending) are sorted by their :meth:`AskMeConfig.combined` score, ties by BM25 score, then
    by doc id descending; the documents below depth follow in their BM25 order, so re-ranking
    never drops or adds a candidate. Scores: the document at (1-based) position ``p`` of a topic
    of ``n`` documents scores ``n - p + 1``. Rank-derived integers because no single real score
    can carry the BM25 tie-break through canonical order (which breaks ties by doc id) and the
    head-above-tail rule across all three combine modes, and because run files keep 6 decimals.

    ``bm25`` is a run or its ``(topic, documents)`` pairs. Topic by topic, only the head's
    documents are read from ``corpus`` and analysed, and none is kept for the next topic: memory
    holds one topic's candidates whatever the corpus size (the heuristics need no collection
    statistics). ``topics`` maps a topic id to its query text. A topic or document missing from
    ``topics`` or ``corpus`` is a :class:`HybridIRError` rather than a silent zero score.
    """
    config = config or AskMeConfig()
    pairs = bm25.items() if isinstance(bm25, Mapping) else bm25
    total = len(bm25) if isinstance(bm25, Mapping) else None
    result: Run = {}
    for topic, docs in tqdm(pairs, total=total, desc="AskMe", unit="topic", mininterval=5):
        if topic not in topics:
            raise HybridIRError(f"askme: topic {topic!r} of the BM25 run has no query text")
        terms = query_terms(topics[topic])
        order = ranked(dict(docs))
        head = dict(order[: config.depth])
        heuristics = {}
        for doc in head:
            record = corpus.get(doc)
            if record is None:
                raise HybridIRError(f"askme: document {doc!r} (topic {topic!r}) not in corpus")
            heuristics[doc] = config.document_score(terms, sections_of(record))
        combined = config.combined(head, heuristics)
        reordered = sorted(head, key=lambda doc: (combined[doc], head[doc], doc), reverse=True)
        final = reordered + [doc for doc, _ in order[config.depth :]]
        result[topic] = {doc: float(len(final) - index) for index, doc in enumerate(final)}
    return canonicalize(result)
