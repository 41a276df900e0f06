"""How retrieval ranks a knowledge base's chunks (app/rag/search/retrieval.py): by the question's vector
(``VECTOR``), by its words (``KEYWORD``, BM25 on FTS5's tokens), or both fused by reciprocal rank (``HYBRID``).

The one definition: the settings (``RAGCHAT_RAG__MODE``), the trace, GraphQL's ``RetrievalMode`` and
the ``ragchat bench retrieval --mode`` choices are this enum.
"""

from __future__ import annotations

from enum import StrEnum


class RetrievalMode(StrEnum):
    VECTOR = "vector"
    KEYWORD = "keyword"
    HYBRID = "hybrid"
