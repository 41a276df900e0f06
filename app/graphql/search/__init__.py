"""Search in the API: a knowledge base searched directly, a turn's retrieval previewed, and their traces."""
