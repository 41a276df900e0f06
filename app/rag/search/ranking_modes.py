"""A chat session's ranking stages: reranking and multi-query expansion, and how AUTO decides.

- ``RerankMode``: ``OFF``; ``ENDPOINT`` (the operator's HTTP rerank endpoint, RAGCHAT_RERANK__URL);
  ``JUDGE`` (the session's chat model rates the first candidates); ``AUTO`` (the default): the
  endpoint when one is configured, else off — the judge costs a model call per question and did
  not pay for itself with the offline default model (docs/BENCHMARKS.md), so it is asked for, never assumed.
- ``ExpansionMode``: ``OFF`` (the default, for the same reason), ``ON``: the session's chat model
  proposes alternative phrasings, searched beside the question; ``AUTO``: on when the session's
  chat model declares that it follows instructions reliably (``grounded_writing``), else off.
"""

from __future__ import annotations

from enum import StrEnum


class RerankMode(StrEnum):
    OFF = "off"
    AUTO = "auto"
    ENDPOINT = "endpoint"
    JUDGE = "judge"


class ExpansionMode(StrEnum):
    OFF = "off"
    ON = "on"
    AUTO = "auto"


def rerank_used(mode: RerankMode, *, endpoint: bool) -> RerankMode:
    """What runs: OFF, ENDPOINT or JUDGE (ENDPOINT asked for with none configured runs OFF)."""
    if mode is RerankMode.AUTO:
        return RerankMode.ENDPOINT if endpoint else RerankMode.OFF
    if mode is RerankMode.ENDPOINT and not endpoint:
        return RerankMode.OFF
    return mode


def expansion_used(mode: ExpansionMode, *, capable: bool) -> bool:
    return mode is ExpansionMode.ON or (mode is ExpansionMode.AUTO and capable)
