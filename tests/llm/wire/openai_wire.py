"""OpenAI's ``POST /v1/embeddings`` on loopback, with its real request and response shapes.

Bodies follow the API reference: ``{"object": "list", "data": [{"object": "embedding", "index": i,
"embedding": [...] | "<base64 float32>"}], "model": ..., "usage": {...}}``; errors are
``{"error": {"message", "type", "param", "code"}}`` with the status OpenAI uses.
"""

from __future__ import annotations

import base64

import numpy as np

from tests.llm.wire.server import Received, Reply, WireServer
from tests.llm.wire.vectors import fake_vector

MODELS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "custom-embedder": 48}


def openai_error(status: int, message: str, *, type_: str, code: str | None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": type_, "param": None, "code": code}})


def invalid_key(key: str) -> Reply:
    # The real API masks most of the key; this one echoes it whole, to prove the adapter drops it.
    return openai_error(
        401, f"Incorrect API key provided: {key}.", type_="invalid_request_error", code="invalid_api_key"
    )


def model_not_found(model: str) -> Reply:
    message = f"The model `{model}` does not exist or you do not have access to it."
    return openai_error(404, message, type_="invalid_request_error", code="model_not_found")


RATE_LIMITED = openai_error(429, "Rate limit reached for requests.", type_="requests", code="rate_limit_exceeded")
QUOTA_EXCEEDED = openai_error(
    429, "You exceeded your current quota.", type_="insufficient_quota", code="insufficient_quota"
)
SERVER_ERROR = openai_error(
    500, "The server had an error while processing your request.", type_="server_error", code=None
)


class OpenAIWire(WireServer):
    """Answers like OpenAI for ``api_key``; ``base_url`` is ``url + "/v1"``."""

    def __init__(self, api_key: str = "sk-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.base_url = f"{self.url}/v1"

    def answer(self, request: Received) -> Reply:
        if request.path != "/v1/embeddings":
            return openai_error(404, f"Invalid URL (POST {request.path})", type_="invalid_request_error", code=None)
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return invalid_key(request.headers.get("authorization", "").removeprefix("Bearer "))
        body = request.body
        model, inputs = body["model"], body["input"]
        if model not in MODELS:
            return model_not_found(model)
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if any(text == "" for text in inputs):
            return openai_error(400, "'$.input' is invalid.", type_="invalid_request_error", code=None)
        dimensions = body.get("dimensions") or MODELS[model]
        data = [
            {"object": "embedding", "index": i, "embedding": _encode(fake_vector(text, dimensions), body)}
            for i, text in enumerate(inputs)
        ]
        tokens = sum(len(text.split()) for text in inputs)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return Reply(200, {"object": "list", "data": data, "model": model, "usage": usage})


def _encode(vector: list[float], body: dict[str, object]) -> list[float] | str:
    if body.get("encoding_format") == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
    return vector
