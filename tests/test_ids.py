"""One id rule for every reader and writer (formats.ID_RULE): an id is a non-empty string without
spaces, line breaks or control characters. Before it, a corpus id holding a newline and a TREC
line made ``search`` write an extra, valid line for another topic."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_collections_beir import CORPUS, jsonl, write_beir_directory

from hybrid_ir.data.collections.beir import read_beir
from hybrid_ir.data.formats import id_problem, read_records, write_records
from hybrid_ir.data.qrels import Judgment, read_judgments, write_judgments
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.errors import HybridIRError, InputFormatError

INJECTING = "d9\nq1 Q0 d1 1 99 x"


@pytest.mark.parametrize(
    "identifier",
    [INJECTING, "d 9", "d\t9", "d\x0b9", "d\x019", "d\x859", "d\u20289", "d\x7f", ""],
)
def test_ids_that_split_a_field_or_a_line_break_the_rule(identifier):
    assert id_problem(identifier) is not None


@pytest.mark.parametrize("identifier", ["d9", "A.10", "é−\xa0x", "2020_1", "💡", "1²", "٣"])
def test_other_unicode_ids_keep_to_it(identifier):
    assert id_problem(identifier) is None


def test_topics_with_unicode_digits_are_written_in_natural_order(tmp_path):
    """'²'.isdigit() is true and int('²') fails: natural order reads ASCII digits only."""
    run = {topic: {"d1": 1.0} for topic in ["1²", "A.10", "٣", "A.2"]}
    write_run(run, tmp_path / "run.trec", tag="t")
    topics = [line.split()[0] for line in (tmp_path / "run.trec").read_text().splitlines()]
    assert topics == ["1²", "A.2", "A.10", "٣"]


def test_a_beir_corpus_id_that_would_inject_a_run_line_is_refused_with_file_and_line(tmp_path):
    directory = write_beir_directory(tmp_path)
    corpus = directory / "corpus.jsonl"
    corpus.write_text(jsonl([*CORPUS, {"_id": INJECTING, "title": "", "text": "x"}]))
    with pytest.raises(InputFormatError) as caught:
        list(read_beir({"dataset": directory}).docs)
    message = str(caught.value)
    assert message.startswith(f"{corpus}:{len(CORPUS) + 1}: key '_id': id 'd9\\nq1 Q0 d1 1 99 x'")
    assert "\n" not in message


def test_beir_queries_and_qrels_ids_are_checked_too(tmp_path):
    directory = write_beir_directory(tmp_path)
    (directory / "queries.jsonl").write_text(jsonl([{"_id": "q 1", "text": "a"}]))
    with pytest.raises(InputFormatError, match=r"queries.jsonl:1: key '_id': id 'q 1'"):
        read_beir({"dataset": directory})
    directory = write_beir_directory(tmp_path / "again")
    (directory / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n3\td 1\t1\n")
    with pytest.raises(InputFormatError, match=r"test.tsv:2: id 'd 1' contains U\+0020"):
        read_beir({"dataset": directory})


def test_canonical_records_refuse_bad_and_repeated_ids_naming_both_lines(tmp_path):
    path = tmp_path / "topics.jsonl"
    rows = [{"id": "1", "title": "", "text": "a"}, {"id": "2", "title": "", "text": "b"}]
    path.write_text(jsonl([*rows, {"id": "1", "title": "", "text": "c"}]))
    with pytest.raises(InputFormatError, match=r"topics.jsonl:3: id '1' repeats line 1"):
        list(read_records(path))
    path.write_text(jsonl([{"id": "q\u20281", "title": "", "text": "a"}]))
    with pytest.raises(InputFormatError, match=r"topics.jsonl:1: id 'q\\u20281' contains U\+2028"):
        list(read_records(path))


def test_runs_and_qrels_with_a_control_character_in_an_id_name_the_line(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 d1 1 2.0 x\n1 Q0 d\x012 2 1.0 x\n")
    with pytest.raises(InputFormatError, match=r"run.trec:2: U\+0001 in '1 Q0 d\\x012 2 1.0 x'"):
        read_run(run)
    # Split at whitespace this line has TREC's six fields: it was read as document '1'.
    arqmath = tmp_path / "run.tsv"
    arqmath.write_text("1\td 1\t1\t2.0\tx\n")
    with pytest.raises(InputFormatError, match=r"run.tsv:1: id 'd 1' contains U\+0020"):
        read_run(arqmath)
    tabbed_trec = tmp_path / "tabs.trec"
    tabbed_trec.write_text("1\tQ0\td1\t1\t0.5\tx\n")
    assert read_run(tabbed_trec) == {"1": {"d1": 0.5}}
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n1 0 d\x1c2 1\n")
    with pytest.raises(InputFormatError, match=r"qrels.txt:2: id 'd\\x1c2' contains U\+001C"):
        read_judgments(qrels)


def test_writers_refuse_what_could_not_be_read_back_and_leave_no_file(tmp_path):
    run = tmp_path / "run.trec"
    with pytest.raises(HybridIRError, match=r"run.trec: not written: id 'd9\\nq1 Q0 d1 1 99 x'"):
        write_run({"q1": {"d1": 1.0, INJECTING: 2.0}}, run, tag="x")
    with pytest.raises(HybridIRError, match=r"not written: id 'my run'"):
        write_run({"q1": {"d1": 1.0}}, run, tag="my run")
    qrels = tmp_path / "qrels.txt"
    with pytest.raises(HybridIRError, match=r"qrels.txt: not written: id 'q 1'"):
        write_judgments(qrels, [Judgment("q 1", "d1", 1)])
    corpus = tmp_path / "corpus.jsonl"
    with pytest.raises(HybridIRError, match=r"corpus.jsonl: not written: id 'a\\tb'"):
        write_records(corpus, [{"id": "a\tb", "title": "", "text": ""}])
    assert not [path for path in tmp_path.iterdir()]


UNICODE_ID = st.text(min_size=0, max_size=6)


@settings(max_examples=150, deadline=None)
@given(st.lists(UNICODE_ID, min_size=1, max_size=4, unique=True), UNICODE_ID)
def test_arbitrary_unicode_ids_are_refused_or_round_trip_unaltered(tmp_path_factory, ids, topic):
    """Every writer, then its reader: an id is refused on writing, or read back identical."""
    folder = tmp_path_factory.mktemp("ids")
    docs_valid = all(id_problem(doc) is None for doc in ids)
    run = {topic: {doc: float(rank) for rank, doc in enumerate(ids)}}
    judgments = [Judgment(topic, doc, 1) for doc in ids]
    records = [{"id": doc, "title": "", "text": ""} for doc in ids]
    cases = [
        (docs_valid and id_problem(topic) is None, run, folder / "run.trec",
         lambda path: write_run(run, path, tag="t"), read_run),
        (docs_valid and id_problem(topic) is None, run, folder / "run.tsv",
         lambda path: write_run(run, path, tag="t", style="arqmath"), read_run),
        (docs_valid and id_problem(topic) is None, judgments, folder / "qrels.txt",
         lambda path: write_judgments(path, judgments), read_judgments),
        (docs_valid, records, folder / "corpus.jsonl",
         lambda path: write_records(path, records), lambda path: list(read_records(path))),
    ]  # fmt: skip
    for valid, written, path, write, read in cases:
        if valid:
            write(path)
            assert read(path) == written
        else:
            with pytest.raises(HybridIRError, match="not written: id"):
                write(path)
            assert not path.exists()
