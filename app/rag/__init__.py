"""Retrieval: parsing, chunking, ingestion, vector / keyword / hybrid search, budgets and prompts."""
