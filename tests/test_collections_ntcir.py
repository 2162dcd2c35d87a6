"""NTCIR-12 Wiki-Formula reader: a tiny official-format fixture, malformed input, real counts."""

from __future__ import annotations

import bz2
import io
import logging
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hybrid_ir.data.collections import get_reader
from hybrid_ir.data.qrels import Judgment, read_judgments
from hybrid_ir.errors import ConfigError, InputFormatError

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
    assert collection.topics == {
        "train": [TOPIC_1],
        "test": [TOPIC_21],
        "all": [TOPIC_1, TOPIC_21],
        "concrete": [TOPIC_1],
    }
    assert collection.qrels == {
        "train": train,
        "test": test,
        "all": train + test,
        "concrete": train,
    }
    assert collection.tables == {}


def test_topics_alone(sources: dict[str, Path]) -> None:
    collection = get_reader("ntcir12_wiki_formula")({"topics": sources["topics"]})
    assert collection.topics == {"all": [TOPIC_1, TOPIC_21], "concrete": [TOPIC_1]}
    assert collection.qrels == {}


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


@pytest.mark.parametrize("role", ["qrels_all", "qrels_concrete", "corpus"])
def test_reserved_or_unknown_role_is_a_configuration_error(
    sources: dict[str, Path], role: str
) -> None:
    with pytest.raises(ConfigError, match=f"unknown role '{role}'"):
        get_reader("ntcir12_wiki_formula")({**sources, role: sources["qrels_test"]})


# ------------------------------------------------------- the official corpus (role articles)

MATH_NS = "http://www.w3.org/1998/Math/MathML"


def math_element(formula_id: str, tex: str | None, alttext: str | None = None) -> str:
    """One formula as the v0.2.1 corpus writes it: LaTeXML MathML in the MathML namespace, the
    TeX (XML-escaped) in an x-tex annotation and, here optionally, in ``alttext``."""
    alt = f' alttext="{alttext}"' if alttext is not None else ""
    annotation = (
        f'<annotation encoding="application/x-tex">{tex}</annotation>' if tex is not None else ""
    )
    return (
        f'<math xmlns="{MATH_NS}" id="{formula_id}"{alt} display="inline">\n'
        "<semantics><mi>x</mi>\n"
        '<annotation-xml encoding="MathML-Content"><ci>x</ci></annotation-xml>\n'
        f"{annotation}</semantics>\n</math>"
    )


def article_xhtml(article: str, maths: list[str]) -> bytes:
    """An article file of the corpus: XHTML with the docid meta data and the formulas inline."""
    body = "\n".join(f"<p>Text before {math} and after.</p>" for math in maths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml">\n'
        f'<head><meta name="docid" content="{article}"/><title>{article}</title></head>\n'
        f"<body>\n<h1>{article}</h1>\n{body}\n</body>\n</html>\n"
    ).encode()


def formula_list(articles: dict[str, list[tuple[str | None, str | None]]]) -> str:
    """pya0's LaTeX list of the same formulas: one line each, those without TeX left out."""
    lines = []
    for article, maths in articles.items():
        for position, (tex, alttext) in enumerate(maths):
            text = tex if tex is not None else alttext
            if text:
                unescaped = text.replace("&lt;", "<").replace("&amp;", "&").replace("%\n", "% ")
                lines.append(f"{article}:{position} {unescaped}\n")
    return "".join(lines)


def tar_bytes(files: dict[str, bytes], compression: str = "bz2") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compression}") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def corpus_archive(articles: dict[str, list[tuple[str | None, str | None]]]) -> bytes:
    """The release's layout: one .tar.bz2 whose MathTagArticles/ holds one .tar.bz2 per
    wpmath directory (articles under Articles/ and Articles_LaTeXML_Errors/), here with one
    article of TextArticles/ stored directly and a README beside them."""
    files = {
        name: article_xhtml(name, [math_element(f"{name}:{n}", *m) for n, m in enumerate(maths)])
        for name, maths in articles.items()
    }
    names = list(files)
    inner = tar_bytes(
        {f"wpmath0000001/Articles/{name}.html": files[name] for name in names[:-2]}
        | {f"wpmath0000001/Articles_LaTeXML_Errors/{names[-2]}.html": files[names[-2]]}
    )
    root = "NTCIR12_MathIR_WikiCorpus_v2.1.0"
    return tar_bytes(
        {
            f"{root}/README.md": b"# NTCIR-12 MathIR Wikipedia corpus\n",
            f"{root}/MathTagArticles/wpmath0000001.tar.bz2": inner,
            f"{root}/TextArticles/wpmath0000002/Articles/{names[-1]}.html": files[names[-1]],
        }
    )


ARTICLES: dict[str, list[tuple[str | None, str | None]]] = {
    "Binomial_coefficient": [
        ("\\binom{n}{k}", "\\binom{n}{k}"),
        ("a&lt;b, \\frac{1}{%\n  2}", None),  # escaped, and wrapped by LaTeXML
        (None, "n!"),  # TeX in alttext only
    ],
    "Duckworth–Lewis_method": [(None, None), ("R_{1}", None)],  # no TeX at position 0
    "Ring": [("x^{2}", None)],
    "Euler's_identity": [("e^{i\\pi}=-1", None)],
}
EXPECTED_DOCS = [
    {"id": "Binomial_coefficient:0", "title": "Binomial coefficient", "text": "\\binom{n}{k}"},
    {"id": "Binomial_coefficient:1", "title": "Binomial coefficient", "text": "a<b, \\frac{1}{2}"},
    {"id": "Binomial_coefficient:2", "title": "Binomial coefficient", "text": "n!"},
    {"id": "Duckworth–Lewis_method:1", "title": "Duckworth–Lewis method", "text": "R_{1}"},
    {"id": "Ring:0", "title": "Ring", "text": "x^{2}"},
    {"id": "Euler's_identity:0", "title": "Euler's identity", "text": "e^{i\\pi}=-1"},
]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "NTCIR12_MathIR_WikiCorpus_v2.1.0.tar.bz2"
    path.write_bytes(corpus_archive(ARTICLES))
    return path


def test_official_archive_one_document_per_formula_with_tex(
    sources: dict[str, Path], archive: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hybrid_ir.data.collections.ntcir")
    collection = get_reader("ntcir12_wiki_formula")({**sources, "articles": archive})
    assert isinstance(collection.docs, Iterator)  # streamed, article by article
    assert list(collection.docs) == EXPECTED_DOCS
    assert "5 articles" not in caplog.text and "4 articles, 7 formulas" in caplog.text
    warning = next(r for r in caplog.records if r.levelno == logging.WARNING)
    assert "1 of 7 formulas have no TeX" in warning.message
    assert "Duckworth–Lewis_method:0" in warning.message
    assert "README.md]: not an article" in caplog.text
    assert collection.topics["concrete"] == [TOPIC_1]


def test_official_archive_and_latex_list_give_the_same_corpus(
    sources: dict[str, Path], archive: Path, tmp_path: Path
) -> None:
    latex = _write(tmp_path / "NTCIR12_latex_expressions.txt", formula_list(ARTICLES))
    from_list = get_reader("ntcir12_wiki_formula")({**sources, "formulas": latex}).docs
    from_archive = get_reader("ntcir12_wiki_formula")({**sources, "articles": archive}).docs
    assert from_list == list(from_archive or [])


def test_zip_of_the_articles(sources: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "NTCIR-12_MathIR_Wikipedia_Corpus.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, maths in ARTICLES.items():
            elements = [math_element(f"{name}:{n}", *m) for n, m in enumerate(maths)]
            archive.writestr(
                f"MathTagArticles/wpmath0000001/Articles/{name}.html", article_xhtml(name, elements)
            )
    docs = get_reader("ntcir12_wiki_formula")({**sources, "articles": path}).docs
    assert list(docs or []) == EXPECTED_DOCS


def _one_article_archive(tmp_path: Path, content: bytes, name: str = "Ring.html") -> Path:
    path = tmp_path / "corpus.tar.bz2"
    path.write_bytes(tar_bytes({f"MathTagArticles/wpmath0000001/Articles/{name}": content}))
    return path


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            article_xhtml("Ring", [math_element("Ring:0", "x"), f'<math xmlns="{MATH_NS}"><mi>y']),
            r"corpus\.tar\.bz2\[MathTagArticles/wpmath0000001/Articles/Ring\.html\]:11: a <math> "
            "element is not closed",
        ),
        (
            article_xhtml("Ring", [f'<math xmlns="{MATH_NS}"><mi>y', math_element("Ring:1", "x")]),
            r"Ring\.html\]:6: a <math> element is not closed",
        ),
        (
            article_xhtml("Ring", [math_element("Ring:0", "x")]).replace(b"Text", b"T\xe9xt"),
            r"Ring\.html\]:6: not UTF-8",
        ),
        (article_xhtml("Ring", []), r"corpus\.tar\.bz2: no <math> element in any \.html article"),
    ],
)
def test_bad_article_names_archive_member_and_line(
    sources: dict[str, Path], tmp_path: Path, content: bytes, problem: str
) -> None:
    path = _one_article_archive(tmp_path, content)
    with pytest.raises(InputFormatError, match=problem):
        list(get_reader("ntcir12_wiki_formula")({**sources, "articles": path}).docs or [])


def test_an_article_twice_is_an_error(sources: dict[str, Path], tmp_path: Path) -> None:
    content = article_xhtml("Ring", [math_element("Ring:0", "x")])
    path = tmp_path / "corpus.tar.bz2"
    path.write_bytes(tar_bytes({"a/Articles/Ring.html": content, "b/Articles/Ring.html": content}))
    with pytest.raises(InputFormatError, match=r"\[b/Articles/Ring\.html\]: article 'Ring' also"):
        list(get_reader("ntcir12_wiki_formula")({**sources, "articles": path}).docs or [])


@pytest.mark.parametrize("content", [b"not an archive\n", bz2.compress(b"not a tar")])
def test_unreadable_archive_names_the_file(
    sources: dict[str, Path], tmp_path: Path, content: bytes
) -> None:
    path = _write(tmp_path / "corpus.tar.bz2", "")
    path.write_bytes(content)
    with pytest.raises(InputFormatError, match=r"corpus\.tar\.bz2: not a readable tar or zip"):
        list(get_reader("ntcir12_wiki_formula")({**sources, "articles": path}).docs or [])


def test_articles_and_formulas_together_is_a_configuration_error(
    sources: dict[str, Path], archive: Path
) -> None:
    with pytest.raises(ConfigError, match="give the formula collection once"):
        get_reader("ntcir12_wiki_formula")({**sources, "articles": archive, "formulas": archive})


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
    pya0 = read_judgments(mirror / PYA0 / "qrels.ntcir12-math-browsing.txt")
    assert sorted(pya0) == sorted(real.qrels["all"])


@pytest.mark.mirror
def test_real_concrete_topics_and_qrels_are_pya0s(real, mirror: Path) -> None:
    # Derived from the official topics (no query variable), they are pya0's concrete files.
    concrete = real.topics["concrete"]
    assert [topic["id"] for topic in concrete] == [f"NTCIR12-MathWiki-{n}" for n in range(1, 21)]
    path = mirror / PYA0 / "topics.ntcir12-math-browsing-concrete.txt"
    with open(path, encoding="utf-8") as handle:
        pya0 = dict(line.rstrip("\n").split("\t", 1) for line in handle)
    assert {topic["id"]: topic["text"] for topic in concrete} == pya0
    judgments = read_judgments(mirror / PYA0 / "qrels.ntcir12-math-browsing-concrete.txt")
    assert len(real.qrels["concrete"]) == len(judgments) == 1202
    assert sorted(real.qrels["concrete"]) == sorted(judgments)
