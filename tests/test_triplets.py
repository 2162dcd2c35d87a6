"""Fine-tuning triplets: positives, tag-sharing hard negatives, leakage exclusion, seeding."""

import json

import pytest

from hybrid_ir.errors import InputFormatError
from hybrid_ir.neural.triplets import build_triplets, read_triplets


def _answer(answer, question, tags, **extra):
    texts = {
        "title": f"title {question}",
        "question": f"body {question}",
        "text": f"answer {answer}",
    }
    return {"id": answer, "question_id": question, "tags": tags, **texts, **extra}


THREADS = [
    _answer("11", "1", ["algebra"]),
    _answer("12", "1", ["algebra"]),
    _answer("21", "2", ["algebra", "calculus"]),
    _answer("31", "3", ["calculus"]),
    _answer("41", "4", ["topology"]),  # no other question shares its tag
    _answer("51", "5", ["calculus"]),
]
POSTS = [
    _answer("61", "6", ["algebra"], score=3, accepted=True),
    _answer("62", "6", ["algebra"], score=8, accepted=False),
    _answer("63", "6", ["algebra"], score=7, accepted=False),  # 7 is not more than 7
]


def test_positives_negatives_and_exclusions():
    triplets, counts = build_triplets(
        [("threads", THREADS), ("posts", POSTS)], excluded_posts={"12", "5"}, seed=1
    )
    pairs = {(t["query_id"], t["positive_id"]) for t in triplets}
    assert pairs == {("1", "11"), ("2", "21"), ("3", "31"), ("6", "61"), ("6", "62")}
    answers = {a["id"]: a for a in THREADS + POSTS}
    for triplet in triplets:
        query_tags = set(answers[triplet["positive_id"]]["tags"])
        negative = answers[triplet["negative_id"]]
        assert negative["question_id"] != triplet["query_id"]
        assert query_tags & set(negative["tags"])
        assert triplet["negative_id"] not in {"12", "51"}
        assert triplet["query"] == f"title {triplet['query_id']}\nbody {triplet['query_id']}"
        assert triplet["positive"] == f"answer {triplet['positive_id']}"
    assert counts.excluded_judged_answers == 1 and counts.excluded_topic_questions == 1
    assert counts.positives_without_negative == 1  # question 4: nobody shares "topology"
    assert counts.triplets == 5 and counts.by_source == {"threads": 3, "posts": 2}


def test_triplets_depend_only_on_the_seed():
    first, _ = build_triplets([("threads", THREADS)], set(), seed=5)
    again, _ = build_triplets([("threads", THREADS)], set(), seed=5)
    assert first == again


def test_read_triplets_reports_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    good = {k: "x" for k in ("query_id", "query", "positive_id", "positive", "negative_id",
                              "negative")}  # fmt: skip
    path.write_text(json.dumps(good) + "\n" + json.dumps({"query": "x"}) + "\n")
    with pytest.raises(InputFormatError, match=r"t.jsonl:2: triplet lacks query_id"):
        read_triplets(path)
    path.write_text(json.dumps(good) + "\n{oops\n")
    with pytest.raises(InputFormatError, match=r"t.jsonl:2: invalid JSON"):
        read_triplets(path)
