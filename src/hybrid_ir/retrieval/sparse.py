"""Sparse lexical retrieval as sparse-matrix products, and the tuning paper 002 does on top.

Three models, each fitted once on ``{doc id: text}`` and searched with ``{topic: text}``:

:class:`TfidfCosine`
    scikit-learn's TF-IDF with cosine similarity: paper 003's vector-space retrieval (VSR,
    "TF-IDF token weighting and cosine similarity ... after removing a standard set of
    stopwords") and paper 001's tf-idf first stage (Elasticsearch's classic similarity in the
    paper; this is the textbook weighting, not a re-implementation of Lucene's).
:class:`PivotedTfidf`
    paper 002 §2.2 and Appendix C, Eq. 1, 2, 6-8.
:class:`SparseBM25`
    paper 002 §2.3, Eq. 3-5, the document-term weight matrix precomputed as CSC.

Scoring is one product of a query-term matrix with the document-term matrix for all queries at
once; :func:`top_k` then takes each topic's best ``k`` with :func:`numpy.argpartition` over the
documents that share a term with the query, and :func:`hybrid_ir.data.runs.canonicalize` orders them
(score descending, ties by document id descending, as trec_eval reads a run). A document scoring
0 shares no weighted term with the query and is not returned, so a topic may hold fewer than
``k`` documents (or none, which the run keeps as an empty topic).

:func:`grid_search_bm25` is paper 002's k1/b grid (Appendix F); its ensemble share eta
(Algorithm 1, Table 2) is :func:`hybrid_ir.fusion.sweeps.tune_interleave` and its Recall@k curve
(Fig. 1) :func:`hybrid_ir.evaluation.measures.recall_curve`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Self, TypeAlias, TypeVar

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer, TfidfVectorizer
from sklearn.preprocessing import normalize

from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run, canonicalize
from hybrid_ir.errors import ConfigError
from hybrid_ir.fusion.grids import Tuned, grid, grid_search, measure_per_topic, tuned

if TYPE_CHECKING:
    # spaCy takes about 5 s to import: only a job with an analyzer loads it
    # (hybrid_ir.retrieval.retrievers).
    from hybrid_ir.retrieval.analysis import Analyzer

TextAnalyzer: TypeAlias = "Analyzer | Callable[[str], list[str]]"
"""An :class:`~hybrid_ir.retrieval.analysis.Analyzer` (batched) or any ``text -> terms``
function."""

K1S: tuple[float, ...] = (1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0)
"""Paper 002 Appendix F's k1 grid; the paper prints "1.7, 1.9, 1.9", read as 1.8 for the first
1.9 (the grid steps by 0.1 from 1.1 to 2.0)."""
BS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
"""Paper 002 Appendix F's b grid."""
P = TypeVar("P", bound=Hashable)


def record_texts(
    records: Iterable[Mapping[str, str]], fields: Sequence[str] = ("title", "text")
) -> dict[str, str]:
    """``{id: text}`` from canonical records, the non-empty ``fields`` joined by a space.

    Title and body are indexed as one text, as BEIR's and paper 002's sparse baselines do; topics
    with an empty title (SciFact's claims) simply give their text.
    """
    return {
        record["id"]: " ".join(record[field] for field in fields if record.get(field))
        for record in records
    }


def _analyze(analyzer: TextAnalyzer, texts: Sequence[str]) -> list[list[str]]:
    analyze_many = getattr(analyzer, "analyze_many", None)
    if analyze_many is not None:  # an Analyzer: batched through spaCy's pipe
        return analyze_many(texts)
    return [list(analyzer(text)) for text in texts]


def _terms_of(tokens: list[str]) -> list[str]:
    """Identity "analyzer" for scikit-learn vectorizers fed with already analysed texts."""
    return tokens


def _term_counts() -> CountVectorizer:
    """A term-count vectorizer over analysed texts (vocabulary sorted, so deterministic)."""
    return CountVectorizer(analyzer=_terms_of, dtype=np.float64)


def top_k(scores: sparse.csr_matrix, topics: Sequence[str], docs: np.ndarray, k: int) -> Run:
    """Each row's ``k`` best positive scores as a canonical run.

    Only a row's stored entries (documents sharing a term with the query) are looked at:
    :func:`numpy.argpartition` finds the k-th best score, every document scoring at least that
    much is kept (so ties at the cut are all candidates) and :func:`canonicalize` orders them and
    cuts at ``k``, which resolves the ties by document id descending.
    """
    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k!r}")
    run: Run = {}
    indptr, indices, data = scores.indptr, scores.indices, scores.data
    for row, topic in enumerate(topics):
        values = data[indptr[row] : indptr[row + 1]]
        columns = indices[indptr[row] : indptr[row + 1]]
        positive = values > 0
        values, columns = values[positive], columns[positive]
        if len(values) > k:
            kth = values[np.argpartition(values, len(values) - k)[len(values) - k]]
            keep = values >= kth
            values, columns = values[keep], columns[keep]
        run[topic] = dict(zip(docs[columns].tolist(), values.tolist(), strict=True))
    return canonicalize(run, k)


class _SparseRetriever(ABC):
    """Shared fitting and searching: subclasses say how documents and queries become vectors.

    ``_fit_texts`` builds the document matrix from the corpus texts; ``encode`` turns topics
    into a query matrix (kept separate from ranking, so tuning encodes its queries once);
    ``_score`` multiplies the two.
    """

    def __init__(self, analyzer: TextAnalyzer | None) -> None:
        self.analyzer = analyzer
        self.doc_ids = np.array([], dtype=object)

    def fit(self, corpus: Mapping[str, str]) -> Self:
        """Analyse and index ``{doc id: text}``; return the fitted model."""
        if not corpus:
            raise ConfigError("cannot fit a retrieval model on an empty corpus")
        self.doc_ids = np.array(list(corpus), dtype=object)
        self._fit_texts(list(corpus.values()))
        return self

    def search(self, queries: Mapping[str, str], k: int = 1000) -> Run:
        """The ``k`` best documents of every topic in ``{topic: text}``, in canonical order."""
        topics, matrix = self.encode(queries)
        return self.rank(topics, matrix, k)

    def encode(self, queries: Mapping[str, str]) -> tuple[list[str], sparse.csr_matrix]:
        """The topics and their query-term matrix (one row per topic)."""
        if not len(self.doc_ids):
            raise ConfigError(f"{type(self).__name__} must be fitted before it can search")
        return list(queries), self._encode_texts(list(queries.values()))

    def rank(self, topics: Sequence[str], matrix: sparse.csr_matrix, k: int = 1000) -> Run:
        """Score encoded queries against every document and keep each topic's top ``k``."""
        return top_k(sparse.csr_matrix(self._score(matrix)), topics, self.doc_ids, k)

    @abstractmethod
    def _fit_texts(self, texts: list[str]) -> None:
        """Build the document matrix from the corpus texts."""

    @abstractmethod
    def _encode_texts(self, texts: list[str]) -> sparse.csr_matrix:
        """The query matrix of query texts."""

    @abstractmethod
    def _score(self, queries: sparse.csr_matrix) -> sparse.spmatrix:
        """Scores, one row per query and one column per document."""


class TfidfCosine(_SparseRetriever):
    """TF-IDF vectors compared by cosine similarity (scikit-learn's ``TfidfVectorizer``).

    Weighting, for documents and queries alike (the idf is the corpus's):

    - tf = raw count of the term, or ``1 + ln(count)`` with ``sublinear_tf``;
    - idf = ``ln((1 + N) / (1 + df)) + 1`` with ``smooth_idf`` (scikit-learn's default, as if
      one extra document held every term once), else ``ln(N / df) + 1``; the ``+ 1`` keeps a
      term found in every document from vanishing;
    - each vector L2-normalized, so the dot product is the cosine.

    Without ``analyzer``, terms are scikit-learn's: lowercased runs of 2+ word characters
    (``(?u)\\b\\w\\w+\\b``), minus ``stop_words`` ("english" is scikit-learn's 318-word list).
    With an ``analyzer``, its terms are used, minus ``stop_words`` again: pass
    ``stop_words=None`` when the analyzer already removes them.
    """

    def __init__(
        self,
        stop_words: str | Iterable[str] | None = "english",
        analyzer: TextAnalyzer | None = None,
        sublinear_tf: bool = False,
        smooth_idf: bool = True,
    ) -> None:
        super().__init__(analyzer)
        if stop_words == "english":
            self.stop_words: frozenset[str] = frozenset(ENGLISH_STOP_WORDS)
        elif isinstance(stop_words, str):
            raise ConfigError(f"unknown stop-word list {stop_words!r}; use 'english' or a list")
        else:
            self.stop_words = frozenset(stop_words or ())
        options = {"sublinear_tf": sublinear_tf, "smooth_idf": smooth_idf, "dtype": np.float64}
        if analyzer is None:
            self.vectorizer = TfidfVectorizer(stop_words=sorted(self.stop_words) or None, **options)
        else:
            self.vectorizer = TfidfVectorizer(analyzer=_terms_of, **options)
        self._documents = sparse.csr_matrix((0, 0))

    def _inputs(self, texts: list[str]) -> list[str] | list[list[str]]:
        if self.analyzer is None:
            return texts
        stop = self.stop_words
        return [[t for t in terms if t not in stop] for terms in _analyze(self.analyzer, texts)]

    def _fit_texts(self, texts: list[str]) -> None:
        self._documents = self.vectorizer.fit_transform(self._inputs(texts))

    def _encode_texts(self, texts: list[str]) -> sparse.csr_matrix:
        return self.vectorizer.transform(self._inputs(texts))

    def _score(self, queries: sparse.csr_matrix) -> sparse.spmatrix:
        return queries @ self._documents.T


class _AnalysedRetriever(_SparseRetriever):
    """A model over analysed terms: texts go through its analyzer, or terms come analysed.

    :meth:`fit_terms` and :meth:`encode_terms` take terms another analyzer made, so one model
    can hold documents and queries each analysed in its own language
    (:mod:`hybrid_ir.retrieval.multilingual`).
    """

    analyzer: TextAnalyzer

    def fit_terms(
        self, corpus: Mapping[str, list[str]], groups: Sequence[str] | None = None
    ) -> Self:
        """Index ``{doc id: terms}``; ``groups`` (one per document, e.g. its language) is what
        a model that normalizes per group uses. Return the fitted model."""
        if not corpus:
            raise ConfigError("cannot fit a retrieval model on an empty corpus")
        self.doc_ids = np.array(list(corpus), dtype=object)
        self._fit_terms(list(corpus.values()), groups)
        return self

    def encode_terms(self, queries: Mapping[str, list[str]]) -> tuple[list[str], sparse.csr_matrix]:
        """The topics and their query-term matrix from analysed query terms."""
        if not len(self.doc_ids):
            raise ConfigError(f"{type(self).__name__} must be fitted before it can search")
        return list(queries), self._encode_terms(list(queries.values()))

    def _fit_texts(self, texts: list[str]) -> None:
        self._fit_terms(_analyze(self.analyzer, texts), None)

    def _encode_texts(self, texts: list[str]) -> sparse.csr_matrix:
        return self._encode_terms(_analyze(self.analyzer, texts))

    @abstractmethod
    def _fit_terms(self, terms: list[list[str]], groups: Sequence[str] | None) -> None:
        """Build the document matrix from analysed documents."""

    @abstractmethod
    def _encode_terms(self, terms: list[list[str]]) -> sparse.csr_matrix:
        """The query matrix of analysed queries."""


class PivotedTfidf(_AnalysedRetriever):
    """Paper 002's TF-IDF (§2.2, Appendix C), exactly as written there.

    With ``n_{t,d}`` the count of term t in document d, N the number of documents, ``n_t`` the
    number holding t, and med the median of ``||TF(d)||_2`` over the corpus (Appendix C takes it
    per language; one fitted model is one language's corpus):

    - Eq. 1: ``TF(d) = [n_{t,d}]``, ``IDF(t) = ln(N / n_t)``;
    - Eq. 6: ``TF'(d) = TF(d) / (0.5 * med + 0.5 * ||TF(d)||_2)``, med the median of the
      document's group (its language) when the model is fitted with groups;
    - Eq. 8: document vector ``TF'(d) * IDF / ||TF'(d) * IDF||_2``;
    - Eq. 7: ``TF'(q) = TF(q) / ||TF(q)||_2`` over the corpus vocabulary (unknown query terms
      have no IDF and are dropped), then Eq. 2 with ``TF'(q)``: ``TF'(q) * IDF / ||...||_2``;
    - score: the inner product of the two (§2.2), i.e. their cosine.

    As written, the pivot cannot change anything: Eq. 6 divides a document's whole TF vector
    by one number, and Eq. 8's L2 normalization removes any such factor (likewise Eq. 7 for a
    query). The scores are the cosines of raw-tf x ``ln(N/n_t)`` vectors; :attr:`median_norm`
    is kept to show the pivot that was applied (:attr:`median_norms` per group). A term in
    every document has IDF 0 and counts for nothing.
    """

    def __init__(self, analyzer: TextAnalyzer) -> None:
        super().__init__(analyzer)
        self.vectorizer = _term_counts()
        self.idf = np.array([])
        self.median_norm = 0.0
        self.median_norms: dict[str, float] = {}
        self._documents = sparse.csr_matrix((0, 0))

    def _fit_terms(self, terms: list[list[str]], groups: Sequence[str] | None) -> None:
        counts = self.vectorizer.fit_transform(terms)
        n_docs = counts.shape[0]
        document_frequency = np.bincount(counts.indices, minlength=counts.shape[1])
        self.idf = np.log(n_docs / document_frequency)
        norms = np.sqrt(np.asarray(counts.multiply(counts).sum(axis=1)).ravel())
        self.median_norm = float(np.median(norms))
        medians = np.full(n_docs, self.median_norm)
        if groups is not None:
            labels = np.array(groups, dtype=object)
            for group in sorted(set(groups)):
                members = labels == group
                self.median_norms[group] = float(np.median(norms[members]))
                medians[members] = self.median_norms[group]
        pivot = 0.5 * medians + 0.5 * norms
        scale = np.divide(1.0, pivot, out=np.zeros_like(pivot), where=pivot > 0)
        pivoted = sparse.diags(scale) @ counts
        documents = normalize(pivoted @ sparse.diags(self.idf), norm="l2")
        documents.eliminate_zeros()
        self._documents = documents.tocsr()

    def _encode_terms(self, terms: list[list[str]]) -> sparse.csr_matrix:
        counts = self.vectorizer.transform(terms)
        return normalize(normalize(counts, norm="l2") @ sparse.diags(self.idf), norm="l2")

    def _score(self, queries: sparse.csr_matrix) -> sparse.spmatrix:
        return queries @ self._documents.T


class SparseBM25(_AnalysedRetriever):
    """Paper 002's BM25 (§2.3) with the document-term weights precomputed as CSC.

    With ``n_{t,d}``, N and ``n_t`` as in Eq. 1, |d| the document's length in analysed terms
    and L the corpus's mean document length:

    - Eq. 3: ``IDF(t) = ln((N - n_t + 0.5) / (n_t + 0.5) + 1)``, Lucene's BM25 idf
      ``log(1 + (N - n + 0.5) / (n + 0.5))`` (natural log, positive for every term);
    - Eq. 4: ``g(t, d) = IDF(t) * n_{t,d} * (k1 + 1) / (n_{t,d} + k1 * (1 - b + b * |d| / L))``.
      The paper prints ``|D| / L`` (corpus size over mean length): a constant, which would
      leave no length normalization at all (b would merely rescale k1); ``|d|``, the
      document's own length, is the BM25 of Robertson and Zaragoza that it cites;
    - Eq. 5: ``s(q, d) = sum over t in Q of g(t, d)``: Q is the query's set of terms, so a term
      repeated in the query counts once (the paper "adds up the columns of G" of its terms).

    :meth:`set_params` recomputes the weights from the stored term counts and document lengths,
    so a k1/b grid never analyses the corpus again.
    """

    def __init__(self, analyzer: TextAnalyzer, k1: float = 1.2, b: float = 0.75) -> None:
        super().__init__(analyzer)
        _check_bm25(k1, b)
        self.k1, self.b = k1, b
        self.vectorizer = _term_counts()
        self.idf = np.array([])
        self.weights = sparse.csc_matrix((0, 0))
        self._counts = sparse.csc_matrix((0, 0))
        self._entry_idf = np.array([])
        self._entry_length = np.array([])

    def _fit_terms(self, terms: list[list[str]], groups: Sequence[str] | None) -> None:
        counts = self.vectorizer.fit_transform(terms).tocsc()
        counts.sort_indices()
        n_docs = counts.shape[0]
        document_frequency = np.diff(counts.indptr)
        self.idf = np.log((n_docs - document_frequency + 0.5) / (document_frequency + 0.5) + 1)
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        mean_length = lengths.mean()
        relative = lengths / mean_length if mean_length > 0 else np.zeros_like(lengths)
        # Per stored entry (CSC order): the idf of its term and |d| / L of its document, so
        # that new k1, b need only elementwise arithmetic on these arrays.
        self._entry_idf = np.repeat(self.idf, document_frequency)
        self._entry_length = relative[counts.indices]
        self._counts = counts
        self._weigh()

    def set_params(self, k1: float | None = None, b: float | None = None) -> Self:
        """Change k1 and/or b and recompute the weight matrix (no re-analysis); return self."""
        k1 = self.k1 if k1 is None else k1
        b = self.b if b is None else b
        _check_bm25(k1, b)
        self.k1, self.b = k1, b
        if len(self.doc_ids):
            self._weigh()
        return self

    def _weigh(self) -> None:
        """G = [g(t, d)] of Eq. 4, stored with the term-count matrix's sparsity pattern."""
        tf, k1 = self._counts.data, self.k1
        norm = k1 * (1 - self.b + self.b * self._entry_length)
        data = self._entry_idf * tf * (k1 + 1) / (tf + norm)
        counts = self._counts
        self.weights = sparse.csc_matrix((data, counts.indices, counts.indptr), counts.shape)

    def _encode_terms(self, terms: list[list[str]]) -> sparse.csr_matrix:
        counts = self.vectorizer.transform(terms)
        return (counts > 0).astype(np.float64)

    def _score(self, queries: sparse.csr_matrix) -> sparse.spmatrix:
        # G is documents x terms (CSC); its transpose is the terms x documents CSR view.
        return queries @ self.weights.T


def _check_bm25(k1: float, b: float) -> None:
    if k1 < 0:
        raise ConfigError(f"BM25 k1 must be >= 0, got {k1!r}")
    if not 0 <= b <= 1:
        raise ConfigError(f"BM25 b must be in [0, 1], got {b!r}")


def grid_search_bm25(
    model: SparseBM25,
    queries: Mapping[str, str],
    qrels: Qrels,
    measure: str,
    k1s: Sequence[float] = K1S,
    bs: Sequence[float] = BS,
    k: int = 1000,
) -> Tuned[tuple[float, float]]:
    """Paper 002's first tuning stage: every ``(k1, b)`` of the grid scored on ``measure``.

    Points follow :func:`hybrid_ir.fusion.grids.grid` order (k1 outer, b inner), which decides ties.
    The queries are analysed once and only the weights are recomputed per point; the model is
    left with the ``k1, b`` it had, so using the best pair is an explicit
    ``model.set_params(*result.best)``. ``k`` is the depth of each run the measure sees; most of
    a point's time goes into building and scoring runs that deep, so a measure cut at 10
    (nDCG@10, R@10) is tuned about ten times faster with ``k=10`` and the same result.
    """
    topics, matrix = model.encode(queries)
    return grid_search_encoded(model, topics, matrix, qrels, measure, k1s, bs, k)


def grid_search_encoded(
    model: SparseBM25,
    topics: Sequence[str],
    matrix: sparse.csr_matrix,
    qrels: Qrels,
    measure: str,
    k1s: Sequence[float] = K1S,
    bs: Sequence[float] = BS,
    k: int = 1000,
) -> Tuned[tuple[float, float]]:
    """:func:`grid_search_bm25` on queries already encoded (:meth:`SparseBM25.encode_terms`)."""
    original = (model.k1, model.b)
    points = [(dict(point)["k1"], dict(point)["b"]) for point in grid({"k1": k1s, "b": bs})]

    def score(point: tuple[float, float]) -> dict[str, float]:
        model.set_params(*point)
        return measure_per_topic(qrels, model.rank(topics, matrix, k), measure)

    try:
        return tuned(grid_search(score, points))
    finally:
        model.set_params(*original)
