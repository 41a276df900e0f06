"""Ollama's ``POST /api/embed`` on loopback, with its real request and response shapes.

Request ``{"model", "input": str | [str], "truncate"?, "options"?, "keep_alive"?, "dimensions"?}``;
response ``{"model", "embeddings": [[...]], "total_duration", "load_duration", "prompt_eval_count"}``;
errors ``{"error": "..."}`` (an unknown model is a 404 asking to pull it).
"""

from __future__ import annotations

from tests.llm.wire.server import Received, Reply, WireServer
from tests.llm.wire.vectors import fake_vector

MODELS = {"nomic-embed-text:latest": 768, "all-minilm:latest": 384, "all-minilm:l6-v2": 384}


def not_found(model: str) -> Reply:
    return Reply(404, {"error": f'model "{model}" not found, try pulling it first'})


SERVER_ERROR = Reply(500, {"error": "llama runner process has terminated: signal: killed"})


class OllamaWire(WireServer):
    """Answers like an Ollama server that has pulled :data:`MODELS`."""

    def answer(self, request: Received) -> Reply:
        if request.path != "/api/embed":
            return Reply(404, b"404 page not found")
        model = request.body["model"]
        tagged = model if ":" in model else f"{model}:latest"
        if tagged not in MODELS:
            return not_found(model)
        inputs = request.body["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        dimensions = request.body.get("dimensions") or MODELS[tagged]
        embeddings = [fake_vector(text, dimensions) for text in inputs]
        return Reply(
            200,
            {
                "model": model,
                "embeddings": embeddings,
                "total_duration": 14_143_917,
                "load_duration": 1_019_500,
                "prompt_eval_count": sum(len(text.split()) for text in inputs),
            },
        )
