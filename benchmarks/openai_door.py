"""Time to first token through the OpenAI-compatible door (``POST /v1/chat/completions``, streamed,
the first chunk with text at an HTTP client) ÷ through the GraphQL ``chat`` subscription (the first
``ChatToken`` at a websocket client), on the same live server, knowledge base, settings and
questions, the two taken in turn in each round (the real local embedder and SmolLM2-135M).

The door does a little more per question: it makes the chat session the subscription's client made
once beforehand (and deletes it after the answer, off the measured path). Before each measured
generation the model answers an unrelated one-token prompt, so neither side gets a warm prompt
prefix the other did not (llama.cpp reuses the longest common prefix).

Usage: python -m benchmarks.openai_door [--quick]
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from app.llm.base import GenerationOptions
from app.llm.chat.local import SMOLLM2
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.first_token import ANSWER_TOKENS, FLUSH, TOP_K, _first_token, local_models
from benchmarks.providers import Models
from benchmarks.server import create_session, live, settings_for
from tests.graphql.ops import CHAT

NAME = "openai_door"
GOAL = 1.1
log = logging.getLogger("benchmarks")


def _door_first_token(base: str, project_id: int, question: str) -> float:
    body = {"model": f"ragchat/{project_id}", "stream": True, "messages": [{"role": "user", "content": question}]}
    first = float("nan")
    start = time.perf_counter()
    with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=120) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if first != first and line.startswith("data: {"):
                chunk = json.loads(line.removeprefix("data: "))
                if "error" in chunk:
                    raise RuntimeError(chunk["error"])
                if chunk["choices"][0]["delta"].get("content"):
                    first = time.perf_counter() - start
    return first


def run(cfg: Config) -> dict[str, Any]:
    n = cfg.pick(10_000, 10_000, 300)
    top_k = cfg.pick(TOP_K, TOP_K, 1)
    count = cfg.pick(5, 3, 1)
    questions = data.questions(cfg.pick(50, 20, 4))[1:]
    kb = data.knowledge_base(cfg, n)
    local, embedder, model = local_models()
    flush = FLUSH
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        copy = kb.copy_to(Path(tmp))
        settings = settings_for(
            copy.path,
            rag={"mode": "vector", "top_k": top_k, "threshold": 0.0},
            llm={"max_answer_tokens": ANSWER_TOKENS},
        )
        with live(settings, embedder, Models(model)) as server:
            chat = create_session(server.api, kb.project_id, provider="local", model=SMOLLM2, threshold=0.0, topK=top_k)

            def subscription(question: str) -> float:
                first = float("nan")
                with server.api.websocket() as ws:
                    start = time.perf_counter()
                    for event in ws.subscribe(CHAT, s=chat, c=question):
                        kind = event["data"]["chat"]["__typename"]
                        if kind == "ChatToken" and first != first:
                            first = time.perf_counter() - start
                        assert kind != "ChatError", event
                return first

            def door(question: str) -> float:
                return _door_first_token(server.api.base, kb.project_id, question)

            door(questions[0])  # the index loads, the first request's imports happen: neither side pays it
            measured: dict[str, list[float]] = {"door": [], "subscription": []}
            for r in range(1, count + 1):
                question = questions[r % len(questions)]
                # Alternate which goes first, so a drift on this shared machine falls on both.
                order = (("door", door), ("subscription", subscription))
                for name, ask in order if r % 2 else order[::-1]:
                    asyncio.run(_first_token(local, flush, GenerationOptions(max_tokens=1)))
                    measured[name].append(ask(question))
                door_s, sub_s = measured["door"][-1], measured["subscription"][-1]
                log.info("round %d: door %.3f s, subscription %.3f s", r, door_s, sub_s)
    ratio = common.ratio(measured["door"], measured["subscription"])
    result: dict[str, Any] = {
        "n": n,
        "rounds": count,
        "times_ms": {name: common.summary(values) for name, values in measured.items()},
        "ratio": ratio,
    }
    text = common.table(
        f"Time to first token, OpenAI door ÷ GraphQL subscription, {SMOLLM2}, N={n} (medians of {count} rounds)",
        ["door TTFT ms", "subscription TTFT ms", "ratio (median)", "p95", f"goal <={GOAL}x"],
        [
            [
                result["times_ms"]["door"]["median"],
                result["times_ms"]["subscription"]["median"],
                ratio["median"],
                ratio["p95"],
                common.goal(ratio["median"] <= GOAL),
            ]
        ],
    )
    return common.write(cfg, NAME, {**result, "table": text}, _plot(result))


def _plot(result: dict[str, Any]) -> Any:
    fig, (ax,) = common.figure(1, width=5)
    t = result["times_ms"]
    ax.bar(["GraphQL subscription", "/v1/chat/completions"], [t["subscription"]["median"], t["door"]["median"]])
    ax.set(ylabel="ms to the first token (median)", title=f"ratio {result['ratio']['median']:.2f}")
    fig.suptitle("Time to first token by door")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
