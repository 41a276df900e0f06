"""Ingestion: what gets ingested, parsing (in a worker that can be killed), chunking, and writing a
document with its chunks and vectors in one transaction; re-embedding into a new space."""
