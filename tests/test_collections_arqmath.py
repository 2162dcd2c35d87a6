"""ARQMath readers: tiny fixtures in the official formats, malformed input, real-data counts."""

from __future__ import annotations

import io
import re
import tarfile
import textwrap
from html import escape
from pathlib import Path

import pytest

from hybrid_ir.data.collections import get_reader, source_problems
from hybrid_ir.data.collections.arqmath import (
    PostsStats,
    read_post_links,
    read_posts_answers,
    read_topics,
)
from hybrid_ir.data.collections.arqmath_html import read_threads, render_html
from hybrid_ir.data.qrels import Judgment
from hybrid_ir.errors import ConfigError, InputFormatError

MATH = 'class="ltx_Math" display="inline" xmlns="http://www.w3.org/1998/Math/MathML"'


def _formula(formula_id: str, alttext: str) -> str:
    """A formula as the ARQMath HTML pages write it: a span around MathML with ``alttext``."""
    return (
        f'<span class="math-container" id="{formula_id}" visual_id="7">'
        f'<math alttext="{alttext}" {MATH}><semantics><mi>x</mi></semantics></math></span>'
    )


def _page(
    question_id: str, answer_id: str, title: str, question: str, tags: list[str], answer: str
) -> str:
    """A thread page with the structure of the MathDowsers ``html_minimal`` sample."""
    spans = "".join(f"<span> {tag} </span>" for tag in tags)
    comment = f'<tr><td comment_id="1"> a comment on {_formula("900", "c")} </td></tr>'
    return textwrap.dedent(f"""\
        <!DOCTYPE html>

        <html>
        <head>
        <title>raw title</title>
        </head>
        <body>
        <div>
        <div class="row" id="question-title">
        <h1> {title} </h1>
        <hr/>
        </div>
        <div class="row">
        <div class="question">
        <div id="question" question_id="{question_id}">
        {question}
        </div>
        <hr/>
        <div id="tags">
        {spans}
        </div>
        <hr/>
        <div id="question-comments">
        <table>
        <tbody>
        {comment}
        </tbody>
        </table>
        </div>
        </div>
        <hr style="border-top: 3px double #8c8b8b"/>
        </div>
        <div class="row">
        <div class="answer">
        <div answer_id="{answer_id}" id="answer">
        {answer}
        </div>
        <hr/>
        <div id="answer-comments">
        <table>
        <tbody>
        {comment}
        </tbody>
        </table>
        </div>
        </div>
        </div>
        </div>
        </body>
        </html>
        """)


PRODUCT = _formula("103", "x^{2}=x\\cdot x")
THREAD_12 = _page(
    "10",
    "12",
    f"Is {_formula('101', 'x^{2}')} even?",
    f"<p>Let {_formula('102', 'n&gt;0')} &amp; odd.</p> <p>Then what?</p>",
    ["algebra", "parity"],
    # A nested span (as in the sample), an unconverted span, raw $...$ math and a literal \$.
    f'<p>Yes: <span class="math-container">{PRODUCT}</span>.</p>'
    ' <blockquote> <span class="math-container">\\begin{align} a&amp;=b \\end{align}</span>'
    ' </blockquote> <p>Also $y$ and <span class="math-container" id="104">$$z$$</span>,'
    " costs \\$5.</p>",
)
THREAD_9 = _page(
    "8",
    "9",
    "Sum of odds",
    '<p>Compute <span class="math-container" id="201" visual_id="8"><?xml version="1.0" '
    'encoding="UTF-8"?> <math alttext="\\sum_{k=1}^{n}(2k-1)" display="block" '
    'xmlns="http://www.w3.org/1998/Math/MathML"> <mrow> <mi>k</mi> </mrow> </math></span></p>',
    ["sequences-and-series"],
    f"<p>It is {_formula('202', 'n^{2}')}.<br>Done</p>",
)
DOC_9 = {
    "id": "9",
    "title": "Sum of odds",
    "text": "It is $n^{2}$.\nDone",
    "question_id": "8",
    "question": "Compute $\\sum_{k=1}^{n}(2k-1)$",
    "tags": ["sequences-and-series"],
    "formulas": [
        {"id": "201", "latex": "\\sum_{k=1}^{n}(2k-1)"},
        {"id": "202", "latex": "n^{2}"},
    ],
}
DOC_12 = {
    "id": "12",
    "title": "Is $x^{2}$ even?",
    "text": "Yes: $x^{2}=x\\cdot x$.\n$\\begin{align} a&=b \\end{align}$\n"
    "Also $y$ and $z$, costs \\$5.",
    "question_id": "10",
    "question": "Let $n>0$ & odd.\nThen what?",
    "tags": ["algebra", "parity"],
    "formulas": [
        {"id": "101", "latex": "x^{2}"},
        {"id": "102", "latex": "n>0"},
        {"id": "103", "latex": "x^{2}=x\\cdot x"},
        {"id": None, "latex": "\\begin{align} a&=b \\end{align}"},
        {"id": None, "latex": "y"},
        {"id": "104", "latex": "z"},
    ],
}


def _span(formula_id: str, latex: str) -> str:
    """A formula as Posts.xml and the topics write it: LaTeX with its delimiters in a span."""
    return f'<span class="math-container" id="{formula_id}">{latex}</span>'


def _row(**attributes: str) -> str:
    """One Posts.xml ``<row>`` line, its attribute values XML-escaped as in the dump."""
    pairs = " ".join(f'{name}="{escape(value)}"' for name, value in attributes.items())
    return f"  <row {pairs} />"


POSTS_XML = "\n".join(
    [
        '<?xml version="1.0" encoding="utf-8"?>',
        "<posts>",
        _row(
            Id="1",
            PostTypeId="1",
            AcceptedAnswerId="3",
            Score="5",
            Title=f"Is {_span('11', '$x^2$')} even?",
            Body=f"<p>Let {_span('12', '$n&gt;0$')}.</p>",
            Tags="<algebra><parity>",
        ),
        _row(Id="2", PostTypeId="2", ParentId="1", Score="1", Body="<p>Raw $$x^2 = x x$$ ok.</p>"),
        _row(Id="3", PostTypeId="2", ParentId="1", Score="-2", Body=f"{_span('31', '$$x$$')}"),
        _row(Id="4", PostTypeId="5", Body="a tag wiki"),
        _row(Id="6", PostTypeId="2", ParentId="5", Body="<p>Orphan.</p>"),
        "</posts>\n",
    ]
)
QUESTION_1 = {
    "title": "Is $x^2$ even?",
    "question_id": "1",
    "question": "Let $n>0$.",
    "tags": ["algebra", "parity"],
}
QUESTION_FORMULAS = [{"id": "11", "latex": "x^2"}, {"id": "12", "latex": "n>0"}]
POSTS_DOCS = [
    {
        "id": "2",
        "text": "Raw $x^2 = x x$ ok.",
        **QUESTION_1,
        "formulas": [*QUESTION_FORMULAS, {"id": None, "latex": "x^2 = x x"}],
        "score": 1,
        "accepted": False,
    },
    {
        "id": "3",
        "text": "$x$",
        **QUESTION_1,
        "formulas": [*QUESTION_FORMULAS, {"id": "31", "latex": "x"}],
        "score": -2,
        "accepted": True,
    },
    {
        "id": "6",
        "title": "",
        "text": "Orphan.",
        "question_id": "5",
        "question": "",
        "tags": [],
        "formulas": [],
    },
]

TOPIC_QUESTION = f"<p>If {_span('q_2', '$$f(x)=x$$')} then?</p>  <p>Thanks.</p> "
TOPICS_XML = f"""\
<?xml version="1.0" ?>
<Topics>
   <Topic number="A.1">
      <Title>{escape(f"Finding {_span('q_1', '$c$')}")}</Title>
      <Question>{escape(TOPIC_QUESTION)}</Question>
      <Tags>functions,algebra-precalculus</Tags>
   </Topic>
   <Topic number="A.2">
      <Title>Plain</Title>
      <Question>{escape("<p>Why?</p>")}</Question>
      <Tags>logic</Tags>
   </Topic>
</Topics>
"""
TOPICS = [
    {
        "id": "A.1",
        "title": "Finding $c$",
        "text": "If $f(x)=x$ then?\nThanks.",
        "tags": ["functions", "algebra-precalculus"],
        "formulas": [{"id": "q_1", "latex": "c"}, {"id": "q_2", "latex": "f(x)=x"}],
    },
    {"id": "A.2", "title": "Plain", "text": "Why?", "tags": ["logic"], "formulas": []},
]
LABELS_JSON = """\
{
  "A.1": {"H": 3, "TopicType": "Proof", "Difficulty": "Easy", "Dependence": "Formula"},
  "Topic id": {"H": "H", "TopicType": "Topic Type", "Difficulty": "Difficulty",
               "Dependence": "Dependence on Text/Formula/Both"}
}
"""
LABELS_CSV = """\
Topic,Assessor Id,Dependency,Difficulty,Category,Average  Rating
A.2,2,Text,Low,Concept,0.71
"""
LABELS = [
    {
        "topic_id": "A.1",
        "set": "arqmath1",
        "category": "Proof",
        "difficulty": "Easy",
        "dependency": "Formula",
    },
    {
        "topic_id": "A.2",
        "set": "arqmath2",
        "category": "Concept",
        "difficulty": "Low",
        "dependency": "Text",
    },
]


def _write_tar(path: Path, pages: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, page in pages.items():
            data = page.encode("utf-8")
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def threads(tmp_path: Path) -> Path:
    # Answer 12 comes first in the archive and sorts first as text, but 9 < 12.
    pages = {"selected/10_12.html": THREAD_12, "selected/8_9.html": THREAD_9}
    return _write_tar(tmp_path / "threads.tar.gz", pages)


def test_html_threads_are_parsed_exactly_and_sorted_numerically(threads: Path) -> None:
    assert read_threads(threads) == [DOC_9, DOC_12]


def test_html_threads_read_from_a_directory(tmp_path: Path) -> None:
    directory = tmp_path / "selected"
    directory.mkdir()
    _write(directory / "10_12.html", THREAD_12)
    _write(directory / "8_9.html", THREAD_9)
    assert read_threads(directory) == [DOC_9, DOC_12]


def test_posts_xml_answers_join_their_question_and_count_orphans(tmp_path: Path) -> None:
    stats = PostsStats()
    docs = list(read_posts_answers(_write(tmp_path / "Posts.xml", POSTS_XML), stats))
    assert docs == POSTS_DOCS
    assert stats == PostsStats(answers=3, orphans=1)


def test_posts_xml_and_html_render_the_same_body_alike() -> None:
    span = '<p>Let <span class="math-container" id="5">$$a &lt; b$$</span>  now</p>'
    mathml = f"<p>Let {_formula('5', 'a &lt; b')}  now</p>"
    expected = ("Let $a < b$ now", [{"id": "5", "latex": "a < b"}])
    for fragment in (span, mathml):
        rendered = render_html(fragment, "post.html", "answer 5")
        assert (rendered.text, rendered.formulas) == expected


def test_topics_xml(tmp_path: Path) -> None:
    assert read_topics(_write(tmp_path / "topics.xml", TOPICS_XML)) == TOPICS


def test_html_reader_collects_topics_qrels_and_labels_per_set(
    tmp_path: Path, threads: Path
) -> None:
    sources = {
        "threads": threads,
        "topics_arqmath1": _write(tmp_path / "topics.xml", TOPICS_XML),
        "qrels_arqmath1": _write(tmp_path / "qrels.txt", "A.1\t0\t12\t2\nA.2\t0\t9\t0\n"),
        "labels_arqmath1": _write(tmp_path / "labels.json", LABELS_JSON),
        "labels_arqmath2": _write(tmp_path / "labels.csv", LABELS_CSV),
    }
    collection = get_reader("arqmath_html")(sources)
    assert collection.docs == [DOC_9, DOC_12]
    assert collection.topics == {"arqmath1": TOPICS}
    assert collection.qrels == {"arqmath1": [Judgment("A.1", "12", 2), Judgment("A.2", "9", 0)]}
    assert collection.tables == {"topic_labels": LABELS}


def test_posts_reader_streams_documents(tmp_path: Path) -> None:
    collection = get_reader("arqmath_posts_xml")({"posts": _write(tmp_path / "P.xml", POSTS_XML)})
    assert not isinstance(collection.docs, list)
    assert list(collection.docs) == POSTS_DOCS
    assert (collection.topics, collection.qrels, collection.tables) == ({}, {}, {})


def test_unknown_role_is_a_configuration_error(threads: Path) -> None:
    with pytest.raises(ConfigError, match="unknown role 'corpus'"):
        get_reader("arqmath_html")({"threads": threads, "corpus": threads})


def test_thread_without_answer_block_names_the_member_and_line(tmp_path: Path) -> None:
    page = THREAD_9.replace('answer_id="9" id="answer"', 'id="not-the-answer"')
    archive = _write_tar(tmp_path / "threads.tar.gz", {"selected/8_9.html": page})
    last_line = page.count("\n") + 1
    with pytest.raises(InputFormatError) as caught:
        read_threads(archive)
    message = str(caught.value)
    assert message.startswith(f"{archive}:selected/8_9.html:{last_line}: ")
    assert "answer" in message


def test_broken_posts_xml_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "Posts.xml", POSTS_XML.replace('ParentId="1" Score="-2"', "ParentId"))
    with pytest.raises(InputFormatError, match=r"Posts\.xml:5: malformed XML"):
        list(read_posts_answers(path))


def test_answer_without_parent_names_the_answer(tmp_path: Path) -> None:
    path = _write(tmp_path / "Posts.xml", POSTS_XML.replace(' ParentId="5"', ""))
    with pytest.raises(InputFormatError, match=r"Posts\.xml:7: answer 6 has no ParentId"):
        list(read_posts_answers(path))


def test_broken_topics_xml_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "topics.xml", TOPICS_XML.replace("</Tags>", "", 1))
    with pytest.raises(InputFormatError, match=r"topics\.xml:7: malformed XML"):
        read_topics(path)


@pytest.mark.parametrize(
    ("line", "problem"),
    [("A.1 0 12\n", "expected 4 fields"), ("A.1 0 12 high\n", "'high' is not a number")],
)
def test_bad_qrels_line_names_file_and_line(
    tmp_path: Path, threads: Path, line: str, problem: str
) -> None:
    qrels = _write(tmp_path / "qrels.txt", "A.1 0 9 1\n" + line)
    with pytest.raises(InputFormatError, match=rf"qrels\.txt:2: .*{problem}"):
        get_reader("arqmath_html")({"threads": threads, "qrels_arqmath1": qrels})


# --------------------------------------------------------------------------- real data

SAMPLES = "arqmath/collection-samples"
PYA0 = "arqmath/pya0-topics-and-qrels"


@pytest.fixture(scope="module")
def real_html(mirror: Path):
    """The HTML sample with both years' topics, qrels and labels (read once: about 8 s)."""
    return get_reader("arqmath_html")(
        {
            "threads": mirror / SAMPLES / "mathdowsers_html_minimal_2021_selected.tar.gz",
            "topics_arqmath1": mirror / PYA0 / "topics.arqmath-2020-task1-origin.xml",
            "topics_arqmath2": mirror / PYA0 / "topics.arqmath-2021-task1-origin.xml",
            "qrels_arqmath1": mirror / PYA0 / "qrels.arqmath-2020-task1.txt",
            "qrels_arqmath2": mirror / PYA0 / "qrels.arqmath-2021-task1-official.txt",
            "labels_arqmath1": mirror / "arqmath/topic-info/mathdowsers/task1_2020_topic_info.json",
            "labels_arqmath2": mirror / "arqmath/topic-info/Task1_ARQMath2_Topic_Information.csv",
        }
    )


@pytest.mark.mirror
def test_real_html_threads(real_html) -> None:
    docs = real_html.docs
    assert len(docs) == 3395
    assert len({doc["id"] for doc in docs}) == 3395
    assert sum(1 for doc in docs if doc["formulas"]) == 3310
    assert sum(len(doc["formulas"]) for doc in docs) == 67641
    assert all(doc["title"] and doc["text"] and doc["tags"] for doc in docs)


@pytest.mark.mirror
@pytest.mark.parametrize(
    ("set_name", "topics", "judged", "lines"),
    [("arqmath1", 98, 77, 39124), ("arqmath2", 100, 71, 31788)],
)
def test_real_topics_qrels_and_labels(
    real_html, set_name: str, topics: int, judged: int, lines: int
) -> None:
    judged_ids = {judgment.query_id for judgment in real_html.qrels[set_name]}
    labelled = [row for row in real_html.tables["topic_labels"] if row["set"] == set_name]
    assert len(real_html.topics[set_name]) == topics
    assert len(real_html.qrels[set_name]) == lines
    assert len(judged_ids) == judged
    assert {row["topic_id"] for row in labelled} == judged_ids
    assert judged_ids <= {topic["id"] for topic in real_html.topics[set_name]}


@pytest.mark.mirror
def test_real_arqmath1_labels_skip_the_header_entry(real_html) -> None:
    rows = [row for row in real_html.tables["topic_labels"] if row["set"] == "arqmath1"]
    categories = [row["category"] for row in rows]
    assert (categories.count("Proof"), categories.count("Computation")) == (41, 26)
    assert categories.count("Concept") == 10


@pytest.mark.mirror
def test_real_posts_xml_sample(mirror: Path) -> None:
    stats = PostsStats()
    docs = list(read_posts_answers(mirror / SAMPLES / "approach0-search-engine_sample.xml", stats))
    assert stats == PostsStats(answers=7, orphans=0)
    assert [doc["id"] for doc in docs] == ["4", "7", "9", "13", "14", "15", "16"]
    assert [doc["id"] for doc in docs if doc["accepted"]] == ["7", "9"]


def _link(post: str, related: str, kind: str) -> str:
    date = "2011-01-01T00:00:00.000"
    return _row(Id=post, CreationDate=date, PostId=post, RelatedPostId=related, LinkTypeId=kind)


POST_LINKS_XML = "\n".join(
    [
        '<?xml version="1.0" encoding="utf-8"?>',
        "<postlinks>",
        _link("1", "9", "3"),
        _link("8", "1", "3"),
        _link("1", "7", "1"),
        "</postlinks>\n",
    ]
)


def test_post_links_give_each_answer_its_questions_duplicates(tmp_path: Path) -> None:
    links = _write(tmp_path / "PostLinks.xml", POST_LINKS_XML)
    assert read_post_links(links) == {"1": ["8", "9"], "9": ["1"], "8": ["1"]}  # not "linked" 7
    sources = {"posts": _write(tmp_path / "Posts.xml", POSTS_XML), "post_links": links}
    docs = list(get_reader("arqmath_posts_xml")(sources).docs or [])
    assert [doc["duplicates"] for doc in docs] == [["8", "9"], ["8", "9"], []]
    assert [{k: v for k, v in doc.items() if k != "duplicates"} for doc in docs] == POSTS_DOCS


def test_post_links_role_is_optional_and_checked() -> None:
    entry = {"reader": "arqmath_posts_xml", "topics": [], "qrels": []}
    with_links = {**entry, "sources": {"posts": "P.xml", "post_links": "L.xml"}}
    assert source_problems("collections.c", with_links) == ([], [])
    typo = {**entry, "sources": {"posts": "P.xml", "postlinks": "L.xml"}}
    errors, _ = source_problems("collections.c", typo)
    assert errors and errors[0].startswith("collections.c.sources.postlinks: ")


def test_creation_dates_are_kept_as_written(tmp_path: Path) -> None:
    asked, answered = "2012-03-04T05:06:07.890", "2013-01-01T00:00:00.000"
    dated = POSTS_XML.replace('PostTypeId="1"', f'PostTypeId="1" CreationDate="{asked}"')
    dated = dated.replace('<row Id="2"', f'<row Id="2" CreationDate="{answered}"')
    first = next(read_posts_answers(_write(tmp_path / "Posts.xml", dated)))
    assert (first["date"], first["question_date"]) == (answered, asked)


BAD_DATE = POSTS_XML.replace('Score="1"', 'Score="1" CreationDate="yesterday"')
BAD_SCORE = POSTS_XML.replace('Score="-2"', 'Score="many"')


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("PostLinks.xml", POST_LINKS_XML.replace(' LinkTypeId="1"', ""), ":5: row lacks PostId"),
        ("PostLinks.xml", POST_LINKS_XML.replace('PostId="8"', "PostId"), ":4: malformed XML"),
        ("Posts.xml", BAD_DATE, ":4: post 2: CreationDate 'yesterday' is not an ISO 8601 date"),
        ("Posts.xml", BAD_SCORE, ":5: answer 3: Score 'many'"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, name: str, text: str, problem: str) -> None:
    path = _write(tmp_path / name, text)
    read = read_post_links if name == "PostLinks.xml" else lambda p: list(read_posts_answers(p))
    with pytest.raises(InputFormatError, match=re.escape(name + problem)):
        read(path)
