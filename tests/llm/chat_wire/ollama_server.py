"""A small stand-in for Ollama speaking its documented ``POST /api/chat`` wire format.

The "model" answers by echoing the last user message word by word, one NDJSON line per word
(``{"model", "created_at", "message": {"role": "assistant", "content"}, "done": false}``), then a
final line with ``"done": true``, ``done_reason`` and the counts Ollama reports. It honours
``options.num_predict`` (``done_reason: "length"``) and answers 404 with Ollama's error body for
models it does not have; ``GET /api/version`` answers as Ollama does. Every request body is kept in ``received``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

CREATED_AT = "2024-07-01T12:00:00.000000Z"
VERSION = "0.5.7"  # GET /api/version answers {"version": ...}


def create_app(models: tuple[str, ...] = ("tiny:latest",)) -> tuple[FastAPI, list[dict[str, Any]]]:
    app = FastAPI()
    received: list[dict[str, Any]] = []

    @app.post("/api/chat", response_model=None)
    async def chat(request: Request) -> StreamingResponse | JSONResponse:
        body = await request.json()
        received.append(body)
        model = body["model"]
        if model not in models:
            return JSONResponse({"error": f"model '{model}' not found"}, status_code=404)
        return StreamingResponse(_lines(body), media_type="application/x-ndjson")

    @app.get("/api/version")
    async def version() -> dict[str, str]:
        return {"version": VERSION}

    return app, received


def _lines(body: dict[str, Any]) -> Iterator[str]:
    messages = body["messages"]
    words = ("You said: " + messages[-1]["content"]).split(" ")
    limit = body.get("options", {}).get("num_predict", -1)
    said = words if limit < 0 else words[:limit]
    for index, word in enumerate(said):
        piece = word if index == 0 else " " + word
        yield _line(body["model"], {"message": {"role": "assistant", "content": piece}, "done": False})
    final = {
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "length" if len(said) < len(words) else "stop",
        "total_duration": 1_000_000,
        "load_duration": 1_000,
        "prompt_eval_count": sum(len(m["content"].split()) for m in messages) + 10,
        "prompt_eval_duration": 1_000,
        "eval_count": len(said),
        "eval_duration": 1_000,
    }
    yield _line(body["model"], final)


def _line(model: str, fields: dict[str, Any]) -> str:
    return json.dumps({"model": model, "created_at": CREATED_AT, **fields}) + "\n"
