"""Fine-tuning triplets (query, positive, hard negative) from ARQMath posts (paper 000, §3.3).

"We use Q&A posts prior to the year 2018. Given a query q, we sample a positive passage p+ from
accepted answers, duplicate questions, or any answer posts to the query receiving more than 7
upvotes. A random answer passage related to the same tags is treated as a hard negative." Each
part is a rule of :class:`TripletRules`, on or off in configuration (``math_models.triplets``):

* ``before``: answers, and questions, created on or after this date are dropped;
* ``positives.accepted``: the question's accepted answer;
* ``positives.duplicates``: each question PostLinks marks as a duplicate of the query (its title
  and body, as pya0's ``arqmath-2021-train-data.py`` does) and that question's accepted answer;
* ``positives.min_score``: answers with at least this score ("more than 7 upvotes": 8);
* ``positives.all_answers``: every answer of the question (not the paper's: for thread
  collections, which carry no votes);
* ``negatives.same_tag``: the negative is drawn as pya0 draws it, a random tag of the query
  question and then a random answer under that tag, from another question; when no tag of the
  query is shared with another question, or with the rule off, it is a random answer of another
  question (counted as ``fallback``).

A rule that is on needs its field (``date``, ``accepted``, ``duplicates``, ``score``) in every
training collection: a collection without it is a configuration error naming the rule, not a
rule silently skipped. A rule that is on and yields no triplet is an error naming it too.

No leakage: every topic id and every post judged in any qrels file is dropped as a query, a
positive or a negative, so no evaluation judgment is ever trained on. All draws come from one
generator seeded from configuration, over questions in id order, so the file is reproducible.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import json_lines
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural.dense import document_text

TRIPLET_KEYS = ("query_id", "query", "positive_id", "positive", "negative_id", "negative")
KEY = "math_models.triplets"
POSITIVE_RULES = ("accepted", "duplicates", "min_score", "all_answers")


@dataclass(frozen=True)
class TripletRules:
    """Which of the paper's rules apply; the defaults are the paper's (§3.3)."""

    before: str | None = "2018-01-01"
    accepted: bool = True
    duplicates: bool = True
    min_score: int | None = 8
    all_answers: bool = False
    same_tag: bool = True

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> TripletRules:
        """The rules of a validated ``math_models.triplets`` entry."""
        positives, negatives = settings["positives"], settings["negatives"]
        return cls(
            before=settings["before"],
            accepted=positives["accepted"],
            duplicates=positives["duplicates"],
            min_score=positives["min_score"],
            all_answers=positives["all_answers"],
            same_tag=negatives["same_tag"],
        )

    def positive_rules(self) -> list[str]:
        """The positive rules that are on, in :data:`POSITIVE_RULES` order."""
        on = {
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "min_score": self.min_score is not None,
            "all_answers": self.all_answers,
        }
        return [rule for rule in POSITIVE_RULES if on[rule]]

    def needed_fields(self) -> dict[str, str]:
        """Record field -> the configuration key of the rule that reads it."""
        needed = {}
        if self.before is not None:
            needed["date"] = f"{KEY}.before"
        if self.accepted:
            needed["accepted"] = f"{KEY}.positives.accepted"
        if self.duplicates:
            needed["duplicates"] = f"{KEY}.positives.duplicates"
        if self.min_score is not None:
            needed["score"] = f"{KEY}.positives.min_score"
        return needed


@dataclass
class TripletCounts:
    questions: int = 0
    answers: int = 0
    excluded_judged_answers: int = 0
    excluded_topic_questions: int = 0
    dropped_by_date: int = 0
    questions_without_positive: int = 0
    duplicates_not_in_corpus: int = 0
    positives_without_negative: int = 0
    triplets: int = 0
    by_source: dict = field(default_factory=dict)
    by_rule: dict = field(default_factory=dict)
    """Triplets whose positive each positive rule selects (a positive may have several)."""
    negatives: dict = field(default_factory=lambda: {"same_tag": 0, "fallback": 0})


@dataclass(frozen=True)
class _Positive:
    post_id: str
    text: str
    rules: tuple[str, ...]


def _check_fields(source: str, records: list[dict], rules: TripletRules) -> None:
    """A rule that is on needs its field in the collection (in any record: an answer whose
    question is missing from a dump has no ``accepted``)."""
    for name, key in rules.needed_fields().items():
        if records and not any(name in record for record in records):
            raise ConfigError(
                f"config: {key}: collection {source!r} has no {name!r} field (its reader or "
                "sources do not provide it); switch the rule off for this training data"
            )


def _created_before(record: dict, before: datetime) -> bool:
    dates = [record[key] for key in ("date", "question_date") if key in record]
    return all(datetime.fromisoformat(date) < before for date in dates)


def build_triplets(
    answer_sets: Sequence[tuple[str, Iterable[dict]]],
    excluded_posts: set[str],
    seed: int,
    rules: TripletRules = TripletRules(),
    query_fields: Sequence[str] = ("title", "question"),
    passage_fields: Sequence[str] = ("text",),
) -> tuple[list[dict], TripletCounts]:
    """Triplets from canonical answer records (``id``, ``question_id``, ``tags``, texts and the
    fields the rules read). ``answer_sets`` are (source name, records) pairs;
    ``excluded_posts`` holds topic ids and judged post ids.
    """
    counts = TripletCounts()
    answers: dict[str, dict] = {}
    questions: dict[str, dict] = {}
    thread: dict[str, list[str]] = defaultdict(list)
    source_of: dict[str, str] = {}
    excluded_questions: set[str] = set()
    before = datetime.fromisoformat(rules.before) if rules.before is not None else None
    for source, records in answer_sets:
        listed = list(records)
        _check_fields(source, listed, rules)
        for record in listed:
            counts.answers += 1
            question = str(record["question_id"])
            if question in excluded_posts:
                excluded_questions.add(question)
                continue
            if record["id"] in excluded_posts:
                counts.excluded_judged_answers += 1
                continue
            if before is not None and not _created_before(record, before):
                counts.dropped_by_date += 1
                continue
            answers[record["id"]] = record
            questions.setdefault(question, record)
            thread[question].append(record["id"])
            source_of[question] = source
    counts.excluded_topic_questions = len(excluded_questions)
    by_tag: dict[str, list[str]] = defaultdict(list)
    for answer_id in sorted(answers):
        for tag in sorted(set(answers[answer_id].get("tags") or [])):
            by_tag[tag].append(answer_id)
    # A tag is a usable negative source for a question when another question has it too.
    tag_questions = {
        tag: {str(answers[a]["question_id"]) for a in ids} for tag, ids in by_tag.items()
    }
    everything = sorted(answers)
    rng = random.Random(seed)
    counts.by_rule = {rule: 0 for rule in rules.positive_rules()}

    def passage(answer_id: str) -> str:
        return document_text(answers[answer_id], passage_fields, separator="\n")

    def accepted_of(question: str) -> list[str]:
        return [a for a in sorted(thread[question]) if answers[a].get("accepted") is True]

    def positives_of(question: str) -> list[_Positive]:
        found = []
        for answer_id in sorted(thread[question]):
            record = answers[answer_id]
            selected = {
                "accepted": rules.accepted and record.get("accepted") is True,
                "min_score": rules.min_score is not None
                and int(record.get("score", rules.min_score - 1)) >= rules.min_score,
                "all_answers": rules.all_answers,
            }
            matched = tuple(rule for rule in POSITIVE_RULES if selected.get(rule))
            if matched:
                found.append(_Positive(answer_id, passage(answer_id), matched))
        if rules.duplicates:
            for duplicate in questions[question].get("duplicates") or []:
                if duplicate in excluded_posts:
                    continue
                if duplicate not in questions:
                    counts.duplicates_not_in_corpus += 1
                    continue
                text = document_text(questions[duplicate], query_fields, separator="\n")
                found.append(_Positive(duplicate, text, ("duplicates",)))
                found += [_Positive(a, passage(a), ("duplicates",)) for a in accepted_of(duplicate)]
        return found

    def negative_of(question: str) -> str | None:
        tags = sorted(
            tag
            for tag in set(questions[question].get("tags") or [])
            if tag_questions[tag] - {question}
        )
        if rules.same_tag and tags:
            pool = by_tag[tags[rng.randrange(len(tags))]]
            counts.negatives["same_tag"] += 1
        elif len(questions) > 1:
            pool = everything
            counts.negatives["fallback"] += 1
        else:
            return None
        while True:  # ends: the pool holds an answer of another question
            negative = pool[rng.randrange(len(pool))]
            if str(answers[negative]["question_id"]) != question:
                return negative

    triplets = []
    for question in sorted(thread):
        counts.questions += 1
        positives = positives_of(question)
        if not positives:
            counts.questions_without_positive += 1
            continue
        query = document_text(questions[question], query_fields, separator="\n")
        for positive in positives:
            negative = negative_of(question)
            if negative is None:
                counts.positives_without_negative += 1
                continue
            triplets.append(
                {
                    "query_id": question,
                    "query": query,
                    "positive_id": positive.post_id,
                    "positive": positive.text,
                    "negative_id": negative,
                    "negative": passage(negative),
                }
            )
            for rule in positive.rules:
                counts.by_rule[rule] += 1
            source = source_of[question]
            counts.by_source[source] = counts.by_source.get(source, 0) + 1
    _check_yields(rules, counts)
    rng.shuffle(triplets)
    counts.triplets = len(triplets)
    return triplets, counts


def _check_yields(rules: TripletRules, counts: TripletCounts) -> None:
    """A rule that is on and yields nothing is a configuration error naming it."""
    empty = [f"{KEY}.positives.{rule}" for rule, n in counts.by_rule.items() if n == 0]
    if rules.same_tag and not counts.negatives["same_tag"]:
        empty.append(f"{KEY}.negatives.same_tag")
    if empty:
        raise ConfigError(
            f"config: {empty[0]}: the rule is on but yields no triplets from this training data "
            f"(counts so far: {counts.by_rule}, negatives {counts.negatives}); switch it off"
        )


def read_triplets(path: str | Path) -> list[dict]:
    """Triplets JSON Lines; a line missing a key is reported with file and line."""
    triplets = []
    with open(path, encoding="utf-8") as handle:
        for number, value in json_lines(handle, path):
            missing = [key for key in TRIPLET_KEYS if not isinstance(value.get(key), str)]
            if missing:
                raise InputFormatError(path, number, f"triplet lacks {', '.join(missing)}")
            triplets.append(value)
    if not triplets:
        raise InputFormatError(path, None, "no triplets")
    return triplets
