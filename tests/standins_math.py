"""Small, deterministic stand-ins for the math collections, in their official raw formats.

A test that runs the whole paper configuration writes ``FILES`` (mirror-relative path ->
function returning the file's bytes) into a mirror. Every file is made from one invented Math
StackExchange forum (``corpus()``): 60 questions of 12 themes with 4 answers each, dated
2010-2019, written from a small math vocabulary so that topics share words and formulas with
answers. The same posts appear in every format (Posts.xml, the approach0 sample, the HTML
threads), so the readers must give them the same documents. Nothing here is real data.

Per theme ``t`` (questions ``k = t, t+12, ..., t+48``, one every two months from 2010):
answers 0-1 of question ``t`` and all of ``t+12`` and ``t+24`` form the judged pool; ``t+36``
(2016-2017) is never judged, so the paper's training rules (before 2018, accepted answers,
score >= 8, duplicates) still find unjudged posts; ``t+48`` is asked in 2018-2019.
"""

from __future__ import annotations

import gzip
import html
import io
import json
import random
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

import yaml
from test_collections_arqmath import _page

REPO = Path(__file__).resolve().parents[1]
MTIME = 1577836800  # 2020-01-01, the date of every member of the real archives
THEMES = 12
ANSWERS_PER_QUESTION = 4
ARQMATH1 = [f"A.{n}" for n in range(1, THEMES + 1)]
# A.219 is the topic of paper 000's Fig. 3 (figures.paper000-fig3.topic).
ARQMATH2 = [f"A.{n}" for n in (*range(201, 200 + THEMES), 219)]

# Per theme, two lines: tag | what a title asks about | words; formulas (the first has no <
# or &: it goes in titles, which the dump writes as text with spans rather than as HTML).
_THEME_LINES = r"""
sequences-and-series | convergence of the series | series converge sum terms ratio geometric
\sum_{n=1}^{\infty} \frac{1}{n^2} ;; \sum_{k=0}^{n} r^k = \frac{1-r^{n+1}}{1-r} ;; |r| < 1
limits | limit of the sequence | limit sequence epsilon bound squeeze tends infinity
\lim_{n \to \infty} (1+\frac{1}{n})^n = e ;; 0 \leq a_n \leq \frac{C}{n} ;; \epsilon > 0
integration | integral by substitution | integral substitution parts antiderivative area
\int_0^1 x e^{x}\,dx ;; \int \frac{dx}{1+x^2} = \arctan x + C ;; u = x^2
derivatives | derivative of the function | derivative chain rule tangent slope maximum
\frac{d}{dx} x^n = n x^{n-1} ;; f'(x) = \lim_{h \to 0} \frac{f(x+h)-f(x)}{h} ;; f'(c) = 0
linear-algebra | eigenvalues of the matrix | matrix eigenvalue determinant vector basis rank
\det(A - \lambda I) = 0 ;; A = \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} ;; A^{-1}A = I
probability | probability of two events | probability event independent conditional dice
P(A \cap B) = P(A)P(B) ;; P(A|B)=\frac{P(A \cap B)}{P(B)} ;; E[X] = \sum_x x\,P(X=x)
elementary-number-theory | remainder modulo a prime | remainder modulo prime divisible gcd
5^{133} \bmod 8 ;; a^{p-1} \equiv 1 \pmod{p} ;; \gcd(a,b)=1
combinatorics | binomial coefficient identity | binomial coefficient choose counting subsets
\sum_{k=0}^{n} \binom{n}{k} = 2^n ;; \binom{n}{k} = \frac{n!}{k!(n-k)!} ;; n 2^{n-1}
real-analysis | continuity of the function | continuous function interval uniform compact
f:[a,b] \to \mathbb{R} ;; |f(x)-f(y)| < \epsilon ;; E=(0,1]
abstract-algebra | subgroup of a finite group | group subgroup order normal cyclic kernel
|G| = |H|\,[G:H] ;; \ker \varphi \trianglelefteq G ;; \mathbb{Z}/n\mathbb{Z}
ordinary-differential-equations | ODE solution | ode initial linear homogeneous solution
\frac{dy}{dx} = k y ;; y' + p(x) y = q(x) ;; y(0) = 1
trigonometry | trigonometric identity | sine cosine angle identity triangle radians
\sin^2 x + \cos^2 x = 1 ;; \tan x = \frac{\sin x}{\cos x} ;; e^{i\theta} = \cos\theta + i\sin\theta
"""
_LINES = _THEME_LINES.strip().splitlines()
VOCABULARY = [  # (tag, title phrase, words, formulas)
    (*_LINES[i].split(" | ")[:2], _LINES[i].split(" | ")[2].split(), _LINES[i + 1].split(" ;; "))
    for i in range(0, len(_LINES), 2)
]
COMMON = "prove show find value how why compute result using given general case example".split()
TITLES = [
    "How to prove the {p}",
    "Finding the {p} for {f}",
    "About the {p} {f}",
    "Why does the {p} hold?",
]


@dataclass(frozen=True)
class Formula:
    id: str
    latex: str
    display: bool = False


Part = str | Formula
Paragraphs = tuple[tuple[Part, ...], ...]


@dataclass(frozen=True)
class Answer:
    id: int
    date: str
    score: int
    body: Paragraphs


@dataclass(frozen=True)
class Question:
    k: int  # position in the corpus; its theme is k % THEMES
    id: int
    date: str
    score: int
    title: tuple[Part, ...]
    body: Paragraphs
    tags: tuple[str, ...]
    answers: tuple[Answer, ...]
    accepted: int | None


class _Writer:
    """Text from the vocabulary; formula ids numbered in order, as ARQMath numbers them."""

    def __init__(self, seed: int, prefix: str = "") -> None:
        self.rng, self.prefix, self.formulas = random.Random(seed), prefix, 0

    def formula(self, theme: int, index: int | None = None, display: bool = False) -> Formula:
        self.formulas += 1
        choices = VOCABULARY[theme][3]
        latex = choices[index] if index is not None else self.rng.choice(choices)
        return Formula(f"{self.prefix}{self.formulas}", latex, display)

    def sentence(self, theme: int) -> str:
        words = self.rng.sample(VOCABULARY[theme][2], 4) + self.rng.sample(COMMON, 3)
        self.rng.shuffle(words)
        return " ".join(words).capitalize() + "."

    def paragraphs(self, theme: int, count: int, math: bool = True) -> Paragraphs:
        """Sentence, formula (displayed in the second paragraph), sentence; or one sentence."""
        out = []
        for n in range(count):
            parts: list[Part] = [self.sentence(theme) + " "]
            if math:
                parts += [self.formula(theme, display=n == 1), " " + self.sentence(theme)]
            out.append(tuple(parts))
        return tuple(out)

    def title(self, theme: int) -> tuple[Part, ...]:
        title = self.rng.choice(TITLES).format(p=VOCABULARY[theme][1], f="\0")
        head, _, tail = title.partition("\0")
        return (title,) if head == title else (head, self.formula(theme, 0), tail)


@cache
def corpus() -> tuple[Question, ...]:
    """The invented forum: questions in id order, each with its answers."""
    writer, rng, next_id, questions = _Writer(2010), random.Random(2018), 1000, []

    def date(moment: datetime) -> str:
        return f"{moment:%Y-%m-%dT%H:%M:%S}.{rng.randrange(1000):03d}"

    for k in range(THEMES * 5):
        theme = k % THEMES
        # Every 60 days from 2010-02-14: questions 48-59 (the fifth of each theme) in 2018-2019.
        asked = datetime(2010, 2, 14) + timedelta(days=60 * k + rng.randrange(30))
        asked += timedelta(seconds=rng.randrange(86400))
        next_id += rng.randrange(1, 40)
        question_id, title, body = next_id, writer.title(theme), writer.paragraphs(theme, 2)
        answers = []
        for j in range(ANSWERS_PER_QUESTION):
            next_id += rng.randrange(1, 9)
            # The last answer comes months later (some questions of 2017 get answers in 2018),
            # but not after 2019.
            late = timedelta(days=rng.randrange(100, 400)) if j == 3 and k < 48 else timedelta()
            answered = asked + late + timedelta(minutes=rng.randrange(10, 3000))
            score = rng.randrange(8, 40) if j == 0 else rng.randrange(-3, 8)
            math = not (j == 2 and k % 2 == 0)  # one answer in eight has no formula
            text = writer.paragraphs(theme, 1 + rng.randrange(3), math)
            answers.append(Answer(next_id, date(answered), score, text))
        accepted = answers[rng.randrange(4)].id if k % 4 != 3 else None
        tags = (VOCABULARY[theme][0], VOCABULARY[(theme + 1 + k % 5) % THEMES][0])
        questions.append(Question(k, question_id, date(asked), rng.randrange(30), title, body,
                                  tags, tuple(answers), accepted))  # fmt: skip
    return tuple(questions)


def _theme_questions(theme: int) -> list[Question]:
    return [q for q in corpus() if q.k % THEMES == theme]


def judged_pool(theme: int) -> list[int]:
    first, second, third = _theme_questions(theme)[:3]
    return [a.id for a in first.answers[:2] + second.answers + third.answers]


# --------------------------------------------------------------------------- HTML renderings


def _span_latex(formula: Formula) -> str:
    """A formula as Posts.xml and the topics write it: LaTeX with its delimiters in a span."""
    dollars = "$$" if formula.display else "$"
    latex = html.escape(formula.latex, quote=False)
    return f'<span class="math-container" id="{formula.id}">{dollars}{latex}{dollars}</span>'


def _span_mathml(formula: Formula) -> str:
    """A formula as the HTML thread pages write it: MathML whose ``alttext`` is the LaTeX (the
    presentation MathML is a placeholder: the readers use only ``alttext``)."""
    display = "block" if formula.display else "inline"
    return (
        f'<span class="math-container" id="{formula.id}" visual_id="{7000 + int(formula.id)}">'
        f'<math alttext="{html.escape(formula.latex)}" class="ltx_Math" display="{display}" '
        'xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mi>x</mi></semantics></math></span>'
    )


def _inline(parts: tuple[Part, ...], span: Callable[[Formula], str]) -> str:
    return "".join(span(p) if isinstance(p, Formula) else html.escape(p, False) for p in parts)


def _html(paragraphs: Paragraphs, span: Callable[[Formula], str]) -> str:
    """Paragraphs as the dump writes a body (blank lines between, a final newline), or as the
    thread pages write one: on one line, space-separated."""
    blocks = [f"<p>{_inline(p, span)}</p>" for p in paragraphs]
    return "\n\n".join(blocks) + "\n" if span is _span_latex else " ".join(blocks)


def _markdown(parts: tuple[Part, ...]) -> str:
    def math(f: Formula) -> str:
        return f"$${f.latex}$$" if f.display else f"${f.latex}$"

    return "".join(math(p) if isinstance(p, Formula) else p for p in parts)


# --------------------------------------------------------------------------- Posts.xml


def _attribute(value: str, newline: str) -> str:
    """An attribute value escaped as the dumps do (``'`` is left as it is)."""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace('"', "&quot;").replace("\n", newline)


def _rows(q: Question) -> list[dict[str, str]]:
    """The question's and its answers' rows, attributes in the dump's order."""
    accepted = {"AcceptedAnswerId": str(q.accepted)} if q.accepted else {}
    rows = [{"Id": str(q.id), "PostTypeId": "1", **accepted, "CreationDate": q.date,
             "Score": str(q.score), "ViewCount": str(40 * q.score + 17),
             "Body": _html(q.body, _span_latex), "OwnerUserId": str(10 + q.k),
             "Title": _inline(q.title, _span_latex), "Tags": "".join(f"<{t}>" for t in q.tags),
             "AnswerCount": str(len(q.answers)), "CommentCount": str(q.k % 3)}]  # fmt: skip
    for a in q.answers:
        rows.append({"Id": str(a.id), "PostTypeId": "2", "ParentId": str(q.id),
                     "CreationDate": a.date, "Score": str(a.score),
                     "Body": _html(a.body, _span_latex), "OwnerUserId": str(a.id % 97),
                     "CommentCount": str(a.id % 4)})  # fmt: skip
    return rows


def _dump(root: str, rows: list[str]) -> bytes:
    """A Stack Exchange dump file: two-space rows, CRLF."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', f"<{root}>", *rows, f"</{root}>", ""]
    return "\r\n".join(lines).encode()


def posts_xml() -> bytes:
    """``Posts.V1.3.xml``: the Stack Exchange dump layout, formulas in ARQMath's spans."""
    return _dump("posts", [
        "  <row " + " ".join(f'{k}="{_attribute(v, "&#xA;")}"' for k, v in row.items()) + " />"
        for question in corpus() for row in _rows(question)
    ])  # fmt: skip


def post_links() -> list[tuple[int, int, int]]:
    """(post, related post, LinkTypeId): per theme, the unjudged 2016-2017 question duplicates
    the theme's first (both before 2018) and is duplicated by its 2018-2019 one; the two judged
    later questions are linked (type 1), as are questions of neighbouring themes."""
    links = []
    for theme in range(THEMES):
        first, second, third, fourth, fifth = (q.id for q in _theme_questions(theme))
        neighbour = _theme_questions((theme + 1) % THEMES)[1].id
        links += [(fourth, first, 3), (fifth, fourth, 3), (third, second, 1), (first, neighbour, 1)]
    return links


def post_links_xml() -> bytes:
    dates = {q.id: datetime.fromisoformat(q.date) for q in corpus()}
    rows = []
    for n, (post, related, kind) in enumerate(post_links(), start=1):
        date = max(dates[post], dates[related]) + timedelta(days=2)
        rows.append(
            f'  <row Id="{n * 37}" CreationDate="{date:%Y-%m-%dT%H:%M:%S}.000" '
            f'PostId="{post}" RelatedPostId="{related}" LinkTypeId="{kind}" />'
        )
    return _dump("postlinks", rows)


APPROACH0_SAMPLE = (0, 1, 2, 40, 41)  # corpus positions: partly judged, and unjudged


def approach0_sample_xml() -> bytes:
    """The approach0 sample's layout: sorted attributes, raw newlines, 3-space indent."""
    lines = ['<?xml version="1.0" ?>', "<posts>"]
    for row in (row for k in APPROACH0_SAMPLE for row in _rows(corpus()[k])):
        pairs = " ".join(f'{key}="{_attribute(row[key], chr(10))}"' for key in sorted(row))
        lines.append(f"   <row {pairs}/>")
    return ("\n".join(lines) + "\n\n</posts>\n").encode()


# --------------------------------------------------------------------------- HTML threads

HTML_SAMPLE = (12, 13, 14, 15, 16, 36, 37, 38)  # 5 judged-pool questions, 3 unjudged


def _tar_gz(files: dict[str, bytes], folder: str, mode: int = 0o644) -> bytes:
    """A .tar.gz as the real archives are: the folder, then its files sorted by name, every
    member dated 2020-01-01 and owned by root; the gzip header carries no time either."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name in [None, *sorted(files)]:
            member = tarfile.TarInfo(folder if name is None else f"{folder}/{name}")
            member.mtime, member.uname, member.gname, member.mode = MTIME, "root", "root", mode
            if name is None:
                member.type, member.mode = tarfile.DIRTYPE, 0o755
            else:
                member.size = len(files[name])
            archive.addfile(member, None if name is None else io.BytesIO(files[name]))
    return gzip.compress(buffer.getvalue(), mtime=0)


def html_threads_tar() -> bytes:
    """``selected/<question id>_<answer id>.html``, one page per answer (MathDowsers' sample)."""
    pages = {
        # The page layout of the reader's own tests (comments with a formula that must not reach
        # the document included).
        f"{q.id}_{a.id}.html": _page(str(q.id), str(a.id), _inline(q.title, _span_mathml),
                                     _html(q.body, _span_mathml), list(q.tags),
                                     _html(a.body, _span_mathml)).encode()
        for q in (corpus()[k] for k in HTML_SAMPLE) for a in q.answers
    }  # fmt: skip
    return _tar_gz(pages, "selected", mode=0o664)


# --------------------------------------------------------------------------- topics, qrels, labels


@cache
def topics(set_name: str) -> tuple[tuple[str, tuple[Part, ...], Paragraphs, str], ...]:
    """(id, title, question, tags) of each topic; topic i of either set is on theme i."""
    ids = ARQMATH1 if set_name == "arqmath1" else ARQMATH2
    writer = _Writer(1 if set_name == "arqmath1" else 2, prefix="q_")
    return tuple(
        (ids[i], writer.title(i), writer.paragraphs(i, 2), f"{VOCABULARY[i][0]},proof-writing")
        for i in range(THEMES)
    )


def topics_xml(set_name: str) -> bytes:
    lines = ['<?xml version="1.0" ?>', "<Topics>"]
    for topic_id, title, question, tags in topics(set_name):
        body = "  ".join(f"<p>{_inline(p, _span_latex)}</p>" for p in question) + " "
        lines += [f'   <Topic number="{topic_id}">',
                  f"      <Title>{html.escape(_inline(title, _span_latex))}</Title>",
                  f"      <Question>{html.escape(body)}</Question>",
                  f"      <Tags>{tags}</Tags>", "   </Topic>"]  # fmt: skip
    return ("\n".join([*lines, "</Topics>"]) + "\n").encode()


@cache
def qrels(set_name: str) -> tuple[tuple[str, int, int], ...]:
    """(topic, answer id, grade): 8 answers of the topic's theme pool, two of them graded 3 and
    2, and 2 non-relevant answers of other themes' pools."""
    rng = random.Random(2020 if set_name == "arqmath1" else 2021)
    judged = []
    for i, (topic_id, *_) in enumerate(topics(set_name)):
        own = rng.sample(judged_pool(i), 8)
        grades = [3, 2] + [rng.choice([0, 0, 1, 1, 2, 3]) for _ in own[2:]]
        judged += [(topic_id, answer, grade) for answer, grade in zip(own, grades, strict=True)]
        judged += [(topic_id, rng.choice(judged_pool((i + d) % THEMES)), 0) for d in (1, 5)]
    return tuple(judged)


def qrels_txt(set_name: str) -> bytes:
    return "".join(f"{t}\t0\t{a}\t{g}\r\n" for t, a, g in qrels(set_name)).encode()


LABELS = {  # category, difficulty, dependency values as each year's organisers wrote them
    "arqmath1": (("Proof", "Computation", "Concept"), ("Easy", "Medium", "Hard")),
    "arqmath2": (("Proof", "Calculation", "Concept"), ("Low", "Medium", "High")),
}


def labels(set_name: str) -> dict[str, dict]:
    """Per topic: its labels (each value given to at least two topics), its assessor, and its
    judgments per grade as the files count them (H 3, M 2, L 1, N 0)."""
    (categories, difficulties), rows = LABELS[set_name], {}
    for i, (topic_id, *_) in enumerate(topics(set_name)):
        grades = [g for t, _, g in qrels(set_name) if t == topic_id]
        rows[topic_id] = {
            "category": categories[i % 3], "difficulty": difficulties[(i // 3) % 3],
            "dependency": ("Text", "Formula", "Both")[(i // 2) % 3], "assessor": 1 + i % 7,
            "answers": len(grades), **{k: grades.count(3 - g) for g, k in enumerate("HMLN")},
        }  # fmt: skip
    return rows


def labels_json() -> bytes:
    """MathDowsers' ARQMath-1 JSON: topics in no order, and a header-like ``Topic id`` entry
    that holds each column's title."""
    header = {"H+M": "H+M", "AssessorID": "Assessor's Id",
              "Dependence": "Dependence on Text/Formula/Both", "H+M+L": "H+M+L",
              "post_id": "Post Id", "L": "L", "H": "H", "#Answers": "#Answers in Pool",
              "Difficulty": "Difficulty", "TopicType": "Topic Type", "M": "M"}  # fmt: skip
    entries = {
        t: {"H+M": r["H"] + r["M"], "AssessorID": r["assessor"], "Dependence": r["dependency"],
            "H+M+L": r["H"] + r["M"] + r["L"], "post_id": 3100000 + int(t[2:]), "L": r["L"],
            "H": r["H"], "#Answers": r["answers"], "Difficulty": r["difficulty"],
            "TopicType": r["category"], "M": r["M"]}
        for t, r in labels("arqmath1").items()
    }  # fmt: skip
    order = sorted(entries)
    random.Random(77).shuffle(order)
    order.insert(7, "Topic id")
    return json.dumps({t: entries.get(t, header) for t in order}, indent=2).encode()


def labels_csv() -> bytes:
    """The organisers' ARQMath-2 topic information CSV."""
    lines = ["Topic,Assessor Id,#Answers,HM,HML,H,M,L,N,Dependency,Difficulty,Category,#Rates,"
             "Average  Rating"]  # fmt: skip
    for t, r in labels("arqmath2").items():
        hm = r["H"] + r["M"]
        counts = f"{r['answers']},{hm},{hm + r['L']},{r['H']},{r['M']},{r['L']},{r['N']}"
        labels_ = f"{r['dependency']},{r['difficulty']},{r['category']}"
        lines.append(f"{t},{r['assessor']},{counts},{labels_},4,1.5")
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- StackMathQA


def stackmathqa_pairs() -> list[dict]:
    """60 Q/A pairs: 20 questions (title and body joined in Q, as the dataset does), 3 answers."""
    writer, pairs = _Writer(100), []
    for n in range(20):
        theme, site = n % THEMES, "mathoverflow.net" if n % 7 == 3 else "math.stackexchange.com"
        title = _markdown(writer.title(theme))
        body = "\n\n".join(_markdown(p) for p in writer.paragraphs(theme, 2))
        for answer_id in range(3):
            answer = "\n\n".join(_markdown(p) for p in writer.paragraphs(theme, 1 + answer_id))
            meta = {"language": "en", "url": f"https://{site}/questions/{50000 + 131 * n}",
                    "timestamp": "2023-03-29", "source": "stackexchange",
                    "question_score": str(3 + n), "answer_count": 3,
                    "answer_id": answer_id}  # fmt: skip
            pairs.append({"Q": f"{title} {body}\n", "A": answer + "\n", "meta": meta})
    return pairs


def stackmathqa_tar(shards: range) -> bytes:
    """``stackmathqa100k/<n>.jsonl`` (10 pairs each) and the dataset's two count files."""
    pairs = stackmathqa_pairs()
    files = {f"{n}.jsonl": "".join(json.dumps(p) + "\n" for p in pairs[10 * n : 10 * n + 10])
             for n in shards}  # fmt: skip
    files["answer_count_frequencies.txt"] = "Answer Count: 3, Frequency: 20\n"
    files["source_counts.txt"] = "Source: Stack Exchange (Math), Count: 51\n" + (
        "Source: MathOverflow, Count: 9\n"
    )
    return _tar_gz({name: text.encode() for name, text in files.items()}, "stackmathqa100k")


# --------------------------------------------------------------------------- external runs


def external_run_paths() -> dict[str, tuple[str, str | None]]:
    """Path -> (topic set, format) of every ``external_runs`` entry of config.yaml."""
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    paths = {}
    for by_set in (config.get("external_runs") or {}).values():
        for set_name, runs in by_set.items():
            for entry in runs.values():
                entry = entry if isinstance(entry, dict) else {"path": entry}
                paths[entry["path"]] = (set_name, entry.get("format"))
    return paths


def external_run(path: str, set_name: str, run_format: str | None) -> bytes:
    """Up to 50 answers per topic; each run finds its own share of the judged answers and
    ranks them with its own noise. The layout is the real file's: PSU's tf.* files are
    space-separated (rrf) or have ``1`` for ``Q0``, with LF; the others are tab-separated with
    CRLF; an entry of format ``arqmath`` gets the 5-field submission layout."""
    rng = random.Random(zlib.crc32(path.encode()))
    name = Path(path).name
    tag = name.split(".tsv")[0]
    separator, q0, end = "\t", ["Q0"], "\r\n"
    if name.startswith("tf.psu-task1-rrf"):
        separator, end = " ", "\n"
    elif name.startswith("tf.psu-task1-prim"):
        q0, end = ["1"], "\n"
    q0 = [] if run_format == "arqmath" else q0
    set_name = set_name if set_name in LABELS else "arqmath1"
    grades = {(t, a): g for t, a, g in qrels(set_name)}
    answers = [a.id for q in corpus() for a in q.answers]
    recall, skill, lines = rng.uniform(0.4, 0.9), rng.uniform(0.2, 0.6), []
    for topic_id, *_ in topics(set_name):
        found = {a: skill * g for (t, a), g in grades.items() if t == topic_id}
        found = {a: boost for a, boost in found.items() if rng.random() < recall}
        scored = {a: rng.random() + found.get(a, 0) for a in answers}
        top = sorted(scored, key=lambda a: (-scored[a], a))[: rng.randrange(30, 51)]
        for rank, a in enumerate(top, start=1):
            fields = [topic_id, *q0, str(a), str(rank), f"{10 * scored[a]:.6f}", tag]
            lines.append(separator.join(fields) + end)
    text = "".join(lines).encode()
    return gzip.compress(text, mtime=0) if path.endswith(".gz") else text


def _keywords(set_name: str) -> list[tuple[str, list[str], list[str]]]:
    """(topic, terms, formulas) as pya0 hand-picked them: the theme's words and first formula."""
    return [
        (topic_id, VOCABULARY[i][2][:2], VOCABULARY[i][3][:1])
        for i, (topic_id, *_) in enumerate(topics(set_name))
    ]


def keywords_json() -> bytes:
    """ARQMath-1's pya0 keywords (``topics.arqmath-2020-task1.json``): ``kw`` lists."""
    records = [
        {"kw": [{"type": "term", "str": " ".join(terms)}]
         + [{"type": "tex", "str": tex} for tex in formulas], "qid": topic_id, "tags": "x"}
        for topic_id, terms, formulas in _keywords("arqmath1")
    ]  # fmt: skip
    return json.dumps(records, indent=4).encode()


def keywords_refined_tsv() -> bytes:
    """ARQMath-2's (``topics.arqmath-2021-task1-refined.txt``): id, terms, then formulas."""
    lines = ["qid\tterm\ttex\tMore tex formulas follow ...\t"]
    lines += [
        "\t".join([topic_id, ", ".join(terms), *formulas, "", ""])
        for topic_id, terms, formulas in _keywords("arqmath2")
    ]
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- the files

PYA0 = "arqmath/pya0-topics-and-qrels"
FILES: dict[str, Callable[[], bytes]] = {
    "arqmath/full/Posts.V1.3.xml": posts_xml,
    "arqmath/full/PostLinks.V1.3.xml": post_links_xml,
    "arqmath/collection-samples/approach0-search-engine_sample.xml": approach0_sample_xml,
    "arqmath/collection-samples/mathdowsers_html_minimal_2021_selected.tar.gz": html_threads_tar,
    f"{PYA0}/topics.arqmath-2020-task1-origin.xml": lambda: topics_xml("arqmath1"),
    f"{PYA0}/topics.arqmath-2021-task1-origin.xml": lambda: topics_xml("arqmath2"),
    f"{PYA0}/qrels.arqmath-2020-task1.txt": lambda: qrels_txt("arqmath1"),
    f"{PYA0}/qrels.arqmath-2021-task1-official.txt": lambda: qrels_txt("arqmath2"),
    f"{PYA0}/topics.arqmath-2020-task1.json": keywords_json,
    f"{PYA0}/topics.arqmath-2021-task1-refined.txt": keywords_refined_tsv,
    "arqmath/topic-info/mathdowsers/task1_2020_topic_info.json": labels_json,
    "arqmath/topic-info/Task1_ARQMath2_Topic_Information.csv": labels_csv,
    "math-text/stackmathqa100k.tar.gz": lambda: stackmathqa_tar(range(6)),
    # The mirror's copy lacks the first shards, as the real one lacks shards 0-31.
    "math-text/stackmathqa100k_available_shards.tar.gz": lambda: stackmathqa_tar(range(1, 6)),
}
FILES |= {
    path: (lambda p=path, s=set_name, f=fmt: external_run(p, s, f))
    for path, (set_name, fmt) in external_run_paths().items()
}


CACHED = (corpus, topics, qrels)
"""The generators that keep what they built, for a test to rebuild them from their seeds."""


def write_files(mirror: Path) -> None:
    """Write every stand-in under ``mirror`` at its path."""
    for path, make in FILES.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_bytes(make())
