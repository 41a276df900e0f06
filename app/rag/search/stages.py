"""The timed stages of a search and of a chat turn, in the order they run: the keys of a search's
``timings_ms`` (app/rag/search/retrieval.py) and of a trace's (app/services/chat/trace.py), and GraphQL's
``Stage``. A member is the string stored in traces, so traces written before this enum read the same.
"""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    REWRITE = "rewrite"  # the chat model's standalone rewrite of a follow-up (app/rag/search/rewrite.py)
    RETRIEVAL_EMBED = "retrieval_embed"  # the question's embedding
    RETRIEVAL_VECTOR = "retrieval_vector"  # nearest neighbours in the vector index
    RETRIEVAL_KEYWORD = "retrieval_keyword"  # BM25 search in the in-memory keyword index
    RETRIEVAL_SCORE = "retrieval_score"  # exact cosine of every candidate from its stored vector
    RETRIEVAL_LOAD = "retrieval_load"  # reading the candidates' text and location
    RETRIEVAL_FEEDBACK = "retrieval_feedback"  # pseudo-relevance feedback: the moved question's searches
    RETRIEVAL_RANK = "retrieval_rank"  # fusion, threshold and top-k
    EXPANSION = "expansion"  # the chat model proposing alternative phrasings of the question
    RERANK = "rerank"  # a reranker scoring the first candidates
    EXTRACT = "extract"  # quoting sentences for an extractive answer
    TOOL_SELECT = "tool_select"  # choosing the tools offered: group filter, similarity ranking, core tools
    TOOLS = "tools"  # the tool loop: the model's rounds and its calls, before the answer streams on
    BUDGET = "budget"  # building the prompt within the model's context window
    FIRST_TOKEN = "first_token"  # from the model's call to its first token
    GENERATE = "generate"  # from the model's call to its last token
    GUARD = "guard"  # the answer guard's review of a generated answer
    CITATIONS = "citations"  # checking [n] markers, or attributing sentences to sources
