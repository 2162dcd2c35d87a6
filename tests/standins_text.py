"""Small, deterministic stand-ins for the text and formula collections, in their official raw
formats: NTCIR-12 Wiki-Formula, Cystic Fibrosis (CF), SciFact (the allenai CSV export with
BEIR's queries and qrels) and BEIR's TREC-COVID, NFCorpus and BioASQ.

A test that runs the whole paper configuration writes ``FILES`` (mirror-relative path ->
function returning the file's bytes) into a mirror, beside tests/standins_math.py's. Documents
and queries are written from ten biomedical themes (document ``n`` on theme ``n % 10``, query
``q`` on theme ``q``); a query's relevant documents are its theme's, so BM25 and dense retrieval
find them. NTCIR-12 formulas are variants of six templates, graded by how close they are to a
topic's formula. Only the layouts follow the real files; nothing here is real data.
"""

from __future__ import annotations

import csv
import gzip
import html
import io
import json
import random
import string
import tarfile
import textwrap
import zipfile
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

MTIME = 1577836800  # 2020-01-01: every tar member's date
ZIP_DATE = (2020, 1, 1, 0, 0, 0)


def _zip(members: dict[str, bytes | None]) -> bytes:
    """A zip as ``zip -r`` writes one: folders (``None``) as entries of their own, files
    deflated; dates and the creating system fixed, so that the bytes never change."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.create_system = 3  # Unix, whichever machine runs this
            info.external_attr = (0o40755 << 16 | 0x10) if data is None else 0o100644 << 16
            info.compress_type = zipfile.ZIP_STORED if data is None else zipfile.ZIP_DEFLATED
            archive.writestr(info, data or b"")
    return buffer.getvalue()


def _tar_bz2(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:bz2", format=tarfile.GNU_FORMAT) as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size, member.mtime, member.uname, member.gname = len(data), MTIME, "root", "root"
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def _beir_qrels(judgments: list[tuple[str, str, int]]) -> bytes:
    """BEIR's ``qrels/<split>.tsv``: a header line, then ``query-id corpus-id score``."""
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{g}" for q, d, g in judgments)]
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- biomedical text

THEMES = [  # (what a title or query is about, the theme's words)
    ("mucus secretion in the airways", "mucus airway secretion viscosity chloride epithelium"),
    ("pseudomonas lung infection", "pseudomonas infection bacteria sputum colonization antibodies"),
    ("pancreatic enzyme insufficiency", "pancreatic enzyme trypsin digestion absorption stool"),
    ("pulmonary function", "pulmonary ventilation spirometry obstruction volume breathing"),
    ("carrier screening for the gene", "gene mutation carrier heterozygote inheritance screening"),
    ("nutrition and growth", "nutrition vitamin growth weight supplementation diet"),
    ("antibiotic treatment", "antibiotic tobramycin aerosol resistance dose gentamicin"),
    ("sweat electrolyte diagnosis", "sweat sodium electrolyte iontophoresis diagnosis newborn"),
    ("liver and biliary disease", "liver cirrhosis biliary hepatic bile portal"),
    ("coronavirus transmission", "coronavirus transmission virus vaccine immunity masks"),
]
COMMON = "patients study results clinical effect increased observed compared levels group".split()
TITLES = ["Effects of {a} on {p}", "{p}: the role of {a}", "{a} and {p} in a clinical study"]
QUESTIONS = ["What is the role of {a} in {p}?", "Does {a} affect {b} in {p}?"]
CLAIMS = ["{a} increases {b} in {p}.", "{a} is associated with {p}."]


class Doc(NamedTuple):
    id: str
    theme: int
    title: str
    sentences: list[str]


class _Text:
    """Sentences, and titles, questions or claims (``fill``), from one theme's words."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def fill(self, templates: list[str], theme: int) -> str:
        a, b = self.rng.sample(THEMES[theme][1].split(), 2)
        text = self.rng.choice(templates).format(p=THEMES[theme][0], a=a, b=b)
        return text[0].upper() + text[1:]

    def sentence(self, theme: int) -> str:
        words = self.rng.sample(THEMES[theme][1].split(), 4) + self.rng.sample(COMMON, 3)
        self.rng.shuffle(words)
        return " ".join(words).capitalize() + "."


def _corpus(seed: int, ids: list[str]) -> list[Doc]:
    """Document ``n`` is on theme ``n % 10``, with 3 to 5 sentences."""
    text, docs = _Text(seed), []
    for n, doc_id in enumerate(ids):
        title = text.fill(TITLES, n % 10)
        docs.append(Doc(doc_id, n % 10, title, [text.sentence(n % 10) for _ in range(3 + n % 3)]))
    return docs


# --------------------------------------------------------------------------- Cystic Fibrosis

CF_FILES = ("cf74", "cf75", "cf76", "cf77", "cf78", "cf79")
CF_RECORDS = (6, 7, 7, 6, 7, 7)  # 40 records, RN 1-40, in file order
# How each real file ends after its last record: cf75, cf77 and cf79 in a line of DOS
# end-of-file bytes (^Z), the last two without a final newline; cf76 and cf78 in a blank line.
CF_ENDINGS = ("", "\n" + "\x1a" * 48 + "\n", "\n", "\n" + "\x1a" * 120, "\n", "\n" + "\x1a" * 85)
_SURNAMES = "Hoiby Jacobsen Weeke Wood Boat Kuzemko Shwachman Di-Sant-Agnese Tocci Mearns".split()
_JOURNALS = ("Acta-Paediatr-Scand", "Pediatrics", "Arch-Dis-Child", "J-Pediatr", "Lancet")


@cache
def cf_docs() -> list[Doc]:
    return _corpus(1974, [str(n) for n in range(1, 41)])


def _cf_field(code: str, text: str) -> list[str]:
    """The code, then lines of at most 70 columns; continuation lines indented by 3 spaces."""
    lines = textwrap.wrap(text, 67, break_long_words=False, break_on_hyphens=False)
    return [f"{code} {lines[0]}", *(f"   {line}" for line in lines[1:])]


def _cf_record(doc: Doc, year: int, number: int) -> str:
    rng, n = random.Random(int(doc.id)), int(doc.id)
    journal, words = rng.choice(_JOURNALS), THEMES[doc.theme][1].upper().split()
    authors = "  ".join(f"{rng.choice(_SURNAMES)}-{rng.choice('ABCHJKLMW')}." for _ in range(3))
    lines = [f"PN {year % 100}{number:03d}", f"RN {n:05d} ", f"AN {year % 100 + 1}{n:06d}"]
    lines += [] if n == 13 else _cf_field("AU", authors)  # 30 real records have no AU
    lines += _cf_field("TI", doc.title + ".")
    lines += [f"SO {journal}. {year} Nov. {n + 40}({n % 12 + 1}). P {100 + n}-{9 - n % 9}."]
    lines += _cf_field("MJ", f"CYSTIC-FIBROSIS: {'co im th'.split()[n % 3]}.  {words[0]}: dt.")
    lines += _cf_field("MN", f"CHILD.  HUMAN.  {words[1]}.  {words[2]}: me.")
    # The abstract or, as a third of the real records have none, an extract.
    lines += _cf_field("EX" if n % 3 == 0 else "AB", "  ".join(doc.sentences))
    # References and citations in their fixed columns (the reader skips them).
    cited = f"{rng.choice(_SURNAMES).upper():<21} {journal.upper():<30} {n + 5:>3} {n * 7:>5}"
    lines += [f"RF 001   {cited} 970", f"   002   {cited} 972", f"CT   1   {cited} 980"]
    return "".join(line + "\n" for line in lines)


def cf_file(role: str) -> bytes:
    index = CF_FILES.index(role)
    docs = cf_docs()[sum(CF_RECORDS[:index]) : sum(CF_RECORDS[: index + 1])]
    records = [_cf_record(doc, 1974 + index, number) for number, doc in enumerate(docs, start=1)]
    return ("\n".join(records) + CF_ENDINGS[index]).encode("ascii")


CF_QUERY_NUMBERS = (1, 2, 3, 4, 5, 6, 39, 48, 67, 73)
"""Queries 39, 48, 67 and 73 are paper 003's Fig. 3 samples (tables.paper003-fig3-queries)."""


@cache
def cf_judgments() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(query id, text, [(record, four judges' scores)]): the query's theme's 4 records, judged
    relevant by most judges, and one other record that one judge finds marginal."""
    rng, text, queries = random.Random(1979), _Text(1980), []
    for q in range(10):
        pairs = [(d.id, rng.choice(("2222", "2122", "1222", "2211", "1121", "2012")))
                 for d in cf_docs()[q::10]]  # fmt: skip
        other = rng.choice([d for d in cf_docs() if d.theme != q])
        pairs.append((other.id, rng.choice(("0001", "0010", "1000", "0100"))))
        pairs.sort(key=lambda pair: int(pair[0]))
        queries.append((str(CF_QUERY_NUMBERS[q]), text.fill(QUESTIONS, q), pairs))
    return queries


def cfquery() -> bytes:
    """``RD`` lists 7 (record, scores) cells a line; queries are separated by a line of one
    space, and the file ends in two spaces without a newline."""
    blocks = []
    for query_id, question, pairs in cf_judgments():
        cells = [f"{int(doc):>5} {scores}" for doc, scores in pairs]
        rd = [("  ", "RD")[i == 0] + "".join(cells[i : i + 7]) for i in range(0, len(cells), 7)]
        lines = [f"QN {int(query_id):05d} ", *_cf_field("QU", question), f"NR {len(pairs):05d}"]
        blocks.append("".join(line + "\n" for line in lines + rd))
    return (" \n".join(blocks) + "  ").encode("ascii")


# --------------------------------------------------------------------------- SciFact


@cache
def scifact() -> tuple[list[Doc], dict[str, list[tuple[str, str, list[str]]]]]:
    """60 abstracts and, per split, (claim id, claim, relevant docs): claim ``q`` of either
    split is on theme ``q``, the test one with 1-3 of its documents, the train one others."""
    rng = random.Random(2020)
    docs = _corpus(2020, [str(n) for n in sorted(rng.sample(range(4000, 46000000), 60))])
    text, splits = _Text(2021), {"train": [], "test": []}
    for q in range(10):
        pool = rng.sample(docs[q::10], 6)
        test, train = pool[: 1 + q % 3], pool[3 : 4 + (q + 1) % 3]
        splits["test"].append((str(2 * q + 1), text.fill(CLAIMS, q), [d.id for d in test]))
        splits["train"].append((str(2 * q), text.fill(CLAIMS, q), [d.id for d in train]))
    return docs, splits


def _csv(rows: list[list[str]]) -> bytes:
    """CSV as pandas writes it: minimal quoting, LF line ends."""
    table = io.StringIO()
    csv.writer(table, lineterminator="\n").writerows(rows)
    return table.getvalue().encode()


def scifact_zip() -> bytes:
    """The allenai export: claims per split (BEIR's test claims are its validation ones) and
    ``corpus_train.csv``, each abstract a numpy array of sentences as ``str()`` prints it (one
    repr a line: a sentence with an apostrophe is in double quotes)."""
    docs, splits = scifact()
    corpus = [["doc_id", "title", "abstract", "structured"]]
    for n, doc in enumerate(docs):
        sentences = doc.sentences + (["The patients' outcome was recorded."] if n % 9 == 0 else [])
        array = "[" + "\n ".join(repr(sentence) for sentence in sentences) + "]"
        corpus.append([doc.id, doc.title, array, str(n % 5 == 0)])
    header = "id claim evidence_doc_id evidence_label evidence_sentences cited_doc_ids".split()
    claims = {split: _csv([header] + [[q, claim, d, "SUPPORT", "[0]", f"[{' '.join(docs)}]"]
                                      for q, claim, docs in splits[split] for d in docs])
              for split in splits}  # fmt: skip
    unlabelled = [[str(n), f"Claim {n} without evidence.", "", "", "[]", "[]"] for n in (21, 23)]
    return _zip({"claims_test.csv": _csv([header, *unlabelled]),
                 "claims_train.csv": claims["train"], "claims_validation.csv": claims["test"],
                 "corpus_train.csv": _csv(corpus)})  # fmt: skip


def scifact_queries() -> bytes:
    """BEIR's queries.jsonl: the train claims, then the test ones, their evidence as metadata."""
    return _jsonl([
        {"_id": q, "text": claim, "metadata": {d: [{"sentences": [0], "label": "SUPPORT"}]
                                               for d in docs}}
        for split in ("train", "test") for q, claim, docs in scifact()[1][split]
    ])  # fmt: skip


# --------------------------------------------------------------------------- BEIR

BEIR_SEEDS = {"trec-covid": 2019, "nfcorpus": 2016, "bioasq": 2013}
# Grades of a query's five same-theme documents, in a random order. TREC-COVID also judges two
# documents of another theme 0; BEIR's NFCorpus test qrels hold only grades 1 and 2; BioASQ's
# are binary, 2 to 4 relevant documents a query.
BEIR_GRADES = {"trec-covid": (2, 2, 1, 1, 0), "nfcorpus": (2, 1, 1, 1, 1)}


@cache
def beir(name: str) -> tuple[list[Doc], list[dict], list[tuple[str, str, int]]]:
    """50 documents, 8 test queries and their judgments, with ids shaped as the real ones:
    CORD-19 uids, MED-/PLAIN- numbers, PubMed ids and BioASQ's 24 hex digits."""
    rng = random.Random(BEIR_SEEDS[name])
    if name == "trec-covid":
        ids = ["".join(rng.choices(string.ascii_lowercase + string.digits, k=8)) for _ in range(50)]
        query_ids = [str(q) for q in range(1, 9)]
    elif name == "nfcorpus":
        ids = [f"MED-{n}" for n in sorted(rng.sample(range(10, 5400), 50))]
        query_ids = [f"PLAIN-{n}" for n in sorted(rng.sample(range(2, 3500), 8))]
    else:
        ids = [str(n) for n in sorted(rng.sample(range(10**7, 4 * 10**7), 50))]
        query_ids = [f"{rng.getrandbits(96):024x}" for _ in range(8)]
    docs, text = _corpus(BEIR_SEEDS[name], ids), _Text(BEIR_SEEDS[name] + 1)
    queries, judgments = [], []
    for q, query_id in enumerate(query_ids):
        question, metadata = text.fill(QUESTIONS, q), {}
        if name == "trec-covid":  # the TREC topic's keyword query and narrative
            metadata = {"query": THEMES[q][0], "narrative": text.sentence(q)}
        queries.append({"_id": query_id, "text": question, "metadata": metadata})
        pool = rng.sample(docs[q::10], 5)
        grades = BEIR_GRADES.get(name, (1,) * (2 + q % 3))
        judgments += [(query_id, d.id, grade) for d, grade in zip(pool, grades, strict=False)]
        if name == "trec-covid":
            judgments += [(query_id, d.id, 0) for d in rng.sample(docs[q + 1 :: 10], 2)]
    return docs, queries, judgments


def _beir_corpus(name: str) -> bytes:
    return _jsonl([{"_id": d.id, "title": d.title, "text": " ".join(d.sentences), "metadata": {}}
                   for d in beir(name)[0]])  # fmt: skip


OTHER_SPLITS = {"nfcorpus": ("train", "dev")}
"""Splits BEIR's zip holds beside test: NFCorpus ships train and dev qrels, TREC-COVID none."""


def other_splits(name: str) -> tuple[list[dict], dict[str, list[tuple[str, str, int]]]]:
    """Two more queries per extra split, each judging two documents of its theme's pool."""
    docs = beir(name)[0]
    text, queries, qrels = _Text(BEIR_SEEDS[name] + 2), [], {}
    for s, split in enumerate(OTHER_SPLITS.get(name, ())):
        qrels[split] = []
        for q in range(2):
            query_id, theme = f"PLAIN-{9000 + 10 * s + q}", 2 * s + q
            queries.append({"_id": query_id, "text": text.fill(QUESTIONS, theme), "metadata": {}})
            qrels[split] += [(query_id, d.id, 2 - k) for k, d in enumerate(docs[theme::10][:2])]
    return queries, qrels


def beir_zip(name: str) -> bytes:
    """BEIR's official zip: one folder named after the dataset, a qrels file per split."""
    _, queries, judgments = beir(name)
    extra_queries, extra_qrels = other_splits(name)
    members = {
        f"{name}/": None, f"{name}/corpus.jsonl": _beir_corpus(name),
        f"{name}/queries.jsonl": _jsonl(queries + extra_queries), f"{name}/qrels/": None,
        f"{name}/qrels/test.tsv": _beir_qrels(judgments),
    }  # fmt: skip
    members |= {f"{name}/qrels/{split}.tsv": _beir_qrels(j) for split, j in extra_qrels.items()}
    return _zip(members)


# --------------------------------------------------------------------------- NTCIR-12

MATH_NS = "http://www.w3.org/1998/Math/MathML"
QVAR = r"\qvar{*1*}"
# Formula templates with two slots and each slot's values; a topic takes the first values.
FAMILIES = [
    (r"\binom{@a}{@b}", ("n", "m"), ("k", "j")),
    (r"\frac{1+\sqrt{@a}}{@b}", ("5", "3"), ("2", "4")),
    (r"\sum_{@a=1}^{\infty} \frac{1}{@a^{@b}}", ("n", "k"), ("2", "s")),
    (r"\int_{0}^{1} @a^{@b} d@a", ("x", "t"), ("2", "n")),
    (r"\lim_{@a \to \infty} (1+\frac{1}{@a})^{@b}", ("n", "m"), ("n", "2")),
    (r"\sqrt{@a^{2}+@b^{2}}", ("x", "a"), ("y", "b")),
]
SUFFIXES = ("", " + 1", " = 0", r" \leq 1", r" \geq x")  # 2 x 2 x 5 = 20 variants a family
_NAMES = """
Binomial_coefficient Pascal's_triangle Binomial_theorem Combination Catalan_number
Golden_ratio Fibonacci_number Continued_fraction Lucas_number Pentagon
Basel_problem Riemann_zeta_function Harmonic_series_(mathematics) Dirichlet_series Apéry's_constant
Integral Beta_function Lebesgue_integration Riemann–Stieltjes_integral Polynomial
E_(mathematical_constant) Compound_interest Exponential_function Limit_of_a_sequence Bernoulli_trial
Euclidean_distance Pythagorean_theorem Complex_number Norm_(mathematics) Hypotenuse
""".split()  # five per family
# Article j: four variants of family j % 6 and one unrelated formula.
ARTICLES = [_NAMES[5 * (j % 6) + j // 6] for j in range(30)]
TEXT_ARTICLES = ["History_of_mathematics", "Mathematician"]  # no formula at all
NO_TEX = (3, 1)  # (article, position) of a <math> without TeX: its position counts, no document
ALTTEXT_ONLY = 5  # a LaTeXML error page: its TeX is in alttext only
CONCRETE = 6  # topics 1-6 are concrete; 7-10 are topics 1-4 with a query variable in slot a
SPLITS = {"train": range(1, 8), "validation": range(8, 9), "test": range(9, 11)}
Variant = tuple[int, str, str, str]  # (family, a, b, suffix)


def _tex(family: int, a: str, b: str, suffix: str) -> str:
    return FAMILIES[family][0].replace("@a", a).replace("@b", b) + suffix


@cache
def ntcir_articles() -> list[tuple[str, list[tuple[str | None, Variant | None]]]]:
    """(article, [(TeX or None, variant or None for an unrelated formula)]) in archive order."""
    rng, pools = random.Random(12), []
    for family, (_, first, second) in enumerate(FAMILIES):
        pools.append([(family, a, b, s) for a in first for b in second for s in SUFFIXES])
        rng.shuffle(pools[-1])
    articles = []
    for j, name in enumerate(ARTICLES):
        variants = pools[j % 6][4 * (j // 6) : 4 * (j // 6) + 4]
        formulas: list[tuple[str | None, Variant | None]] = [(_tex(*v), v) for v in variants]
        unrelated = f"{'abcuvw'[j % 6]}_{{{j // 6}}} {'<+-='[j % 4]} {j + 2}"
        formulas.insert(rng.randrange(5), (unrelated, None))
        if j == NO_TEX[0]:
            formulas.insert(NO_TEX[1], (None, None))
        articles.append((name, formulas))
    return articles


def _article(name: str, formulas: list[tuple[str | None, Variant | None]], alttext: bool) -> bytes:
    """An XHTML article; each formula as LaTeXML writes it: MathML (a placeholder, as the
    readers use the TeX) with the TeX in an x-tex annotation, a long one wrapped with ``%`` and
    a newline, or with the TeX in ``alttext`` only."""
    words, paragraphs = name.replace("_", " "), []
    for n, (tex, _) in enumerate(formulas):
        alt = note = ""
        if tex and alttext:
            alt = f' alttext="{html.escape(tex)}"'
        elif tex:
            cut = tex.find(" ", 20) + 1 if len(tex) > 30 else 0
            wrapped = html.escape(tex[:cut] + "%\n" + tex[cut:] if cut else tex, False)
            note = f'<annotation encoding="application/x-tex">{wrapped}</annotation>'
        paragraphs.append(
            f'<p>In {words}, consider <math xmlns="{MATH_NS}" id="{name}:{n}"{alt} '
            f'display="inline">\n<semantics><mi>x</mi>\n<annotation-xml encoding="MathML-Content">'
            f"<ci>x</ci></annotation-xml>\n{note}</semantics>\n</math>.</p>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">\n'
        f'<head><meta name="docid" content="{name}"/><title>{words}</title></head>\n<body>\n'
        f"<h1>{words}</h1>\n<p>{words} is a topic of mathematics.</p>\n"
        + "".join(p + "\n" for p in paragraphs) + "</body>\n</html>\n"
    ).encode()  # fmt: skip


def ntcir_archive() -> bytes:
    """The organisers' layout: a .tar.bz2 whose MathTagArticles/ holds one .tar.bz2 per wpmath
    folder (Articles/, Articles_LaTeXML_Errors/) and TextArticles/ the formula-free ones."""
    inner: list[dict[str, bytes]] = [{}, {}]
    for j, (name, formulas) in enumerate(ntcir_articles()):
        folder = "Articles_LaTeXML_Errors" if j == ALTTEXT_ONLY else "Articles"
        path = f"wpmath000000{j // 15 + 1}/{folder}/{name}.html"
        inner[j // 15][path] = _article(name, formulas, j == ALTTEXT_ONLY)
    text = {f"wpmath0000003/Articles/{n}.html": _article(n, [], False) for n in TEXT_ARTICLES}
    root = "NTCIR12_MathIR_WikiCorpus_v2.1.0"
    return _tar_bz2({
        f"{root}/MathTagArticles/wpmath0000001.tar.bz2": _tar_bz2(inner[0]),
        f"{root}/MathTagArticles/wpmath0000002.tar.bz2": _tar_bz2(inner[1]),
        f"{root}/TextArticles/wpmath0000003.tar.bz2": _tar_bz2(text),
    })  # fmt: skip


def ntcir_topics() -> bytes:
    """The participants' topics file: MathML namespace by default, two-space indents, CRLF;
    topic ``n``'s formula is family ``(n - 1) % 6``'s first variant."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f'<topics xmlns="{MATH_NS}">']
    for number in range(1, 11):
        _, first, second = FAMILIES[(number - 1) % CONCRETE]
        tex = _tex((number - 1) % CONCRETE, QVAR if number > CONCRETE else first[0], second[0], "")
        qvar = "<qvar>*1*</qvar>" if number > CONCRETE else ""
        lines += ["  <topic>", f"    <num>NTCIR12-MathWiki-{number}</num>", "    <query>",
                  '      <formula id="f.0">', "        <math>", "          <semantics>",
                  f"            <mrow><mi>x</mi>{qvar}</mrow>",
                  '            <annotation-xml encoding="MathML-Content">',
                  f"              <apply><ci>x</ci>{qvar}</apply>", "            </annotation-xml>",
                  f'            <annotation encoding="application/x-tex">{html.escape(tex, False)}'
                  "</annotation>", "          </semantics>", "        </math>", "      </formula>",
                  "    </query>", "  </topic>"]  # fmt: skip
    return ("\r\n".join([*lines, "</topics>"]) + "\r\n").encode()


def _grade(variant: Variant, number: int) -> int:
    """0-4 against topic ``number``: 4 the topic's formula, 3 the formula with more after it,
    2 one slot differs (or, for a topic with a query variable, slot b), 1 both; 0 another
    family."""
    family, a, b, suffix = variant
    _, first, second = FAMILIES[family]
    if family != (number - 1) % CONCRETE:
        return 0
    same = (number > CONCRETE or a == first[0]) + (b == second[0])
    return (3 if suffix else 4) if same == 2 else same + 1


@cache
def ntcir_qrels() -> dict[int, list[tuple[str, int]]]:
    """Per topic, 10 formulas: 3 graded 3-4, 5 graded 1-2 and 2 of other families (0)."""
    ids = {v: f"{name}:{n}" for name, fs in ntcir_articles() for n, (_, v) in enumerate(fs) if v}
    rng, judged = random.Random(2016), {}
    for number in range(1, 11):
        graded = {v: _grade(v, number) for v in ids}
        pools = [[v for v, g in graded.items() if g in grades] for grades in ((3, 4), (1, 2), (0,))]
        chosen = [v for pool, k in zip(pools, (3, 5, 2), strict=True) for v in rng.sample(pool, k)]
        judged[number] = sorted((ids[v], graded[v]) for v in chosen)
    return judged


def ntcir_qrels_file(split: str) -> bytes:
    """MIR-MU's aggregated qrels: ``topic xxx formula grade``, by topic, then formula id."""
    return "".join(f"NTCIR12-MathWiki-{number} xxx {formula} {grade}\n"
                   for number in SPLITS[split] for formula, grade in ntcir_qrels()[number]
                   ).encode()  # fmt: skip


# --------------------------------------------------------------------------- the files

NTCIR = "ntcir12-wiki-formula"
QRELS = f"{NTCIR}/mirmu-qrels/NTCIR12_MathWikiFrm-qrels_agg"
FILES: dict[str, Callable[[], bytes]] = {
    f"{NTCIR}/NTCIR12_MathIR_WikiCorpus_v2.1.0.tar.bz2": ntcir_archive,
    f"{NTCIR}/topics/NTCIR12-MathWikiFormula-queries-participants.xml": ntcir_topics,
    **{f"{QRELS}-{split}.dat": (lambda s=split: ntcir_qrels_file(s)) for split in SPLITS},
    **{f"cf/original/{role}": (lambda r=role: cf_file(r)) for role in CF_FILES},
    "cf/original/cfquery": cfquery,
    "beir/scifact/source-allenai-hf-csv/scifact.zip": scifact_zip,
    "beir/scifact/queries.jsonl": scifact_queries,
    **{
        f"beir/scifact/qrels/{split}.tsv": (
            lambda s=split: _beir_qrels([(q, d, 1) for q, _, ds in scifact()[1][s] for d in ds])
        )
        for split in ("test", "train")
    },  # fmt: skip
    "beir/trec-covid/trec-covid.zip": lambda: beir_zip("trec-covid"),
    "beir/nfcorpus/nfcorpus.zip": lambda: beir_zip("nfcorpus"),
    "beir/bioasq/corpus.jsonl.gz": lambda: gzip.compress(_beir_corpus("bioasq"), mtime=0),
    "beir/bioasq/queries.jsonl": lambda: _jsonl(beir("bioasq")[1]),
    "beir/bioasq/qrels/test.tsv": lambda: _beir_qrels(beir("bioasq")[2]),
}
CACHED = (cf_docs, cf_judgments, scifact, beir, ntcir_articles, ntcir_qrels)  # for cache_clear
