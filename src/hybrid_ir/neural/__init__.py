"""Trained and pretrained neural models: encoders, their training, indexing and search."""
