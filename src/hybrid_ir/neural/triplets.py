"""Fine-tuning triplets (query, positive, hard negative) from ARQMath posts (paper 000, §3.3).

Queries are questions (title + body). Positives: from the thread format, each answer of the
question's thread; from Posts.xml (records with ``score``/``accepted``), the accepted answer
and answers with more than ``min_upvotes`` votes (duplicate-question links live in
PostLinks.xml, which no reader here supplies). The hard negative is a random answer to another
question that shares a tag with the query question; a question whose tags no other question
has yields no triplet and is counted.

No leakage: every topic id and every post judged in any qrels file is dropped as a query, a
positive or a negative, so no evaluation judgment is ever trained on. All draws come from one
generator seeded from configuration, over questions in id order, so the file is reproducible.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_ir.errors import InputFormatError
from hybrid_ir.formats import json_lines
from hybrid_ir.neural.dense import document_text

TRIPLET_KEYS = ("query_id", "query", "positive_id", "positive", "negative_id", "negative")


@dataclass
class TripletCounts:
    questions: int = 0
    answers: int = 0
    excluded_judged_answers: int = 0
    excluded_topic_questions: int = 0
    questions_without_positive: int = 0
    positives_without_negative: int = 0
    triplets: int = 0
    by_source: dict = field(default_factory=dict)


def _is_positive(record: dict, min_upvotes: int) -> bool:
    """Thread-format answers carry no votes and are all positives; Posts.xml ones are filtered."""
    if "score" not in record and "accepted" not in record:
        return True
    return bool(record.get("accepted")) or int(record.get("score") or 0) > min_upvotes


def build_triplets(
    answer_sets: Sequence[tuple[str, Iterable[dict]]],
    excluded_posts: set[str],
    seed: int,
    min_upvotes: int = 7,
    query_fields: Sequence[str] = ("title", "question"),
    passage_fields: Sequence[str] = ("text",),
) -> tuple[list[dict], TripletCounts]:
    """Triplets from canonical answer records (``id``, ``question_id``, ``tags``, texts).

    ``answer_sets`` are (source name, records) pairs; ``excluded_posts`` holds topic ids and
    judged post ids.
    """
    counts = TripletCounts()
    answers: dict[str, dict] = {}
    questions: dict[str, dict] = {}
    thread: dict[str, list[str]] = defaultdict(list)
    source_of: dict[str, str] = {}
    excluded_questions: set[str] = set()
    for source, records in answer_sets:
        for record in records:
            counts.answers += 1
            question = str(record["question_id"])
            if question in excluded_posts:
                excluded_questions.add(question)
                continue
            if record["id"] in excluded_posts:
                counts.excluded_judged_answers += 1
                continue
            answers[record["id"]] = record
            questions[question] = record
            thread[question].append(record["id"])
            source_of[question] = source
    counts.excluded_topic_questions = len(excluded_questions)
    by_tag: dict[str, list[str]] = defaultdict(list)
    for answer_id in sorted(answers):
        for tag in sorted(set(answers[answer_id].get("tags") or [])):
            by_tag[tag].append(answer_id)
    rng = random.Random(seed)
    triplets = []
    for question in sorted(thread):
        counts.questions += 1
        first = questions[question]
        positives = [a for a in sorted(thread[question]) if _is_positive(answers[a], min_upvotes)]
        if not positives:
            counts.questions_without_positive += 1
            continue
        candidates = sorted(
            {
                a
                for tag in set(first.get("tags") or [])
                for a in by_tag[tag]
                if str(answers[a]["question_id"]) != question
            }
        )
        query = document_text(first, query_fields, separator="\n")
        for positive in positives:
            if not candidates:
                counts.positives_without_negative += 1
                continue
            negative = candidates[rng.randrange(len(candidates))]
            triplets.append(
                {
                    "query_id": question,
                    "query": query,
                    "positive_id": positive,
                    "positive": document_text(answers[positive], passage_fields, separator="\n"),
                    "negative_id": negative,
                    "negative": document_text(answers[negative], passage_fields, separator="\n"),
                }
            )
            counts.by_source[source_of[question]] = counts.by_source.get(source_of[question], 0) + 1
    rng.shuffle(triplets)
    counts.triplets = len(triplets)
    return triplets, counts


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
