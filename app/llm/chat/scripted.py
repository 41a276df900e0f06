"""A scripted chat model, for end-to-end tests and demos of the UI against a real server.

Enabled only when ``RAGCHAT_LLM__SCRIPT`` names a JSON file: a list of answers given in turn
(the last one repeats). An answer is a string streamed word by word; ``<FAIL>`` inside it makes
the stream fail at that point; ``{"fail": "message"}`` fails before the first token. It implements
the real ChatModel Protocol, so everything around it (budget, citations, storage) is real.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from app.errors import ProviderUnavailableError, SettingsError
from app.llm.base import GenerationOptions, Message, StreamEvent, TextDelta, Tokenizer, Usage
from app.llm.tokenizers import EstimateTokenizer

PROVIDER = "scripted"
MODEL = "scripted"
_PIECE = re.compile(r"\S+\s*|\s+")


class ScriptedChatModel:
    provider = PROVIDER

    def __init__(self, script: Path, *, token_delay_ms: int = 0, context_window: int = 4096) -> None:
        try:
            answers = json.loads(script.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SettingsError(f"RAGCHAT_LLM__SCRIPT: cannot read {script}: {exc}") from exc
        if not isinstance(answers, list) or not answers:
            raise SettingsError("RAGCHAT_LLM__SCRIPT: expected a non-empty JSON list of answers")
        self.model = MODEL
        self.context_window = context_window
        self.tokenizer: Tokenizer = EstimateTokenizer()
        self._answers: list[str | dict[str, str]] = answers
        self._next = 0
        self._delay = token_delay_ms / 1000
        self._lock = threading.Lock()

    def _take(self) -> str | dict[str, str]:
        with self._lock:
            answer = self._answers[min(self._next, len(self._answers) - 1)]
            self._next += 1
            return answer

    async def stream(self, messages: Sequence[Message], options: GenerationOptions) -> AsyncIterator[StreamEvent]:
        answer = self._take()
        if isinstance(answer, dict):
            raise ProviderUnavailableError(str(answer.get("fail", "scripted failure")), provider=PROVIDER)
        sent = 0
        for piece in _PIECE.findall(answer):
            if "<FAIL>" in piece:
                raise ProviderUnavailableError("the scripted model failed mid-stream", provider=PROVIDER)
            await asyncio.sleep(self._delay)
            sent += 1
            yield TextDelta(piece)
        yield Usage(prompt_tokens=self.count_message_tokens(messages), completion_tokens=sent)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        return sum(self.tokenizer.count(m.content) + 4 for m in messages)
