"""NTCIR-12 Wiki-Formula reader: a tiny official-format fixture, malformed input, real counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_ir.collections import get_reader
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.formats import Judgment, read_qrels

MATHML_1 = """<math xmlns="http://www.w3.org/1998/Math/MathML">
        <semantics>
          <msup><mi>x</mi><mn>2</mn></msup>
          <annotation-xml encoding="MathML-Content"><apply><csymbol cd="ambiguous">superscript\
</csymbol><ci>x</ci><cn type="integer">2</cn></apply></annotation-xml>
          <annotation encoding="application/x-tex">x^{2}+\\frac{1}{%
2}</annotation>
        </semantics>
      </math>"""
MATHML_2 = """<math xmlns="http://www.w3.org/1998/Math/MathML">
        <semantics>
          <mrow><qvar>*1*</qvar><mo>=</mo><mn>0</mn></mrow>
          <annotation encoding="application/x-tex">\\qvar{*1*}=0\\text{
 here}</annotation>
        </semantics>
      </math>"""
# The official file puts every element in the MathML namespace through the root's xmlns.
TOPICS_XML = f"""<?xml version="1.0" encoding="UTF-8"?>
<topics xmlns="http://www.w3.org/1998/Math/MathML">
  <topic>
    <num>NTCIR12-MathWiki-1</num>
    <query>
      <formula id="f.0">
      {MATHML_1.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")}
      </formula>
    </query>
  </topic>
  <topic>
    <num>NTCIR12-MathWiki-21</num>
    <query>
      <formula id="f.0">
      {MATHML_2.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")}
      </formula>
    </query>
  </topic>
</topics>
"""
TOPIC_1 = {
    "id": "NTCIR12-MathWiki-1",
    "title": "",
    "text": "x^{2}+\\frac{1}{2}",
    "mathml": MATHML_1,
    "wildcard": False,
}
TOPIC_21 = {
    "id": "NTCIR12-MathWiki-21",
    "title": "",
    "text": "\\qvar{*1*}=0\\text{ here}",
    "mathml": MATHML_2,
    "wildcard": True,
}
TRAIN = "NTCIR12-MathWiki-1 xxx Binomial_coefficient:197 3.0\nNTCIR12-MathWiki-1 xxx Ring:4 0.0\n"
TEST = "NTCIR12-MathWiki-21 xxx 1::2_−_1::4:0 4\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Path]:
    return {
        "topics": _write(tmp_path / "queries.xml", TOPICS_XML),
        "qrels_train": _write(tmp_path / "agg-train.dat", TRAIN),
        "qrels_test": _write(tmp_path / "agg-test.dat", TEST),
    }


def test_topics_qrels_and_their_union(sources: dict[str, Path]) -> None:
    collection = get_reader("ntcir12_wiki_formula")(sources)
    train = [
        Judgment("NTCIR12-MathWiki-1", "Binomial_coefficient:197", 3),
        Judgment("NTCIR12-MathWiki-1", "Ring:4", 0),
    ]
    test = [Judgment("NTCIR12-MathWiki-21", "1::2_−_1::4:0", 4)]
    assert collection.docs is None
    assert collection.topics == {"train": [TOPIC_1], "test": [TOPIC_21], "all": [TOPIC_1, TOPIC_21]}
    assert collection.qrels == {"train": train, "test": test, "all": train + test}
    assert collection.tables == {}


def test_topics_alone(sources: dict[str, Path]) -> None:
    collection = get_reader("ntcir12_wiki_formula")({"topics": sources["topics"]})
    assert (collection.topics, collection.qrels) == ({"all": [TOPIC_1, TOPIC_21]}, {})


def test_the_same_judgment_twice_is_kept_once(sources: dict[str, Path], tmp_path: Path) -> None:
    again = _write(tmp_path / "pya0.txt", TEST.replace(" 4\n", " 4.0\n"))
    collection = get_reader("ntcir12_wiki_formula")({**sources, "qrels_pya0": again})
    assert len(collection.qrels["all"]) == 3


def test_conflicting_relevance_across_splits_is_an_error(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    other = _write(tmp_path / "other.dat", TEST.replace(" 4\n", " 2\n"))
    with pytest.raises(InputFormatError, match=r"other\.dat: .*relevance 2 here and 4 in"):
        get_reader("ntcir12_wiki_formula")({**sources, "qrels_other": other})


def test_qrels_topic_missing_from_the_topics_is_an_error(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    other = _write(tmp_path / "other.dat", "NTCIR12-MathWikiFrm-1 xxx Ring:4 1\n")
    with pytest.raises(InputFormatError, match="not in the topics file: NTCIR12-MathWikiFrm-1"):
        get_reader("ntcir12_wiki_formula")({**sources, "qrels_other": other})


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("NTCIR12-MathWiki-1 xxx Ring:4\n", "expected 4 fields"),
        ("NTCIR12-MathWiki-1 xxx Ring:4 3.5\n", "'3.5' is not integral"),
        ("NTCIR12-MathWiki-1 xxx Ring:4 high\n", "'high' is not a number"),
    ],
)
def test_bad_qrels_line_names_file_and_line(
    sources: dict[str, Path], line: str, problem: str
) -> None:
    _write(sources["qrels_train"], TRAIN + line)
    with pytest.raises(InputFormatError, match=rf"agg-train\.dat:3: .*{problem}"):
        get_reader("ntcir12_wiki_formula")(sources)


def test_broken_topics_xml_names_file_and_line(sources: dict[str, Path]) -> None:
    _write(sources["topics"], TOPICS_XML.replace("x^{2}+", "x^{2}&+", 1))  # a bare &
    with pytest.raises(InputFormatError, match=r"queries\.xml:11: malformed XML"):
        get_reader("ntcir12_wiki_formula")(sources)


def test_topic_without_tex_names_the_topic(sources: dict[str, Path]) -> None:
    _write(sources["topics"], TOPICS_XML.replace("application/x-tex", "text/plain", 1))
    with pytest.raises(InputFormatError, match=r"queries\.xml: NTCIR12-MathWiki-1: .*TeX"):
        get_reader("ntcir12_wiki_formula")(sources)


@pytest.mark.parametrize("role", ["qrels_all", "corpus"])
def test_reserved_or_unknown_role_is_a_configuration_error(
    sources: dict[str, Path], role: str
) -> None:
    with pytest.raises(ConfigError, match=f"unknown role '{role}'"):
        get_reader("ntcir12_wiki_formula")({**sources, role: sources["qrels_test"]})


# --------------------------------------------------------------------------- real data

WIKI = "ntcir12-wiki-formula"
PYA0 = "arqmath/pya0-topics-and-qrels"
SPLITS = {"train": (32, 2102), "validation": (4, 324), "test": (4, 261)}


@pytest.fixture(scope="module")
def real(mirror: Path):
    qrels = {
        f"qrels_{split}": mirror / WIKI / f"mirmu-qrels/NTCIR12_MathWikiFrm-qrels_agg-{split}.dat"
        for split in SPLITS
    }
    topics = mirror / WIKI / "topics/NTCIR12-MathWikiFormula-queries-participants.xml"
    return get_reader("ntcir12_wiki_formula")({"topics": topics, **qrels})


@pytest.mark.mirror
def test_real_topics(real, mirror: Path) -> None:
    topics = real.topics["all"]
    assert len(topics) == 40
    assert sum(topic["wildcard"] for topic in topics) == 20
    # The TeX matches pya0's one-line topic file exactly.
    with open(mirror / PYA0 / "topics.ntcir12-math-browsing.txt", encoding="utf-8") as handle:
        pya0 = dict(line.rstrip("\n").split("\t", 1) for line in handle)
    assert {topic["id"]: topic["text"] for topic in topics} == pya0


@pytest.mark.mirror
def test_real_qrels_splits_and_union(real, mirror: Path) -> None:
    for split, (topics, lines) in SPLITS.items():
        assert len(real.topics[split]) == topics
        assert len(real.qrels[split]) == lines
        assert len({judgment.query_id for judgment in real.qrels[split]}) == topics
    assert len(real.qrels["all"]) == 2687
    assert {judgment.query_id for judgment in real.qrels["all"]} == {
        topic["id"] for topic in real.topics["all"]
    }
    # pya0's browsing qrels (relevance written 3.0) are the same judgments.
    pya0 = read_qrels(mirror / PYA0 / "qrels.ntcir12-math-browsing.txt")
    assert sorted(pya0) == sorted(real.qrels["all"])
