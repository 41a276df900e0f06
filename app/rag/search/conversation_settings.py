"""The per-session settings of conversational retrieval (the rewrite, evaluate and widen): their one
definition, which RagSettings (app/rag/session_settings.py), the CHECK constraints of migration
0011, GraphQL and the trace use."""

from __future__ import annotations

from enum import StrEnum


class Quality(StrEnum):
    """How hard a chat turn searches: the most retrieval passes of evaluate-and-widen."""

    QUICK = "quick"  # one pass
    BALANCED = "balanced"  # at most two
    THOROUGH = "thorough"  # at most four

    @property
    def passes(self) -> int:
        return {Quality.QUICK: 1, Quality.BALANCED: 2, Quality.THOROUGH: 4}[self]


class RewriteMode(StrEnum):
    """Whether a session's follow-ups are rewritten into standalone queries by its chat model."""

    OFF = "off"
    ON = "on"
    AUTO = "auto"  # when the chat model declares it rewrites reliably (ModelCapabilities.query_rewriting)
