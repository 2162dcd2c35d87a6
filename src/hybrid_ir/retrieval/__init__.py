"""Retrieval that is not a neural model's: BM25 (Lucene and sparse matrices), Approach0 structure
search, AskMe, and the text analysis they use."""
