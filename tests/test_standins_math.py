"""The math stand-ins of tests/standins_math.py, read through the project's own readers: what
the paper configuration's jobs need of them is there (counts, dates on both sides of the
training cut-off, votes, duplicates, judged posts in the corpus, labels, external runs)."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest
import standins_math as standins
import yaml

from hybrid_ir.data.collections import convert, get_reader
from hybrid_ir.data.runs import read_run
from hybrid_ir.neural.triplets import TripletRules, build_triplets

REPO = Path(__file__).resolve().parents[1]
CUTOFF = "2018-01-01"  # the paper's training cut-off (math_models.triplets.before)
PYA0 = "arqmath/pya0-topics-and-qrels"
SAMPLES = "arqmath/collection-samples"
SETS = {"arqmath1": standins.ARQMATH1, "arqmath2": standins.ARQMATH2}
TOPIC_SOURCES = {
    "topics_arqmath1": f"{PYA0}/topics.arqmath-2020-task1-origin.xml",
    "topics_arqmath2": f"{PYA0}/topics.arqmath-2021-task1-origin.xml",
    "qrels_arqmath1": f"{PYA0}/qrels.arqmath-2020-task1.txt",
    "qrels_arqmath2": f"{PYA0}/qrels.arqmath-2021-task1-official.txt",
    "labels_arqmath1": "arqmath/topic-info/mathdowsers/task1_2020_topic_info.json",
    "labels_arqmath2": "arqmath/topic-info/Task1_ARQMath2_Topic_Information.csv",
}
# What both ARQMath formats give every answer, so the samples must equal the full dump there.
SHARED_KEYS = ("id", "title", "text", "question_id", "question", "tags", "formulas")


@pytest.fixture(scope="module")
def standin_mirror(tmp_path_factory) -> Path:
    """A mirror holding every stand-in."""
    root = tmp_path_factory.mktemp("standins")
    standins.write_files(root)
    return root


def _sources(mirror: Path, **main: str) -> dict[str, Path]:
    return {role: mirror / path for role, path in (main | TOPIC_SOURCES).items()}


@pytest.fixture(scope="module")
def full(standin_mirror: Path):
    """The paper configuration's ARQMath collection: Posts.xml, PostLinks.xml, both years."""
    sources = _sources(
        standin_mirror,
        posts="arqmath/full/Posts.V1.3.xml",
        post_links="arqmath/full/PostLinks.V1.3.xml",
    )
    collection = get_reader("arqmath_posts_xml")(sources)
    collection.docs = list(collection.docs or [])
    return collection


def test_every_external_run_of_config_yaml_has_a_stand_in() -> None:
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    paths = [
        entry["path"] if isinstance(entry, dict) else entry
        for by_set in config["external_runs"].values()
        for runs in by_set.values()
        for entry in runs.values()
    ]
    assert paths and set(paths) <= set(standins.FILES)


def test_full_posts_answers_questions_votes_and_dates(full) -> None:
    docs = full.docs
    assert len(docs) == 240 and len({doc["id"] for doc in docs}) == 240
    assert len({doc["question_id"] for doc in docs}) == 60
    assert all(doc["title"] and doc["question"] and doc["text"] and doc["tags"] for doc in docs)
    assert sum("$" in doc["text"] for doc in docs) >= 200  # most answers hold a formula
    assert all(doc["date"] >= doc["question_date"] for doc in docs)
    for key in ("date", "question_date"):
        dates = [doc[key] for doc in docs]
        assert min(dates) < "2011" and max(dates) < "2020"
        assert sum(date < CUTOFF for date in dates) > 150 and sum(date >= CUTOFF for date in dates)
    # Answered in 2018 to a question of 2017: the cut-off drops answers, not only questions.
    assert any(doc["question_date"] < CUTOFF <= doc["date"] for doc in docs)
    voted = [doc for doc in docs if doc["score"] >= 8]
    assert len(voted) == 60 and sum(doc["score"] < 8 for doc in docs) == 180
    assert sum(doc["date"] < CUTOFF for doc in voted) >= 40
    assert sum(doc["accepted"] for doc in docs) == 45


def test_post_links_give_duplicates_before_and_across_the_cut_off(full) -> None:
    question_dates = {doc["question_id"]: doc["question_date"] for doc in full.docs}
    pairs = {(doc["question_id"], d) for doc in full.docs for d in doc["duplicates"]}
    assert len(pairs) == 48  # 24 LinkTypeId 3 rows, either way round; type 1 is left out
    early = [pair for pair in pairs if max(question_dates[q] for q in pair) < CUTOFF]
    assert len(early) == 24 and all(d in question_dates for _, d in pairs)


@pytest.mark.parametrize("set_name", ["arqmath1", "arqmath2"])
def test_topics_qrels_and_labels(full, set_name: str) -> None:
    topic_ids = [topic["id"] for topic in full.topics[set_name]]
    assert topic_ids == SETS[set_name]
    assert all("$" in topic["title"] + topic["text"] for topic in full.topics[set_name])
    assert all(topic["formulas"] and topic["tags"] for topic in full.topics[set_name])
    corpus = {doc["id"] for doc in full.docs}
    judgments = full.qrels[set_name]
    assert len(judgments) == 120 and {j.doc_id for j in judgments} <= corpus
    per_topic = Counter(j.query_id for j in judgments)
    assert per_topic == dict.fromkeys(topic_ids, 10)
    relevant = Counter(j.query_id for j in judgments if j.relevance >= 2)
    assert all(relevant[topic] >= 2 for topic in topic_ids)
    assert {j.relevance for j in judgments} == {0, 1, 2, 3}
    rows = [row for row in full.tables["topic_labels"] if row["set"] == set_name]
    assert sorted(row["topic_id"] for row in rows) == sorted(topic_ids)
    for label in ("category", "difficulty", "dependency"):
        counts = Counter(row[label] for row in rows)
        assert len(counts) == 3 and min(counts.values()) >= 2, (label, counts)


def test_queries_share_words_with_their_judged_answers(full) -> None:
    """BM25 must find something: every topic shares words with its relevant answers."""
    texts = {doc["id"]: set(doc["text"].lower().split()) for doc in full.docs}
    for set_name in SETS:
        topics = full.topics[set_name]
        words = {t["id"]: set(f"{t['title']} {t['text']}".lower().split()) for t in topics}
        for judgment in full.qrels[set_name]:
            if judgment.relevance >= 2:
                assert len(words[judgment.query_id] & texts[judgment.doc_id]) >= 3


def test_convert_writes_every_canonical_file(standin_mirror: Path, tmp_path: Path) -> None:
    sources = _sources(standin_mirror, posts="arqmath/full/Posts.V1.3.xml")
    outputs = {
        key: tmp_path / key
        for key in ("corpus", "topics_arqmath1", "topics_arqmath2", "qrels_arqmath1")
        + ("qrels_arqmath2", "table_topic_labels")
    }
    counts = convert("arqmath_posts_xml", sources, outputs)
    assert counts == {
        "corpus": 240,
        "topics_arqmath1": 12,
        "topics_arqmath2": 12,
        "qrels_arqmath1": 120,
        "qrels_arqmath2": 120,
        "table_topic_labels": 24,
    }


def test_paper_training_rules_each_find_triplets(full) -> None:
    """The paper's rules (before 2018, accepted, duplicates, score >= 8, same-tag negatives)
    each yield triplets once topics and judged posts are left out, as the workflow does."""
    excluded = {j.doc_id for judgments in full.qrels.values() for j in judgments}
    excluded |= {topic["id"] for topics in full.topics.values() for topic in topics}
    _, counts = build_triplets([("arqmath", full.docs)], excluded, seed=1234, rules=TripletRules())
    assert counts.dropped_by_date > 0 and counts.excluded_judged_answers > 0
    assert all(n > 0 for n in counts.by_rule.values()) and counts.negatives["same_tag"] > 0


def test_approach0_sample_is_an_excerpt_of_the_dump(standin_mirror: Path, full) -> None:
    sources = {"posts": standin_mirror / SAMPLES / "approach0-search-engine_sample.xml"}
    docs = list(get_reader("arqmath_posts_xml")(sources).docs or [])
    assert len(docs) == 20 and len({doc["question_id"] for doc in docs}) == 5
    by_id = {doc["id"]: doc for doc in full.docs}
    assert [{**doc, "duplicates": by_id[doc["id"]]["duplicates"]} for doc in docs] == [
        by_id[doc["id"]] for doc in docs
    ]
    judged = {j.doc_id for judgments in full.qrels.values() for j in judgments}
    assert 0 < sum(doc["id"] in judged for doc in docs) < 20


def test_html_threads_render_as_the_dump_does(standin_mirror: Path, full) -> None:
    sources = _sources(
        standin_mirror, threads=f"{SAMPLES}/mathdowsers_html_minimal_2021_selected.tar.gz"
    )
    collection = get_reader("arqmath_html")(sources)
    docs = collection.docs
    assert len(docs) == 32 and len({doc["question_id"] for doc in docs}) == 8
    by_id = {doc["id"]: doc for doc in full.docs}
    for doc in docs:
        assert doc == {key: by_id[doc["id"]][key] for key in SHARED_KEYS}
    judged = {j.doc_id for judgments in collection.qrels.values() for j in judgments}
    assert 12 <= sum(doc["id"] in judged for doc in docs) < 32
    assert len(collection.tables["topic_labels"]) == 24


@pytest.mark.parametrize(
    ("path", "pairs"),
    [
        ("math-text/stackmathqa100k.tar.gz", 60),
        ("math-text/stackmathqa100k_available_shards.tar.gz", 50),
    ],
)
def test_stackmathqa_pairs(standin_mirror: Path, path: str, pairs: int) -> None:
    docs = list(get_reader("stackmathqa")({"shards": standin_mirror / path}).docs or [])
    assert len(docs) == pairs and len({doc["id"] for doc in docs}) == pairs
    assert all(doc["question"] and doc["text"] for doc in docs)
    assert sum("$" in doc["question"] + doc["text"] for doc in docs) >= pairs * 0.8
    assert {doc["id"].split("-")[0] for doc in docs} == {
        "math.stackexchange.com",
        "mathoverflow.net",
    }


def test_external_runs_rank_judged_answers_of_every_arqmath1_topic(
    standin_mirror: Path, full
) -> None:
    corpus = {doc["id"] for doc in full.docs}
    relevant = {(j.query_id, j.doc_id) for j in full.qrels["arqmath1"] if j.relevance >= 2}
    paths = standins.external_run_paths()
    seen = []
    for path in paths:
        raw = (standin_mirror / path).read_bytes()
        assert (raw[:2] == b"\x1f\x8b") == path.endswith(".gz")
        run = read_run(standin_mirror / path)
        assert list(run) == standins.ARQMATH1
        assert all(0 < len(docs) <= 50 and set(docs) <= corpus for docs in run.values())
        assert any((topic, doc) in relevant for topic, docs in run.items() for doc in docs)
        seen.append(gzip.decompress(raw) if path.endswith(".gz") else raw)
    assert len(set(seen)) == len(paths)  # a different ranking per run
