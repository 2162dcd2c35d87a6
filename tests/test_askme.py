"""AskMe re-ranking (paper 004): each heuristic on hand-made sections with values computed by
hand, the weighting of heuristics and sections, the three combine modes on a toy BM25 run, and
configuration errors.

Sections are written as patterns in the paper's notation: ``X`` and ``Y`` are the search terms
(``cancer`` and ``risk``, in that query order) and ``.`` a token that is not a search term
(``zz``), so ``...X...Y...X...`` is the paper's own example of 15 tokens.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hybrid_ir.data.fetch import add_to_manifest, entry_for_file
from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.retrieval.askme import (
    HEURISTICS,
    AskMeConfig,
    Match,
    Section,
    consecutive_terms,
    first_sentence,
    query_terms,
    rerank,
    sentence_count,
    term_frequency,
    term_order,
    term_share,
)

QUERY = "the risk of cancer"  # wrong order on purpose: terms are ("risk", "cancer") here
TERMS = ("cancer", "risk")
WORDS = {"X": "cancer", "Y": "risk", ".": "zz"}


def text(pattern: str) -> str:
    """A section from a pattern: one token per character, ``X``/``Y`` the terms, ``.`` filler."""
    return " ".join(WORDS[char] for char in pattern)


def match(pattern_or_text: str, terms: tuple[str, ...] = TERMS) -> Match:
    raw = text(pattern_or_text) if set(pattern_or_text) <= set(WORDS) else pattern_or_text
    return Match.of(terms, Section.from_text(raw))


# text analysis ---------------------------------------------------------------------------------


def test_query_terms_drop_stop_words_and_repeats_keeping_first_order() -> None:
    assert query_terms(QUERY) == ("risk", "cancer")
    assert query_terms("Cancer RISK, and the cancer-risk of women.") == ("cancer", "risk", "women")
    assert query_terms("the of and") == ()


def test_sentences_split_after_end_punctuation_unless_lower_case_follows() -> None:
    section = Section.from_text("Zz et al. reported cancer. Zz zz! Risk zz? zz zz ... ")
    # "et al. reported" and "? zz" do not split; "..." leaves no token-less sentence.
    assert section.sentence_starts == (0, 5, 7)
    assert section.length == 11
    assert section.positions["cancer"] == (4,)
    assert [section.sentence_of(position) for position in (0, 4, 5, 6, 7, 10)] == [0, 0, 1, 1, 2, 2]


# the six heuristics ----------------------------------------------------------------------------


def test_term_frequency_is_the_papers_example() -> None:
    assert term_frequency(match("...X...Y...X...")) == pytest.approx(3 / 15)  # paper: 0.2
    assert term_frequency(match("X.Y.")) == pytest.approx(2 / 4)
    assert term_frequency(match("")) == 0.0


def test_term_share() -> None:
    assert term_share(match("...X...Y...X...")) == 1.0  # paper: 1.0
    assert term_share(match("..X..X")) == 0.5
    assert term_share(match("....")) == 0.0
    assert term_share(match("X.Y", ())) == 0.0


def test_term_order_prefers_query_order() -> None:
    assert term_order(match("..X..Y..")) == 1.0
    assert term_order(match("..Y..X..")) == 0.5  # Y in order (first), X before Y: 1 of 2
    assert term_order(match("XXY")) == 1.0  # a repeated term is not disorder
    assert term_order(match("XYXY")) == pytest.approx(3 / 4)  # the second X goes back
    assert term_order(match("YXYX")) == pytest.approx(2 / 4)
    assert term_order(match("...")) == 0.0


def test_sentence_count_fraction_and_count() -> None:
    section = "Cancer zz zz. Zz zz zz. Zz risk cancer. Zz zz zz."
    assert sentence_count(match(section)) == pytest.approx(2 / 4)
    assert sentence_count(match(section), "count") == 2.0
    assert sentence_count(match("")) == 0.0


def test_first_sentence() -> None:
    assert first_sentence(match("Zz cancer zz. Zz risk zz.")) == 0.5
    three = ("cancer", "risk", "women")
    assert first_sentence(match("Women zz cancer zz. Risk.", three)) == pytest.approx(2 / 3)
    assert first_sentence(match("Zz zz. Cancer risk.")) == 0.0
    assert first_sentence(match("X.Y")) == 1.0  # one sentence: the whole section


def test_consecutive_terms_is_the_papers_example() -> None:
    assert consecutive_terms(match("...X.YYX..XY")) == pytest.approx(5 / 12)  # paper: 0.4167
    assert consecutive_terms(match("Cancer, risk zz.")) == pytest.approx(2 / 3)  # "," no token
    assert consecutive_terms(match("X.Y.X")) == 0.0
    assert consecutive_terms(match("XX")) == 1.0
    assert consecutive_terms(match("")) == 0.0


# weights and enable flags ----------------------------------------------------------------------

# On the paper's example section ...X...Y...X... (one sentence): term_frequency 3/15,
# term_share 1, term_order 2/3 (X, Y in order; the last X goes back), sentence_count 1/1,
# first_sentence 2/2, consecutive_terms 0. On the title "X Y": every heuristic 1 (6 in all).
EXAMPLE = match("...X...Y...X...")
EXAMPLE_SCORES = {
    "term_frequency": 0.2,
    "term_share": 1.0,
    "term_order": 2 / 3,
    "sentence_count": 1.0,
    "first_sentence": 1.0,
    "consecutive_terms": 0.0,
}


def test_heuristic_scores_of_a_section() -> None:
    assert AskMeConfig().heuristic_scores(EXAMPLE) == pytest.approx(EXAMPLE_SCORES)
    assert AskMeConfig().section_score(EXAMPLE) == pytest.approx(58 / 15)


def test_heuristic_weights() -> None:
    config = AskMeConfig(weights={"term_frequency": 2.0, "term_order": 3.0})
    assert config.section_score(EXAMPLE) == pytest.approx(0.4 + 1 + 2 + 1 + 1 + 0)


def test_enable_flags() -> None:
    config = AskMeConfig(enabled={"term_share": False, "first_sentence": False})
    assert set(config.heuristic_scores(EXAMPLE)) == set(HEURISTICS) - {
        "term_share",
        "first_sentence",
    }
    assert config.section_score(EXAMPLE) == pytest.approx(0.2 + 2 / 3 + 1 + 0)
    nothing = AskMeConfig(enabled=dict.fromkeys(HEURISTICS, False))
    assert nothing.section_score(EXAMPLE) == 0.0


def test_section_weights() -> None:
    sections = {"title": Section.from_text(text("XY")), "text": EXAMPLE.section}
    assert AskMeConfig().document_score(TERMS, sections) == pytest.approx(6 + 58 / 15)
    weighted = AskMeConfig(sections={"title": 2.0, "text": 0.5})
    assert weighted.document_score(TERMS, sections) == pytest.approx(12 + 29 / 15)
    assert AskMeConfig(sections={"text": 0.0}).document_score(TERMS, sections) == 6.0


# combine modes and the re-ranked run -----------------------------------------------------------

# Heuristic (document) scores: d1 has no search term (0), d2's title "Cancer risk" scores 6, d3's
# title "Cancer zz" scores 1/2 + 1/2 + 1 + 1 + 1/2 + 0 = 3.5 (empty text sections score 0).
CORPUS = {
    "d1": {"id": "d1", "title": "", "text": "Zz zz zz zz."},
    "d2": {"id": "d2", "title": "Cancer risk", "text": ""},
    "d3": {"id": "d3", "title": "Cancer zz", "text": None},
}
TOPICS = {"t1": "cancer risk"}
BM25 = {"t1": {"d1": 10.0, "d2": 5.0, "d3": 4.0}}
HEURISTIC = {"d1": 0.0, "d2": 6.0, "d3": 3.5}


def test_document_scores_of_the_toy_corpus() -> None:
    config = AskMeConfig()
    for doc, expected in HEURISTIC.items():
        sections = {name: Section.from_text(CORPUS[doc][name] or "") for name in ("title", "text")}
        assert config.document_score(TERMS, sections) == pytest.approx(expected), doc


@pytest.mark.parametrize(
    ("config", "combined", "order"),
    [
        (AskMeConfig(), HEURISTIC, ["d2", "d3", "d1"]),
        (AskMeConfig(combine="sum"), {"d1": 10.0, "d2": 11.0, "d3": 7.5}, ["d2", "d1", "d3"]),
        # min-max: BM25 d1 1, d2 1/6, d3 0; heuristics d1 0, d2 1, d3 7/12.
        (
            AskMeConfig(combine="linear"),
            {"d1": 0.5, "d2": 7 / 12, "d3": 7 / 24},
            ["d2", "d1", "d3"],
        ),
        (
            AskMeConfig(combine="linear", alpha=0.8),
            {"d1": 0.8, "d2": 0.8 / 6 + 0.2, "d3": 0.2 * 7 / 12},
            ["d1", "d2", "d3"],
        ),
    ],
    ids=["heuristics", "sum", "linear-0.5", "linear-0.8"],
)
def test_combine_modes(config: AskMeConfig, combined: dict, order: list[str]) -> None:
    assert config.combined(BM25["t1"], HEURISTIC) == pytest.approx(combined)
    run = rerank(BM25, CORPUS, TOPICS, config)
    assert list(run["t1"].items()) == list(zip(order, [3.0, 2.0, 1.0], strict=True))


def test_bm25_breaks_heuristic_ties_not_doc_id() -> None:
    corpus = {doc: {"id": doc, "title": "Cancer", "text": ""} for doc in ("a", "b")}
    run = rerank({"t": {"a": 2.0, "b": 1.0}}, corpus, {"t": "cancer"})
    assert list(run["t"]) == ["a", "b"]  # canonical doc-id order would put b first


def test_documents_below_depth_keep_bm25_order_below() -> None:
    corpus = {
        **CORPUS,
        "d4": {"id": "d4", "title": "Cancer risk", "text": "Cancer risk."},
        "d5": {"id": "d5", "title": "", "text": ""},
    }
    bm25 = {"t1": {"d1": 10.0, "d2": 5.0, "d3": 4.0, "d5": 2.0, "d4": 1.0}}
    run = rerank(bm25, corpus, TOPICS, AskMeConfig(depth=2))
    # d1, d2 re-ranked (d2 first); d3, d5, d4 keep BM25 order although d4 scores highest.
    assert list(run["t1"].items()) == [
        ("d2", 5.0),
        ("d1", 4.0),
        ("d3", 3.0),
        ("d5", 2.0),
        ("d4", 1.0),
    ]


def test_missing_topic_or_document_is_an_error() -> None:
    with pytest.raises(HybridIRError, match="topic 't2'"):
        rerank({"t2": {"d1": 1.0}}, CORPUS, TOPICS)
    with pytest.raises(HybridIRError, match="document 'd9'"):
        rerank({"t1": {"d9": 1.0}}, CORPUS, TOPICS)


# streaming: candidates read topic by topic, from a Lucene index's stored documents -------------


class CountingDocuments:
    """A dict corpus that records every lookup, to see what :func:`rerank` reads and when."""

    def __init__(self, corpus: dict) -> None:
        self.corpus = corpus
        self.reads: list[str] = []

    def get(self, doc: str) -> dict | None:
        self.reads.append(doc)
        return self.corpus.get(doc)


def test_only_each_topics_head_is_read_topic_by_topic() -> None:
    bm25 = {
        "t1": {"d1": 10.0, "d2": 5.0, "d3": 4.0},
        "t2": {"d3": 3.0, "d2": 2.0, "d1": 1.0},
    }
    topics, config = {"t1": "cancer risk", "t2": "risk"}, AskMeConfig(depth=2)
    documents = CountingDocuments(CORPUS)
    streamed = rerank(iter(bm25.items()), documents, topics, config)  # a stream, read once
    # Depth 2: d3 of t1 and d1 of t2 are never read; d2, read for t1, is read again for t2.
    assert documents.reads == ["d1", "d2", "d3", "d2"]
    assert streamed == rerank(bm25, CORPUS, topics, config)
    assert list(streamed["t2"]) == ["d2", "d3", "d1"]


# Field values that a JSON round trip through Anserini could alter if anything were lost: quotes,
# backslashes, non-ASCII letters, a newline, a missing title.
STORED = [
    {"id": "s1", "title": 'Cancer "risk" \\ of women', "text": "Risk of cancer. Cancer risk zz."},
    {"id": "s2", "title": None, "text": "Zz zz cancer.\nRisk — naïve cancer-risk é."},
    {"id": "s3", "title": "Risk zz", "text": "Zz cancer zz risk. Cancer zz."},
    {"id": "s4", "title": "Zz", "text": "Zz zz zz."},
]


@pytest.fixture(scope="module", params=["flat", "multifield"])
def stored_index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    from hybrid_ir.data.formats import write_records
    from hybrid_ir.retrieval.lucene.index import build_bm25_index

    root = tmp_path_factory.mktemp(f"stored-{request.param}")
    write_records(root / "corpus.jsonl", STORED)
    build_bm25_index(root / "corpus.jsonl", root / "index", request.param, store_raw=True)
    return root / "index"


@pytest.mark.lucene
def test_stored_documents_are_the_indexed_records(stored_index) -> None:
    from hybrid_ir.retrieval.lucene.stored import StoredDocuments

    documents = StoredDocuments(stored_index)
    for record in STORED:
        assert documents.get(record["id"]) == record
    assert documents.get("s9") is None
    assert documents.lookups == len(STORED) + 1


@pytest.mark.lucene
def test_an_index_without_raw_documents_searches_the_same_and_refuses_lookups(
    stored_index, tmp_path
) -> None:
    from hybrid_ir.data.formats import write_records
    from hybrid_ir.retrieval.lucene.index import build_bm25_index
    from hybrid_ir.retrieval.lucene.search import bm25_search
    from hybrid_ir.retrieval.lucene.stored import StoredDocuments

    layout = stored_index.parent.name.removeprefix("stored-").rstrip("0123456789")
    write_records(tmp_path / "corpus.jsonl", STORED)
    build_bm25_index(tmp_path / "corpus.jsonl", tmp_path / "index", layout)
    write_records(
        tmp_path / "topics.jsonl",
        [
            {"id": "q1", "title": None, "text": "cancer risk"},
            {"id": "s3", "title": None, "text": "zz"},
        ],
    )
    runs = {}
    for name, index in (("raw", stored_index), ("no-raw", tmp_path / "index")):
        runs[name] = tmp_path / f"{name}.trec"
        settings = {"layout": layout, "k1": 0.9, "b": 0.4, "depth": 10, "tag": "bm25"}
        bm25_search(index, tmp_path / "topics.jsonl", runs[name], remove_query=True,
                    query_fields=["text"], **settings)  # fmt: skip
    assert runs["raw"].read_bytes() == runs["no-raw"].read_bytes()
    found = [line.split()[:3] for line in runs["raw"].read_text().splitlines()]
    # q1: the three documents holding a query word; s3 finds every document but itself.
    assert sorted(doc for topic, _, doc in found if topic == "q1") == ["s1", "s2", "s3"]
    assert sorted(doc for topic, _, doc in found if topic == "s3") == ["s1", "s2", "s4"]
    with pytest.raises(HybridIRError, match="without -storeRaw.*askme"):
        StoredDocuments(tmp_path / "index").get("s1")


@pytest.mark.lucene
@pytest.mark.parametrize("combine", ["heuristics", "sum"])
def test_rerank_from_the_index_equals_rerank_from_the_corpus(stored_index, combine: str) -> None:
    from hybrid_ir.retrieval.lucene.stored import StoredDocuments

    bm25 = {
        "q1": {"s1": 4.0, "s2": 3.0, "s3": 2.0, "s4": 1.0},
        "q2": {"s4": 9.0, "s3": 8.0, "s2": 7.0},
    }
    topics = {"q1": "cancer risk", "q2": "risk of naïve cancer"}
    config = AskMeConfig(combine=combine, depth=3)
    corpus = {record["id"]: record for record in STORED}
    from_index = rerank(bm25, StoredDocuments(stored_index), topics, config)
    assert from_index == rerank(bm25, corpus, topics, config)
    if combine == "heuristics":  # s4, BM25's first for q2, holds no search term: now last
        assert list(from_index["q2"]) == ["s3", "s2", "s4"]


# configuration ---------------------------------------------------------------------------------


def test_from_dict_defaults_and_partial_mappings() -> None:
    config = AskMeConfig.from_dict(
        {"depth": 20, "combine": "linear", "alpha": 0.3, "weights": {"term_order": 0.5}}
    )
    assert (config.depth, config.combine, config.alpha) == (20, "linear", 0.3)
    assert config.weights == {**dict.fromkeys(HEURISTICS, 1.0), "term_order": 0.5}
    assert config.enabled == dict.fromkeys(HEURISTICS, True)
    assert config.sections == {"title": 1.0, "text": 1.0}
    assert AskMeConfig.from_dict({}) == AskMeConfig()
    assert AskMeConfig().combine == "heuristics"


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"dept": 10}, "'dept'"),
        ({"weights": {"term_orders": 1.0}}, "'term_orders'"),
        ({"weights": {"term_order": "high"}}, "askme.weights.term_order"),
        ({"weights": {"term_order": True}}, "askme.weights.term_order"),
        ({"weights": [1.0]}, "askme.weights"),
        ({"enabled": {"term_share": "yes"}}, "askme.enabled.term_share"),
        ({"sections": {"abstract": 1.0}}, "'abstract'"),
        ({"depth": 0}, "askme.depth"),
        ({"depth": 1.5}, "askme.depth"),
        ({"combine": "max"}, "askme.combine"),
        ({"alpha": 1.5}, "askme.alpha"),
        ({"sentence_count": "raw"}, "askme.sentence_count"),
    ],
)
def test_from_dict_errors_name_the_bad_key(values: dict, named: str) -> None:
    with pytest.raises(ConfigError) as error:
        AskMeConfig.from_dict(values)
    message = str(error.value)
    assert named in message
    assert "\n" not in message


def test_from_dict_rejects_a_non_mapping() -> None:
    with pytest.raises(ConfigError, match="askme: expected a mapping"):
        AskMeConfig.from_dict([("depth", 10)])  # type: ignore[arg-type]


# configs/paper004-beir.yaml on stand-ins for the BEIR datasets ----------------------------------

REPO = Path(__file__).resolve().parents[1]
BEIR_QUERIES = [{"_id": "1", "text": "origin of covid"}, {"_id": "2", "text": "do masks work"}]
BEIR_CORPUS = [
    {"_id": "d1", "title": "Covid origin", "text": "The origin of the virus."},
    {"_id": "d2", "title": "Masks", "text": "Masks reduce spread."},
]
BEIR_QRELS = "query-id\tcorpus-id\tscore\n1\td1\t2\n2\td2\t1\n"


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def test_the_beir_overlay_plans_bm25_askme_and_fig4_on_stand_ins(tmp_path: Path) -> None:
    """The official layouts, generated: BEIR zips for TREC-COVID and NFCorpus, loose files for
    BioASQ; each askme run reads the multifield index, and the table has all three."""
    mirror = tmp_path / "mirror"
    files = []
    for name in ("trec-covid", "nfcorpus"):
        path = mirror / f"beir/{name}/{name}.zip"
        path.parent.mkdir(parents=True)
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(f"{name}/corpus.jsonl", _jsonl(BEIR_CORPUS))
            archive.writestr(f"{name}/queries.jsonl", _jsonl(BEIR_QUERIES))
            archive.writestr(f"{name}/qrels/test.tsv", BEIR_QRELS)
        files.append(path)
    bioasq = mirror / "beir/bioasq"
    (bioasq / "qrels").mkdir(parents=True)
    with gzip.open(bioasq / "corpus.jsonl.gz", "wt") as corpus:
        corpus.write(_jsonl(BEIR_CORPUS))
    (bioasq / "queries.jsonl").write_text(_jsonl(BEIR_QUERIES))
    (bioasq / "qrels/test.tsv").write_text(BEIR_QRELS)
    files += [bioasq / "corpus.jsonl.gz", bioasq / "queries.jsonl", bioasq / "qrels/test.tsv"]
    manifest = tmp_path / "manifest.tsv"
    shutil.copyfile(REPO / "workflow/resources/manifest.tsv", manifest)
    add_to_manifest(manifest, [entry_for_file(file, mirror) for file in files])

    command = [
        str(Path(sys.executable).with_name("snakemake")), "--dry-run", "--forceall", "--nolock",
        "--cores", "1", "--configfile", "configs/paper004-beir.yaml",
        "--config", f"manifest={manifest}", f"mirror={mirror}",
        "--", "results/tables/paper004-fig4.md",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    plan = done.stdout
    assert "results/tables/paper004-fig4.md" in plan
    for collection in ("trec-covid", "nfcorpus", "bioasq"):
        assert f"results/runs/{collection}/test/bm25-askme.trec" in plan
        assert f"results/indexes/{collection}/bm25-multifield" in plan
        assert f"results/runs/{collection}/test/bm25-flat.trec" in plan
    # Each askme job's inputs: its base run and the multifield index it reads documents from.
    askme_inputs = [
        [path.strip() for path in line.split(":", 1)[1].split(",")]
        for job in plan.split("\nrule ")[1:]
        if job.startswith("retrieve:")
        for line in job.splitlines()
        if line.strip().startswith("input:")
    ]
    assert len(askme_inputs) == 3
    for inputs in askme_inputs:
        assert any(path.endswith("/test/bm25-multifield.trec") for path in inputs), inputs
        index = [path for path in inputs if path.startswith("results/indexes/")]
        assert len(index) == 1 and index[0].endswith("/bm25-multifield"), inputs
