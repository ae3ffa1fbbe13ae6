"""Embeddings for recall: clients of embedding servers, the background embedder and the
stored vectors' search (see `graymatter_tui.recall.vector_signal` for what recall asks of it)."""
