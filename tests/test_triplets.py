"""Fine-tuning triplets by paper 000's rules (§3.3), read from a generated Posts.xml and
PostLinks.xml in the official formats: each rule on and off, the date cut-off, tag-sharing
negatives, leakage exclusion, seeding, and the errors of a rule that cannot apply."""

import json
from dataclasses import replace
from html import escape
from pathlib import Path

import pytest

from hybrid_ir.data.collections import get_reader
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural.triplets import TripletRules, build_triplets, read_triplets


def _row(**attributes: str) -> str:
    pairs = " ".join(f'{name}="{escape(value)}"' for name, value in attributes.items())
    return f"  <row {pairs} />"


def _question(post_id, date, tags, accepted=None):
    extra = {"AcceptedAnswerId": accepted} if accepted else {}
    return _row(
        Id=post_id,
        PostTypeId="1",
        CreationDate=f"{date}T10:00:00.000",
        Score="3",
        Title=f"title {post_id}",
        Body=f"<p>body {post_id}</p>",
        Tags="".join(f"<{tag}>" for tag in tags),
        **extra,
    )


def _answer(post_id, parent, date, score):
    return _row(
        Id=post_id,
        PostTypeId="2",
        ParentId=parent,
        CreationDate=f"{date}T11:00:00.000",
        Score=str(score),
        Body=f"<p>answer {post_id}</p>",
    )


POSTS = [
    _question("1", "2015-01-01", ["algebra"], accepted="11"),
    _answer("11", "1", "2015-01-02", 2),
    _answer("12", "1", "2015-01-03", 9),
    _answer("13", "1", "2015-01-04", 1),
    _question("2", "2016-01-01", ["algebra", "calculus"]),
    _answer("21", "2", "2016-01-02", 8),
    _answer("22", "2", "2016-01-03", 0),
    _question("3", "2016-02-01", ["calculus"], accepted="31"),
    _answer("31", "3", "2016-02-02", 0),
    _answer("32", "3", "2018-03-01", 3),  # after the cut-off
    _question("4", "2018-05-01", ["algebra"], accepted="41"),  # after the cut-off
    _answer("41", "4", "2018-05-02", 20),
    _question("5", "2017-01-01", ["topology"], accepted="51"),  # no other question has its tag
    _answer("51", "5", "2017-01-02", 1),
    _question("6", "2014-01-01", ["algebra"]),  # a duplicate of question 1
    _answer("61", "6", "2014-01-02", 0),
]


def _link(link_id, post, related, kind):
    date = "2015-02-01T00:00:00.000"
    return _row(Id=link_id, CreationDate=date, PostId=post, RelatedPostId=related, LinkTypeId=kind)


LINKS = [_link("1", "6", "1", "3"), _link("2", "2", "3", "1"), _link("3", "1", "7", "3")]
DEFAULT_PAIRS = {
    ("1", "11"),  # accepted
    ("1", "12"),  # score 9
    ("1", "6"),  # duplicate question 6 itself
    ("2", "21"),  # score 8
    ("3", "31"),  # accepted
    ("5", "51"),  # accepted
    ("6", "1"),  # duplicate question 1 itself
    ("6", "11"),  # the accepted answer of duplicate question 1
}
TAGS = {"1": {"algebra"}, "2": {"algebra", "calculus"}, "3": {"calculus"}, "5": {"topology"}}
TAGS |= {"4": {"algebra"}, "6": {"algebra"}}


def _xml(path: Path, root: str, rows: list[str]) -> Path:
    text = "\n".join(['<?xml version="1.0" encoding="utf-8"?>', f"<{root}>", *rows, f"</{root}>"])
    path.write_text(text + "\n", encoding="utf-8")
    return path


@pytest.fixture
def records(tmp_path):
    sources = {
        "posts": _xml(tmp_path / "Posts.xml", "posts", POSTS),
        "post_links": _xml(tmp_path / "PostLinks.xml", "postlinks", LINKS),
    }
    docs = get_reader("arqmath_posts_xml")(sources).docs
    assert docs is not None
    return list(docs)


def _pairs(triplets):
    return {(t["query_id"], t["positive_id"]) for t in triplets}


def test_paper_rules_by_default(records):
    triplets, counts = build_triplets([("posts", records)], set(), seed=1)
    assert _pairs(triplets) == DEFAULT_PAIRS
    assert counts.by_rule == {"accepted": 3, "duplicates": 3, "min_score": 2}
    assert counts.dropped_by_date == 2  # answer 32, and question 4 with its answer 41
    assert counts.duplicates_not_in_corpus == 1  # question 7 is not in Posts.xml
    assert counts.negatives == {"same_tag": 7, "fallback": 1}  # question 5's "topology"
    assert counts.triplets == 8 and counts.by_source == {"posts": 8}
    assert counts.questions == 5 and counts.questions_without_positive == 0
    by_id = {"1": "title 1\nbody 1", "6": "title 6\nbody 6", "11": "answer 11"}
    for triplet in triplets:
        query, negative = triplet["query_id"], triplet["negative_id"]
        assert triplet["query"] == f"title {query}\nbody {query}"
        assert triplet["positive"] == by_id.get(triplet["positive_id"], triplet["positive"])
        assert triplet["negative"] == f"answer {negative}"
        assert negative[0] != query  # answer ids start with their question's id
        assert negative not in {"32", "41"}  # the cut-off holds for negatives too
        if query != "5":
            assert TAGS[query] & TAGS[negative[0]], triplet


@pytest.mark.parametrize(
    ("change", "pairs"),
    [
        ({"accepted": False}, DEFAULT_PAIRS - {("1", "11"), ("3", "31"), ("5", "51")}),
        ({"duplicates": False}, DEFAULT_PAIRS - {("1", "6"), ("6", "1"), ("6", "11")}),
        ({"min_score": None}, DEFAULT_PAIRS - {("1", "12"), ("2", "21")}),
        ({"min_score": 9}, DEFAULT_PAIRS - {("2", "21")}),
        ({"all_answers": True}, DEFAULT_PAIRS | {("1", "13"), ("2", "22"), ("6", "61")}),
        ({"before": None}, DEFAULT_PAIRS | {("4", "41")}),
        ({"before": "2016-01-15"}, DEFAULT_PAIRS - {("3", "31"), ("5", "51")}),
    ],
)
def test_each_rule_on_and_off(records, change, pairs):
    rules = replace(TripletRules(), **change)
    triplets, counts = build_triplets([("posts", records)], set(), seed=1, rules=rules)
    assert _pairs(triplets) == pairs
    assert counts.triplets == len(pairs)


def test_date_cut_off_counts_what_it_drops(records):
    _, counts = build_triplets(
        [("posts", records)], set(), seed=1, rules=TripletRules(before="2016-01-15")
    )
    # Questions 3, 4 and 5 are too recent, so are their answers 31, 32, 41 and 51.
    assert counts.dropped_by_date == 4 and counts.questions == 3


def test_negatives_without_tags_are_any_other_answer(records):
    rules = TripletRules(same_tag=False)
    triplets, counts = build_triplets([("posts", records)], set(), seed=1, rules=rules)
    assert _pairs(triplets) == DEFAULT_PAIRS
    assert counts.negatives == {"same_tag": 0, "fallback": 8}
    assert all(t["negative_id"][0] != t["query_id"] for t in triplets)


def test_judged_posts_and_topics_are_never_training_data(records):
    triplets, counts = build_triplets([("posts", records)], {"11", "12", "3"}, seed=1)
    # Answer 11 is judged: neither question 1's accepted positive nor question 6's duplicate one.
    assert _pairs(triplets) == {("1", "6"), ("2", "21"), ("5", "51"), ("6", "1")}
    assert counts.excluded_topic_questions == 1 and counts.excluded_judged_answers == 2
    used = {t[key] for t in triplets for key in ("query_id", "positive_id", "negative_id")}
    assert not used & {"11", "12", "3", "31", "32"}


def test_triplets_depend_only_on_the_seed(records):
    first, _ = build_triplets([("posts", records)], set(), seed=5)
    again, _ = build_triplets([("posts", records)], set(), seed=5)
    other, _ = build_triplets([("posts", records)], set(), seed=6)
    assert first == again and first != other


def test_a_rule_that_yields_nothing_names_its_key(records, tmp_path):
    no_duplicates = [{**record, "duplicates": []} for record in records]
    with pytest.raises(ConfigError, match=r"math_models\.triplets\.positives\.duplicates: "):
        build_triplets([("posts", no_duplicates)], set(), seed=1)
    with pytest.raises(ConfigError, match=r"math_models\.triplets\.positives\.min_score: "):
        build_triplets([("posts", records)], set(), seed=1, rules=TripletRules(min_score=100))
    untagged = [{**record, "tags": []} for record in records]
    with pytest.raises(ConfigError, match=r"math_models\.triplets\.negatives\.same_tag: "):
        build_triplets([("posts", untagged)], set(), seed=1)


def test_a_rule_whose_field_the_collection_lacks_names_rule_and_collection(records):
    threads = [{k: v for k, v in r.items() if k not in ("date", "question_date")} for r in records]
    with pytest.raises(ConfigError, match=r"math_models\.triplets\.before: collection 'threads'"):
        build_triplets([("posts", records), ("threads", threads)], set(), seed=1)
    without_links = [{k: v for k, v in r.items() if k != "duplicates"} for r in records]
    with pytest.raises(ConfigError, match=r"positives\.duplicates: collection 'posts' has no"):
        build_triplets([("posts", without_links)], set(), seed=1)


def test_rules_from_validated_settings():
    settings = {
        "before": None,
        "positives": {"accepted": False, "duplicates": False, "min_score": 7, "all_answers": True},
        "negatives": {"same_tag": False},
    }
    rules = TripletRules.from_settings(settings)
    assert rules == TripletRules(None, False, False, 7, True, False)
    assert rules.positive_rules() == ["min_score", "all_answers"]


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
