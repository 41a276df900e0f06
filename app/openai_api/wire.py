"""The OpenAI chat-completions wire format as this door speaks it: the request it reads, the
responses and stream chunks it writes, and OpenAI's error shape. Fields OpenAI defines that have no
meaning here (temperature, logprobs, tools, ...) are accepted and ignored, as other compatible
servers do; those that would change what a client receives and cannot be honoured (``n`` > 1,
images, tool messages) are refused with a 400 naming them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.errors import ErrorCode, RagchatError
from app.services.chat.events import SourceRef
from app.services.records import Role

MODEL_PREFIX = "ragchat/"


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        if other := sorted({p.type for p in self.content if p.type != "text"}):
            raise BadRequest(f"only text content is supported, not {', '.join(other)}", "messages")
        return "".join(p.text or "" for p in self.content)


class Options(BaseModel):
    """The ``ragchat`` extension object of a request."""

    model_config = ConfigDict(extra="forbid")
    session_id: str | None = Field(None, description="Ask in this chat session (its history, its settings).")
    store: bool = Field(False, description="Keep the conversation as a chat session (and its trace).")


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[Message] = Field(min_length=1, max_length=500)
    stream: bool = False
    n: int | None = None
    user: str | None = None
    ragchat: Options = Field(default_factory=Options)

    @field_validator("n")
    @classmethod
    def _one_choice(cls, n: int | None) -> int | None:
        if n is not None and n != 1:
            raise ValueError("only n = 1 is supported: one answer per question")
        return n


@dataclass(frozen=True)
class Conversation:
    """What a request asks: the question, the turns before it, and a system prompt if it gave one."""

    question: str
    history: list[tuple[Role, str]]
    system_prompt: str | None


def conversation(request: ChatRequest) -> Conversation:
    *before, last = request.messages
    if last.role != "user" or not last.text().strip():
        raise BadRequest("the last message must be the user's question, with text", "messages")
    history: list[tuple[Role, str]] = []
    system: list[str] = []
    for message in before:
        if message.role in ("system", "developer"):
            system.append(message.text())
        elif message.role in ("tool", "function"):
            raise BadRequest("tool messages are not supported: ragchat runs its own tools", "messages")
        elif text := message.text().strip():
            history.append((Role.USER if message.role == "user" else Role.ASSISTANT, text))
    return Conversation(last.text(), history, "\n\n".join(system) if system else None)


def parse(body: Any) -> ChatRequest:
    try:
        return ChatRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise BadRequest(f"{where}: {first['msg']}" if where else first["msg"], where) from None


class BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param = message, param


# How each of ragchat's error codes reads to an OpenAI client: (HTTP status, OpenAI error type).
STATUS: dict[ErrorCode, tuple[int, str]] = {
    ErrorCode.VALIDATION: (400, "invalid_request_error"),
    ErrorCode.LIMIT_EXCEEDED: (400, "invalid_request_error"),
    ErrorCode.CONFLICT: (409, "invalid_request_error"),
    ErrorCode.NOT_FOUND: (404, "invalid_request_error"),
    ErrorCode.MODEL_NOT_FOUND: (404, "invalid_request_error"),
    ErrorCode.FORBIDDEN: (403, "permission_error"),
    ErrorCode.BUSY: (429, "rate_limit_error"),
    ErrorCode.PROVIDER_RATE_LIMIT: (429, "rate_limit_error"),
    ErrorCode.PROVIDER_TIMEOUT: (504, "api_error"),
    ErrorCode.PROVIDER_UNAVAILABLE: (503, "api_error"),
    ErrorCode.STORAGE: (503, "api_error"),
}


def error_body(message: str, kind: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def of_error(error: RagchatError) -> tuple[int, dict[str, Any]]:
    status, kind = STATUS.get(
        error.code, (502, "api_error") if error.code.value.startswith("provider") else (500, "api_error")
    )
    return status, error_body(error.message, kind, error.code.value)


def citations(sources: list[SourceRef], cited: set[int]) -> list[dict[str, Any]]:
    """The extension field's citations: the sources the answer cites, by their ``[n]`` marker."""
    return [
        {
            "marker": s.number,
            "document_id": str(s.document_id),
            "document_name": s.document_name,
            "location": {
                "line_start": s.location.line_start,
                "line_end": s.location.line_end,
                "page": s.location.page,
                "heading_path": s.location.heading_path,
            },
            "score": s.score,
            "text": s.text,
        }
        for s in sources
        if s.number in cited
    ]


def completion(
    completion_id: str, model: str, content: str, extension: dict[str, Any], finish: str = "stop"
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "ragchat": extension,
    }


def chunk(
    completion_id: str,
    model: str,
    delta: dict[str, Any],
    finish: str | None = None,
    extension: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if extension is not None:
        body["ragchat"] = extension
    return body
