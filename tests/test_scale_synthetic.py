"""The scale benchmark's synthetic Posts.xml is in the official format: the workflow's reader
reads it whole, and its shape is ARQMath's (benchmarks/scale.py)."""

from __future__ import annotations

import importlib.util
import re
import statistics
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hybrid_ir.data.collections.arqmath import PostsStats, read_posts_answers

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"
_SPAN = re.compile(r'<span class="math-container" id="(\d+)">\$(.*?)\$</span>', re.DOTALL)


@pytest.fixture(scope="module")
def scale():
    spec = importlib.util.spec_from_file_location("scale_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while being defined
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SCRIPT.parent))  # where its `import harness` finds the harness
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def harness(scale):
    return sys.modules["harness"]


def _rows(path: Path) -> list[dict[str, str]]:
    """The rows as ElementTree reads them: a parser independent of the workflow's reader."""
    return [dict(row.attrib) for row in ET.parse(path).getroot().iter("row")]


def test_tiny_file_reads_into_every_answer_question_and_formula(scale, tmp_path):
    path = tmp_path / "Posts.xml"
    counts = scale.write_posts(path, 20)
    rows = _rows(path)
    questions = {row["Id"]: row for row in rows if row["PostTypeId"] == "1"}
    answers = [row for row in rows if row["PostTypeId"] == "2"]
    assert (counts["answers"], counts["questions"]) == (20, 14) == (len(answers), len(questions))
    assert [int(row["Id"]) for row in rows] == list(range(1, len(rows) + 1))

    stats = PostsStats()
    docs = list(read_posts_answers(path, stats))
    assert (stats.answers, stats.orphans, len(docs)) == (20, 0, 20)
    assert [doc["id"] for doc in docs] == [row["Id"] for row in answers]
    for doc, row in zip(docs, answers, strict=True):
        question = questions[row["ParentId"]]
        assert doc["question_id"] == row["ParentId"]
        assert doc["tags"] == re.findall(r"<([^>]+)>", question["Tags"])
        assert doc["accepted"] == (question.get("AcceptedAnswerId") == row["Id"])
        # The formulas, in reading order: title, question body, answer body.
        spans = [
            {"id": formula_id, "latex": latex.replace("&lt;", "<").replace("&gt;", ">")}
            for html in (question["Title"], question["Body"], row["Body"])
            for formula_id, latex in _SPAN.findall(html)
        ]
        assert doc["formulas"] == spans
        assert doc["text"].count("$") == 2 * len(_SPAN.findall(row["Body"]))

    # Every formula the generator wrote is a span with its own id, numbered in file order.
    all_spans = [
        int(formula_id)
        for row in rows
        for html in (row.get("Title", ""), row["Body"])
        for formula_id, _ in _SPAN.findall(html)
    ]
    assert all_spans == list(range(1, counts["formulas"] + 1))
    answered = {doc["question_id"] for doc in docs}
    assert answered == {q for q, row in questions.items() if row["AnswerCount"] != "0"}


def test_same_seed_same_file_other_seed_other_file(scale, tmp_path):
    first, second, other = (tmp_path / name for name in ("a.xml", "b.xml", "c.xml"))
    scale.write_posts(first, 30)
    scale.write_posts(second, 30)
    scale.write_posts(other, 30, seed=scale.SEED + 1)
    assert first.read_bytes() == second.read_bytes() != other.read_bytes()


def test_shape_follows_the_arqmath_sample(scale, tmp_path):
    """Formulas and words per post near the figures the generator is calibrated on (the ARQMath
    HTML sample: 12.3 formulas and 119 words per answer, 7.6 formulas per question)."""
    path = tmp_path / "Posts.xml"
    counts = scale.write_posts(path, 2000)
    docs = list(read_posts_answers(path))
    rows = {row["Id"]: row for row in _rows(path)}
    answer_formulas = [len(_SPAN.findall(rows[doc["id"]]["Body"])) for doc in docs]
    words = [len(re.sub(r"\$[^$]*\$", " ", doc["text"]).split()) for doc in docs]
    question_ids = {doc["question_id"] for doc in docs}
    question_formulas = [
        len(_SPAN.findall(rows[q]["Title"] + rows[q]["Body"])) for q in question_ids
    ]
    assert counts["questions"] / counts["answers"] == pytest.approx(1 / 1.4, abs=0.01)
    assert statistics.mean(answer_formulas) == pytest.approx(12.3, rel=0.2)
    assert statistics.mean(question_formulas) == pytest.approx(7.6, rel=0.2)
    assert statistics.mean(words) == pytest.approx(119, rel=0.2)
    assert statistics.median(words) == pytest.approx(57, rel=0.2)
    assert counts["formulas"] / counts["answers"] == pytest.approx(12.3 + 7.6 / 1.4, rel=0.15)


def test_approach0_indexes_the_converted_corpus_streamed(scale, harness, tmp_path):
    """The benchmark's Approach0 stage (the harness's, which structure.py shares): the
    workflow's reader, then index_corpus over the canonical corpus, each answer rendered with
    its question (every formula counted)."""
    from hybrid_ir.data.formats import write_records
    from hybrid_ir.retrieval.approach0 import index_is_complete

    scale.write_posts(tmp_path / "Posts.xml", 20)
    docs = list(read_posts_answers(tmp_path / "Posts.xml"))
    write_records(tmp_path / "corpus.jsonl", docs)
    stats = harness.approach0_index(tmp_path / "corpus.jsonl", tmp_path / "index", tmp_path)
    assert index_is_complete(tmp_path / "index")
    assert (stats["documents"], stats["rejected_documents"]) == (20, 0)
    assert stats["formulas"] == sum(len(doc["formulas"]) for doc in docs)
    assert stats["unparsed_formulas"] <= harness.MAX_UNPARSED_RATE * stats["formulas"]
    assert stats["wall_s"] > 0
