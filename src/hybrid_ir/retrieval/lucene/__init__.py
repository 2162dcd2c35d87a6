"""BM25 through Lucene (pyserini): the JVM, indexing and search."""
