"""The BEIR readers on tiny files in the official formats, on malformed input, and on the mirror."""

from __future__ import annotations

import csv
import gzip
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hybrid_ir.data.collections.beir import read_beir, read_scifact_allenai_csv
from hybrid_ir.data.qrels import Judgment
from hybrid_ir.errors import ConfigError, InputFormatError

QUERIES = [
    {"_id": "0", "text": "Unjudged claim.", "metadata": {}},
    {"_id": "3", "text": "Test claim three.", "metadata": {"10": [{"label": "SUPPORT"}]}},
    {"_id": "1", "text": "Train claim one.", "metadata": {}},
    {"_id": "5", "text": "Test claim five.", "metadata": {}},
]
TEST_QRELS = "query-id\tcorpus-id\tscore\n5\t10\t1\n3\t20\t2.0\n3\t10\t1\n5\t10\t2\n"
TRAIN_QRELS = "query-id\tcorpus-id\tscore\n1\t20\t1\n"

EXPECTED_TOPICS = {
    "test": [
        {"id": "3", "title": "", "text": "Test claim three."},
        {"id": "5", "title": "", "text": "Test claim five."},
    ],
    "train": [{"id": "1", "title": "", "text": "Train claim one."}],
}
EXPECTED_QRELS = {
    "test": [Judgment("5", "10", 2), Judgment("3", "20", 2), Judgment("3", "10", 1)],
    "train": [Judgment("1", "20", 1)],
}


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def write_beir_files(directory: Path) -> dict[str, Path]:
    """queries.jsonl and qrels/{test,train}.tsv as BEIR ships them."""
    (directory / "qrels").mkdir(parents=True)
    files = {
        "queries": directory / "queries.jsonl",
        "qrels_test": directory / "qrels" / "test.tsv",
        "qrels_train": directory / "qrels" / "train.tsv",
    }
    files["queries"].write_text(jsonl(QUERIES))
    files["qrels_test"].write_text(TEST_QRELS)
    files["qrels_train"].write_text(TRAIN_QRELS)
    return files


# --- SciFact from the allenai CSV export ------------------------------------------------------

# numpy prints a string array with whitespace (often a newline) between the elements and uses
# double quotes for a string that contains a single quote.
ALLENAI_ROWS = [
    ["doc_id", "title", "abstract", "structured"],
    ["10", "First title.", "['Sentence one (1.4 +/-'\n '0.24).' \"It's two.\"]", "False"],
    ["20", "Second, title", "['Only sentence.']", "True"],
]
ALLENAI_DOCS = [
    {"id": "10", "title": "First title.", "text": "Sentence one (1.4 +/- 0.24). It's two."},
    {"id": "20", "title": "Second, title", "text": "Only sentence."},
]


def write_allenai_zip(path: Path, rows: list[list[str]]) -> Path:
    table = io.StringIO()
    csv.writer(table).writerows(rows)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("claims_train.csv", "id,claim\n")
        archive.writestr("corpus_train.csv", table.getvalue())
    return path


def scifact_sources(tmp_path: Path, rows: list[list[str]] = ALLENAI_ROWS) -> dict[str, Path]:
    files = write_beir_files(tmp_path / "beir")
    return {"corpus": write_allenai_zip(tmp_path / "scifact.zip", rows), **files}


def test_scifact_allenai_csv(tmp_path: Path) -> None:
    collection = read_scifact_allenai_csv(scifact_sources(tmp_path))
    assert isinstance(collection.docs, Iterator)
    assert list(collection.docs) == ALLENAI_DOCS
    assert collection.topics == EXPECTED_TOPICS
    assert collection.qrels == EXPECTED_QRELS


def test_scifact_bad_abstract(tmp_path: Path) -> None:
    """The third row starts on line 4: the first row's abstract spans lines 2 and 3."""
    rows = [*ALLENAI_ROWS[:2], ["30", "Bad", "['a' 3]", "False"]]
    sources = scifact_sources(tmp_path, rows)
    with pytest.raises(InputFormatError) as caught:
        list(read_scifact_allenai_csv(sources).docs)
    member = f"{sources['corpus']}/corpus_train.csv"
    assert str(caught.value) == f"{member}:4: abstract is not a list of strings: found '3'"


def test_scifact_needs_queries(tmp_path: Path) -> None:
    sources = scifact_sources(tmp_path)
    del sources["queries"]
    with pytest.raises(ConfigError, match="queries"):
        read_scifact_allenai_csv(sources)


# --- generic official BEIR --------------------------------------------------------------------

CORPUS = [
    {"_id": "10", "title": "Ten", "text": "Doc ten.", "metadata": {"url": "https://x/10"}},
    {"_id": "20", "title": "", "text": "Doc twenty."},
]
BEIR_DOCS = [
    {"id": "10", "title": "Ten", "text": "Doc ten.", "url": "https://x/10"},
    {"id": "20", "title": "", "text": "Doc twenty."},
]


def write_beir_directory(directory: Path) -> Path:
    write_beir_files(directory)
    (directory / "corpus.jsonl").write_text(jsonl(CORPUS))
    return directory


def write_beir_zip(tmp_path: Path) -> Path:
    """An official BEIR zip: every member under one folder named after the dataset."""
    unpacked = write_beir_directory(tmp_path / "unpacked" / "scifact")
    path = tmp_path / "scifact.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(unpacked.rglob("*")):
            archive.write(file, file.relative_to(unpacked.parent).as_posix())
    return path


def assert_beir(sources: dict[str, Path]) -> None:
    collection = read_beir(sources)
    assert isinstance(collection.docs, Iterator)
    assert list(collection.docs) == BEIR_DOCS
    assert collection.topics == EXPECTED_TOPICS
    assert collection.qrels == EXPECTED_QRELS


def test_beir_zip(tmp_path: Path) -> None:
    assert_beir({"dataset": write_beir_zip(tmp_path)})


def test_beir_unpacked_directory(tmp_path: Path) -> None:
    directory = write_beir_directory(tmp_path / "download" / "scifact")
    assert_beir({"dataset": directory})
    assert_beir({"dataset": directory.parent})  # the folder it was unzipped into


def test_beir_separate_roles_with_gzipped_corpus(tmp_path: Path) -> None:
    files = write_beir_files(tmp_path)
    corpus = tmp_path / "corpus.jsonl.gz"
    corpus.write_bytes(gzip.compress(jsonl(CORPUS).encode()))
    assert_beir({"corpus": corpus, **files})


def test_beir_dataset_excludes_other_roles(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not both"):
        read_beir({"dataset": write_beir_zip(tmp_path), "qrels_test": tmp_path / "x.tsv"})


def test_beir_zip_without_corpus(tmp_path: Path) -> None:
    path = tmp_path / "empty.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("empty/queries.jsonl", jsonl(QUERIES))
    with pytest.raises(InputFormatError, match="no corpus.jsonl or corpus.jsonl.gz"):
        read_beir({"dataset": path})


def test_beir_bad_corpus_json(tmp_path: Path) -> None:
    directory = write_beir_directory(tmp_path)
    corpus = directory / "corpus.jsonl"
    corpus.write_text(jsonl(CORPUS) + '{"_id": "30", "title": \n')
    with pytest.raises(InputFormatError) as caught:
        list(read_beir({"dataset": directory}).docs)
    assert str(caught.value).startswith(f"{corpus}:3: invalid JSON")


def test_beir_metadata_clash(tmp_path: Path) -> None:
    directory = write_beir_directory(tmp_path)
    corpus = directory / "corpus.jsonl"
    corpus.write_text(jsonl([{"_id": "1", "title": "", "text": "", "metadata": {"id": "x"}}]))
    with pytest.raises(InputFormatError, match=r"corpus.jsonl:1: metadata key\(s\) id clash"):
        list(read_beir({"dataset": directory}).docs)


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        ("[1]\n", 1, "expected a JSON object"),
        (jsonl(QUERIES) + "{oops\n", 5, "invalid JSON: Expecting property name enclosed"),
        ('{"_id": 7, "text": "x"}\n', 1, "key '_id' missing or not a string"),
        (jsonl(QUERIES[:2] + QUERIES[1:2]), 3, "duplicate query id '3'"),
    ],
)
def test_beir_bad_queries(tmp_path: Path, content: str, line: int, problem: str) -> None:
    directory = write_beir_directory(tmp_path)
    queries = directory / "queries.jsonl"
    queries.write_text(content)
    with pytest.raises(InputFormatError) as caught:
        read_beir({"dataset": directory})
    assert str(caught.value).startswith(f"{queries}:{line}: {problem}")


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        (TEST_QRELS + "5\t10\n", 6, "expected 3 tab-separated fields"),
        (TEST_QRELS + "5\t10\tx\n", 6, "relevance 'x' is not a number"),
        (TEST_QRELS + "5\t10\t0.5\n", 6, "relevance '0.5' is not integral"),
        ("5\t10\t1\nquery-id\tcorpus-id\tscore\n", 2, "relevance 'score' is not a number"),
    ],
)
def test_beir_bad_qrels(tmp_path: Path, content: str, line: int, problem: str) -> None:
    directory = write_beir_directory(tmp_path)
    qrels = directory / "qrels" / "test.tsv"
    qrels.write_text(content)
    with pytest.raises(InputFormatError) as caught:
        read_beir({"dataset": directory})
    assert str(caught.value).startswith(f"{qrels}:{line}: {problem}")


def test_beir_qrels_without_header_and_unknown_query(tmp_path: Path) -> None:
    directory = write_beir_directory(tmp_path)
    (directory / "qrels" / "test.tsv").write_text("5\t10\t1\n")
    assert read_beir({"dataset": directory}).qrels["test"] == [Judgment("5", "10", 1)]
    (directory / "qrels" / "test.tsv").write_text("99\t10\t1\n")
    with pytest.raises(InputFormatError, match=r"test.tsv: 1 query id\(s\) not in .*'99'"):
        read_beir({"dataset": directory})


# --- the real SciFact ---------------------------------------------------------------------------


@pytest.mark.mirror
def test_real_scifact(mirror: Path) -> None:
    scifact = mirror / "beir" / "scifact"
    collection = read_scifact_allenai_csv(
        {
            "corpus": scifact / "source-allenai-hf-csv" / "scifact.zip",
            "queries": scifact / "queries.jsonl",
            "qrels_test": scifact / "qrels" / "test.tsv",
            "qrels_train": scifact / "qrels" / "train.tsv",
        }
    )
    docs = {doc["id"]: doc for doc in collection.docs}
    assert len(docs) == 5183
    assert {split: len(topics) for split, topics in collection.topics.items()} == {
        "test": 300,
        "train": 809,
    }
    assert {split: len(qrels) for split, qrels in collection.qrels.items()} == {
        "test": 339,
        "train": 919,
    }
    assert all(judgment.doc_id in docs for judgment in collection.qrels["test"])
    # Doc 4983 as in BEIR's corpus.jsonl: sentences joined by one space, also mid-sentence.
    text = docs["4983"]["text"]
    assert text.startswith(
        "Alterations of the architecture of cerebral white matter in the "
        "developing human brain can affect cortical development and result "
        "in functional disabilities. A line scan diffusion-weighted"
    )
    assert "(1.4 +/- 0.24 versus 1.15 +/- 0.09 microm2/ms, p = 0.016)" in text
    assert text.endswith("microstructural development in cerebral white matter in living infants.")
    assert len(text) == 1809  # the length of the public BEIR text of doc 4983
