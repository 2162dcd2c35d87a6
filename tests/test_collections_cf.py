"""The CF reader on tiny files in the original format, on malformed input, and on the mirror."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_ir.data.collections.cf import DOC_ROLES, QUERY_ROLE, read_cf
from hybrid_ir.data.qrels import Judgment
from hybrid_ir.errors import ConfigError, InputFormatError

EOF_PADDING = "\x1a" * 12

# Record 2 lost its PN line to ^Z padding, as when cf77 and cf78 are concatenated; record 3 has an
# extract instead of an abstract and an abstract line without indentation (as in cf79); the file
# ends in ^Z padding without a final newline (as cf77 and cf79 do).
DOCS = f"""PN 74001
RN 00001
AN 75051687
AU Hoiby-N.  Jacobsen-L.  Jorgensen-B-A.
   Weeke-B.
TI Pseudomonas aeruginosa infection in cystic fibrosis.  Occurrence of
   precipitating antibodies.
SO Acta-Paediatr-Scand. 1974 Nov. 63(6). P 843-8.
MJ CYSTIC-FIBROSIS: co.  PSEUDOMONAS-AERUGINOSA:  im.  RESPIRATORY-TRACT-INFECTIONS:
   co.
MN ADOLESCENCE.  BLOOD-PROTEINS: me. CHILD.PNEUMOTHORAX: dt.
AB The significance of Pseudomonas aeruginosa infection in the
   respiratory tract has been studied.
RF 001   BELFRAGE S            ACTA MED SCAND SUPPL           173     5 963
   002   COOMBS RRA            IN: GELL PGH                         317 964
CT   1   HOIBY N               SCAND J RESPIR DIS              56    38 975

{EOF_PADDING}
RN 00782
AN 78231664
AU Mei-Liu-H.
TI Reactive neuroaxonal dystrophy in children.
SO Acta-Neuropathol. 1978. P 1-5.
MJ NEUROAXONAL-DYSTROPHY: et.
MN HUMAN.
AB Neuroaxonal dystrophy was studied.

PN 79170
RN 01150
AN 79221583
TI Effect of four physiotherapy schedules.
SO Monogr-Paediatr. 1979. 10. P 60.
MN CHILD.
EX Clapping and postural drainage
(CP);
   were compared.
{EOF_PADDING}"""

QUERIES = """QN 00001
QU What are the effects of calcium on the physical properties of mucus
   from CF patients?
NR 00003
RD    1 1222  782 0001
   1150 0000

QN 00002
QU Is CF mucus abnormal?
NR 00001
RD  782 2220
"""


def write_cf(directory: Path, docs: str = DOCS, queries: str = QUERIES) -> dict[str, Path]:
    """The seven CF files: the records in cf74, the other document files empty."""
    sources = {role: directory / role for role in (*DOC_ROLES, QUERY_ROLE)}
    for role, path in sources.items():
        text = {"cf74": docs, QUERY_ROLE: queries}.get(role, "")
        path.write_bytes(text.encode("latin-1"))
    return sources


def test_documents(tmp_path: Path) -> None:
    docs = list(read_cf(write_cf(tmp_path)).docs)
    assert docs == [
        {
            "id": "1",
            "title": "Pseudomonas aeruginosa infection in cystic fibrosis.  Occurrence of "
            "precipitating antibodies.",
            "text": "The significance of Pseudomonas aeruginosa infection in the respiratory "
            "tract has been studied.",
            "text_from": "AB",
            "major_subjects": [
                "CYSTIC-FIBROSIS: co",
                "PSEUDOMONAS-AERUGINOSA: im",
                "RESPIRATORY-TRACT-INFECTIONS: co",
            ],
            "minor_subjects": ["ADOLESCENCE", "BLOOD-PROTEINS: me", "CHILD", "PNEUMOTHORAX: dt"],
            "authors": ["Hoiby-N.", "Jacobsen-L.", "Jorgensen-B-A.", "Weeke-B."],
            "source": "Acta-Paediatr-Scand. 1974 Nov. 63(6). P 843-8.",
            "medline_an": "75051687",
            "paper_number": "74001",
        },
        {
            "id": "782",
            "title": "Reactive neuroaxonal dystrophy in children.",
            "text": "Neuroaxonal dystrophy was studied.",
            "text_from": "AB",
            "major_subjects": ["NEUROAXONAL-DYSTROPHY: et"],
            "minor_subjects": ["HUMAN"],
            "authors": ["Mei-Liu-H."],
            "source": "Acta-Neuropathol. 1978. P 1-5.",
            "medline_an": "78231664",
            "paper_number": "",
        },
        {
            "id": "1150",
            "title": "Effect of four physiotherapy schedules.",
            "text": "Clapping and postural drainage (CP); were compared.",
            "text_from": "EX",
            "major_subjects": [],
            "minor_subjects": ["CHILD"],
            "authors": [],
            "source": "Monogr-Paediatr. 1979. 10. P 60.",
            "medline_an": "79221583",
            "paper_number": "79170",
        },
    ]


def test_topics_qrels_and_judgments(tmp_path: Path) -> None:
    collection = read_cf(write_cf(tmp_path))
    assert collection.topics == {
        "all": [
            {
                "id": "1",
                "title": "",
                "text": "What are the effects of calcium on the physical properties of mucus "
                "from CF patients?",
            },
            {"id": "2", "title": "", "text": "Is CF mucus abnormal?"},
        ]
    }
    assert collection.tables["judgments"] == [
        {"query_id": "1", "doc_id": "1", "judge1": 1, "judge2": 2, "judge3": 2, "judge4": 2},
        {"query_id": "1", "doc_id": "782", "judge1": 0, "judge2": 0, "judge3": 0, "judge4": 1},
        {"query_id": "1", "doc_id": "1150", "judge1": 0, "judge2": 0, "judge3": 0, "judge4": 0},
        {"query_id": "2", "doc_id": "782", "judge1": 2, "judge2": 2, "judge3": 2, "judge4": 0},
    ]
    assert collection.qrels["binary"] == [
        Judgment("1", "1", 1),
        Judgment("1", "782", 1),
        Judgment("1", "1150", 0),
        Judgment("2", "782", 1),
    ]
    assert collection.qrels["graded"] == [
        Judgment("1", "1", 7),
        Judgment("1", "782", 1),
        Judgment("1", "1150", 0),
        Judgment("2", "782", 6),
    ]


BROKEN_DOCS = [
    ("XX unknown\n", 2, "unknown field code 'XX'"),
    ("RN 00A01\n", 2, "RN '00A01' is not a number"),
]


@pytest.mark.parametrize(("inserted", "line", "problem"), BROKEN_DOCS)
def test_malformed_documents(tmp_path: Path, inserted: str, line: int, problem: str) -> None:
    """The bad line replaces the second line (``RN 00001``) of the document file."""
    lines = DOCS.splitlines(keepends=True)
    sources = write_cf(tmp_path, docs="".join([lines[0], inserted, *lines[2:]]))
    with pytest.raises(InputFormatError) as caught:
        list(read_cf(sources).docs)
    assert str(caught.value) == f"{sources['cf74']}:{line}: {problem}"


BROKEN_QUERIES = [
    ("RD    1 1222  782\n", 5, "RD has an odd number of tokens: each doc needs a score code"),
    ("RD    1 1232  782 0001\n", 5, "RD score code '1232' is not four digits 0, 1 or 2"),
    ("RD    1 122  782 0001\n", 5, "RD score code '122' is not four digits 0, 1 or 2"),
    ("RD    x 1222  782 0001\n", 5, "RD document number 'x' is not a number"),
    ("RD 1 1222 782 0001 1150 0000 9 0001\n", 4, "NR says 00003 relevant documents but RD lists 4"),
]


@pytest.mark.parametrize(("rd_line", "line", "problem"), BROKEN_QUERIES)
def test_malformed_queries(tmp_path: Path, rd_line: str, line: int, problem: str) -> None:
    """The bad line replaces the two RD lines (lines 5 and 6) of the first query."""
    lines = QUERIES.splitlines(keepends=True)
    sources = write_cf(tmp_path, queries="".join([*lines[:4], rd_line, *lines[6:]]))
    with pytest.raises(InputFormatError) as caught:
        read_cf(sources)
    assert str(caught.value) == f"{sources[QUERY_ROLE]}:{line}: {problem}"


def test_missing_role(tmp_path: Path) -> None:
    sources = write_cf(tmp_path)
    del sources["cf78"]
    with pytest.raises(ConfigError, match="cf78"):
        read_cf(sources)


@pytest.fixture(scope="module")
def real_cf(mirror: Path):
    directory = mirror / "cf" / "original"
    collection = read_cf({role: directory / role for role in (*DOC_ROLES, QUERY_ROLE)})
    return collection, list(collection.docs)


@pytest.mark.mirror
def test_real_counts(real_cf) -> None:
    collection, docs = real_cf
    assert len(docs) == len({doc["id"] for doc in docs}) == 1239
    assert sum(doc["text_from"] == "EX" for doc in docs) == 454
    assert len(collection.topics["all"]) == 100
    assert len(collection.tables["judgments"]) == 4819
    assert len(collection.qrels["binary"]) == len(collection.qrels["graded"]) == 4819
    assert {judgment.relevance for judgment in collection.qrels["graded"]} == set(range(1, 9))


@pytest.mark.mirror
def test_real_record_782(real_cf) -> None:
    _, docs = real_cf
    record = next(doc for doc in docs if doc["id"] == "782")
    assert record["title"].startswith("Reactive neuroaxonal dystrophy in children.")
    assert record["paper_number"] == "78001"
