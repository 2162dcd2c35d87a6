"""The text and formula stand-ins of tests/standins_text.py, read through the project's own
readers with the sources and sets the paper configuration gives them (config.yaml,
configs/ntcir12.yaml, configs/paper004-beir.yaml): counts, judged documents in the corpus,
queries that share words with their relevant documents, and NTCIR-12's concrete topics."""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from pathlib import Path

import pytest
import standins_text as standins
import yaml

from hybrid_ir.data.collections import Collection, convert, get_reader

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ("config.yaml", "configs/ntcir12.yaml", "configs/paper004-beir.yaml")
NTCIR_SETS = ("all", "train", "validation", "test", "concrete")
EXPECTED = {  # what convert writes of each collection
    "ntcir12": {"corpus": 150}
    | {f"topics_{s}": n for s, n in zip(NTCIR_SETS, (10, 7, 1, 2, 6), strict=True)}
    | {f"qrels_{s}": n for s, n in zip(NTCIR_SETS, (100, 70, 10, 20, 60), strict=True)},
    "cf": {"corpus": 40, "topics_all": 10, "qrels_binary": 50, "qrels_graded": 50}
    | {"table_judgments": 50},
    "scifact": {"corpus": 60, "topics_test": 10, "topics_train": 10}
    | {"qrels_test": 19, "qrels_train": 20},
    "trec-covid": {"corpus": 50, "topics_test": 8, "qrels_test": 56},
    "nfcorpus": {"corpus": 50, "topics_test": 8, "qrels_test": 40}
    | {"topics_train": 2, "qrels_train": 4, "topics_dev": 2, "qrels_dev": 4},
    "bioasq": {"corpus": 50, "topics_test": 8, "qrels_test": 23},
}
GRADES = {"scifact": {1}, "trec-covid": {0, 1, 2}, "nfcorpus": {1, 2}, "bioasq": {1}}


def _merge(base: dict, overlay: dict) -> dict:
    """Snakemake's --configfile merge: nested mappings key by key, anything else replaced."""
    merged = dict(base)
    for key, value in overlay.items():
        both = isinstance(value, dict) and isinstance(base.get(key), dict)
        merged[key] = _merge(base[key], value) if both else value
    return merged


def _collections() -> dict[str, dict]:
    config: dict = {}
    for name in CONFIGS:
        config = _merge(config, yaml.safe_load((REPO / name).read_text(encoding="utf-8")))
    return {name: config["collections"][name] for name in EXPECTED}


COLLECTIONS = _collections()


@pytest.fixture(scope="module")
def mirror(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("text-standins")
    for path, make in standins.FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(make())
    return root


def _sources(mirror: Path, name: str) -> dict[str, Path]:
    """Role -> raw file, as the workflow's convert rule passes them."""
    return {role: mirror / path for role, path in COLLECTIONS[name]["sources"].items()}


@pytest.fixture(scope="module")
def read(mirror: Path):
    """Each collection as its reader gives it, documents in a list."""
    collections: dict[str, Collection] = {}

    def read(name: str) -> Collection:
        if name not in collections:
            collection = get_reader(COLLECTIONS[name]["reader"])(_sources(mirror, name))
            collection.docs = list(collection.docs or [])
            collections[name] = collection
        return collections[name]

    return read


def test_the_stand_ins_are_exactly_the_configured_sources() -> None:
    sources = {path for c in COLLECTIONS.values() for path in c["sources"].values()}
    assert set(standins.FILES) == sources
    assert "articles" in COLLECTIONS["ntcir12"]["sources"] and COLLECTIONS["ntcir12"]["corpus"]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_convert_writes_every_configured_file(mirror: Path, tmp_path: Path, name: str) -> None:
    """As the workflow's convert rule: the configured sources in, the configured sets out."""
    collection = COLLECTIONS[name]
    keys = ["corpus"] if collection.get("corpus", True) else []
    keys += [f"{kind}_{s}" for kind in ("topics", "qrels") for s in collection[kind]]
    keys += [f"table_{s}" for s in collection.get("tables", [])]
    outputs = {key: tmp_path / key for key in keys}
    assert convert(collection["reader"], _sources(mirror, name), outputs) == EXPECTED[name]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.mark.parametrize("name", ["cf", "scifact", "trec-covid", "nfcorpus", "bioasq"])
def test_judged_documents_exist_and_share_words_with_their_queries(read, name: str) -> None:
    """BM25 must find something: each relevant document shares words with its query."""
    collection = read(name)
    docs = {doc["id"]: doc for doc in collection.docs}
    assert len(docs) == len(collection.docs) and all(
        d["title"] and d["text"] for d in docs.values()
    )
    for set_name, judgments in collection.qrels.items():
        set_topics = collection.topics.get(set_name, collection.topics.get("all"))  # CF: "all"
        topics = {topic["id"]: _words(topic["text"]) for topic in set_topics}
        assert {j.query_id for j in judgments} == set(topics)
        assert {j.doc_id for j in judgments} <= set(docs)
        for j in judgments:
            if j.relevance > 0 and (name != "cf" or j.relevance >= 4):
                doc = docs[j.doc_id]
                assert len(topics[j.query_id] & _words(f"{doc['title']} {doc['text']}")) >= 2


@pytest.mark.parametrize("name", list(GRADES))
def test_beir_grades_and_relevant_documents_per_query(read, name: str) -> None:
    judgments = read(name).qrels["test"]
    assert {j.relevance for j in judgments} == GRADES[name]
    relevant = Counter(j.query_id for j in judgments if j.relevance > 0)
    low, high = {"scifact": (1, 3), "bioasq": (2, 4)}.get(name, (4, 5))
    assert all(low <= n <= high for n in relevant.values())
    assert len(relevant) == (10 if name == "scifact" else 8)


def test_scifact_abstracts_are_joined_sentences(read) -> None:
    docs = read("scifact").docs
    assert [d["id"] for d in docs] == [d.id for d in standins.scifact()[0]]
    assert sum("The patients' outcome was recorded." in d["text"] for d in docs) == 7
    train = {j.query_id for j in read("scifact").qrels["train"]}
    assert not train & {j.query_id for j in read("scifact").qrels["test"]}


def test_cf_records_judges_and_quirks(read, mirror: Path) -> None:
    collection = read("cf")
    docs = collection.docs
    assert [d["id"] for d in docs] == [str(n) for n in range(1, 41)]
    assert Counter(d["text_from"] for d in docs) == {"AB": 27, "EX": 13}
    assert sum(not d["authors"] for d in docs) == 1 and all(d["major_subjects"] for d in docs)
    rows = collection.tables["judgments"]
    scores = [[row[f"judge{k}"] for k in range(1, 5)] for row in rows]
    graded = {(j.query_id, j.doc_id): j.relevance for j in collection.qrels["graded"]}
    assert [graded[(r["query_id"], r["doc_id"])] for r in rows] == [sum(s) for s in scores]
    assert {j.relevance for j in collection.qrels["binary"]} == {1}  # no 0000 code, as in CF
    per_query = Counter(j.query_id for j in collection.qrels["binary"])
    assert per_query == dict.fromkeys(map(str, standins.CF_QUERY_NUMBERS), 5)
    assert 0 < sum(r >= 6 for r in graded.values()) and 0 < sum(r <= 2 for r in graded.values())
    ends = {role: (mirror / f"cf/original/{role}").read_bytes()[-2:] for role in standins.CF_FILES}
    # As the real files end: a newline, ^Z padding (cf77 and cf79 without a newline), a blank line.
    assert list(ends.values()) == [b"0\n", b"\x1a\n", b"\n\n", b"\x1a\x1a", b"\n\n", b"\x1a\x1a"]


def test_ntcir12_topics_qrels_and_formulas(read) -> None:
    collection = read("ntcir12")
    topics = collection.topics["all"]
    assert [t["id"] for t in topics] == [f"NTCIR12-MathWiki-{n}" for n in range(1, 11)]
    concrete = [t["id"] for t in collection.topics["concrete"]]
    assert concrete == [f"NTCIR12-MathWiki-{n}" for n in range(1, 7)]
    assert all((r"\qvar" in t["text"]) == t["wildcard"] for t in topics)
    judged = Counter(j.query_id for j in collection.qrels["all"])
    assert judged == {t["id"]: 10 for t in topics} and set(concrete) <= set(judged)
    for topic in topics:
        grades = [j.relevance for j in collection.qrels["all"] if j.query_id == topic["id"]]
        assert sum(g >= 3 for g in grades) >= 2 and sum(g in (1, 2) for g in grades) >= 2
    splits = [{j.query_id for j in collection.qrels[s]} for s in ("train", "validation", "test")]
    assert sum(map(len, splits)) == 10 and set().union(*splits) == set(judged)
    # Every judged formula is a document, and each document's text is its formula's TeX
    # (escaped, wrapped and put in alttext by the archive, unwrapped by the reader).
    docs = {doc["id"]: doc for doc in collection.docs}
    assert {j.doc_id for j in collection.qrels["all"]} <= set(docs)
    written = {f"{name}:{n}": tex for name, formulas in standins.ntcir_articles()
               for n, (tex, _) in enumerate(formulas)}  # fmt: skip
    assert {i: d["text"] for i, d in docs.items()} == {i: t for i, t in written.items() if t}
    assert len(written) == 151 and docs["Binomial_theorem:0"]["title"] == "Binomial theorem"
    assert any("<" in doc["text"] for doc in docs.values())  # written as &lt;


def _pya0_parse():
    """pya0's native parser, which the Approach0 index job calls, loaded alone: importing the
    pya0 package takes seconds and puts its folder first on sys.path."""
    spec = importlib.util.find_spec("pya0")
    folders = spec.submodule_search_locations if spec else None
    native = next(Path(folders[0]).glob("_pya0*.so"), None) if folders else None
    if native is None:
        pytest.skip("pya0 is not installed")
    native_spec = importlib.util.spec_from_file_location("_pya0", native)
    assert native_spec is not None and native_spec.loader is not None
    module = importlib.util.module_from_spec(native_spec)
    native_spec.loader.exec_module(module)
    return module.parse


def test_ntcir12_formulas_parse_in_approach0(read) -> None:
    """Approach0 indexes what pya0 parses: every formula and concrete topic must parse."""
    parse, collection = _pya0_parse(), read("ntcir12")
    texts = [d["text"] for d in collection.docs] + [
        t["text"] for t in collection.topics["concrete"]
    ]
    assert [tex for tex in texts if parse(tex)[0] != "OK"] == []
