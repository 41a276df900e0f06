"""5. Time to first token: the first ``ChatToken`` event at a websocket client (graphql-transport-ws
``chat`` subscription, live server, the real local embedder and the real local chat model,
SmolLM2-135M on llama.cpp) ÷ (the bare retrieval call + the model's own time to first token on the
very prompt the server sent it, measured directly).

llama.cpp reuses the longest common prefix of the previous prompt, so before each of the two
measured generations the model first answers an unrelated one-token prompt: neither side gets a
warm prefix the other did not.

Usage: python -m benchmarks.first_token [--quick]
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.llm.base import GenerationOptions, Message, TextDelta
from app.llm.chat.local import SMOLLM2, LocalChatModel, shipped_models
from app.rag.search.retrieval import RetrievalParams, retrieve
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.providers import Clock, Models, TimedChatModel
from benchmarks.server import create_session, live, settings_for
from tests.graphql.ops import CHAT

NAME = "first_token"
GOAL = 1.1
# Two sources (~500 prompt tokens); a shorter prompt makes the server's share larger, not smaller.
TOP_K = 2
ANSWER_TOKENS = 16  # the settings' minimum: the answer's length does not change its first token
log = logging.getLogger("benchmarks")


async def _first_token(model: LocalChatModel, messages: Sequence[Message], options: GenerationOptions) -> float:
    start = time.perf_counter()
    seconds = float("nan")
    stream = model.stream(messages, options)
    try:
        async for event in stream:
            if isinstance(event, TextDelta) and event.text:
                seconds = time.perf_counter() - start
                break
    finally:
        await stream.aclose()
    await asyncio.to_thread(_wait_idle, model)
    return seconds


def _wait_idle(model: LocalChatModel) -> None:
    deadline = time.monotonic() + 60
    while model.busy and time.monotonic() < deadline:  # a cancelled worker stops within one token
        time.sleep(0.005)


# Answered before each measured generation, so neither side gets a warm prompt prefix.
FLUSH = [Message("user", "Reply with one word.")]


def local_models() -> tuple[LocalChatModel, Any, TimedChatModel]:
    """SmolLM2 loaded, the local embedder warm, and the model timed: what the TTFT benchmarks use."""
    from app.llm.embedders.local import LocalEmbedder

    local = LocalChatModel(SMOLLM2, shipped_models()[SMOLLM2])
    asyncio.run(local.load())
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    return local, embedder, TimedChatModel(local, Clock())


def run(cfg: Config) -> dict[str, Any]:
    n = cfg.pick(10_000, 10_000, 300)
    top_k = cfg.pick(TOP_K, TOP_K, 1)
    count = cfg.pick(5, 2, 1)
    questions = data.questions(cfg.pick(50, 20, 4))[1:]
    kb = data.knowledge_base(cfg, n)
    local, embedder, model = local_models()
    options = GenerationOptions(max_tokens=ANSWER_TOKENS, temperature=0.2)
    flush = FLUSH
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        copy = kb.copy_to(Path(tmp))
        settings = settings_for(copy.path, rag={"mode": "vector"}, llm={"max_answer_tokens": ANSWER_TOKENS})
        params = RetrievalParams.for_session(settings.rag, top_k=top_k, threshold=0.0)
        with live(settings, embedder, Models(model)) as server:
            chat = create_session(server.api, kb.project_id, provider="local", model=SMOLLM2, threshold=0.0, topK=top_k)

            def client(r: int) -> float:
                asyncio.run(_first_token(local, flush, GenerationOptions(max_tokens=1)))
                first = float("nan")
                with server.api.websocket() as ws:
                    start = time.perf_counter()
                    for event in ws.subscribe(CHAT, s=chat, c=questions[r % len(questions)]):
                        kind = event["data"]["chat"]["__typename"]
                        if kind == "ChatToken" and first != first:
                            first = time.perf_counter() - start
                        assert kind != "ChatError", event
                return first

            def bare(r: int) -> tuple[float, float]:
                question = questions[r % len(questions)]
                retrieval = common.timed(
                    lambda: retrieve(server.container.store, embedder, kb.project_id, question, params)
                )
                asyncio.run(_first_token(local, flush, GenerationOptions(max_tokens=1)))
                own = asyncio.run(_first_token(local, model.sent[-1], options))
                return retrieval[0], own

            retrieve(server.container.store, embedder, kb.project_id, questions[0], params)  # the index loads
            measured: dict[str, list[float]] = {"client": [], "retrieval": [], "model": []}
            for r in range(1, count + 1):
                measured["client"].append(client(r))
                retrieval, own = bare(r)
                measured["retrieval"].append(retrieval)
                measured["model"].append(own)
                log.info(
                    "round %d: client %.3f s, retrieval %.3f s, model %.3f s", r, measured["client"][-1], retrieval, own
                )
            prompt_tokens = local.count_message_tokens(model.sent[-1])
    baseline = [a + b for a, b in zip(measured["retrieval"], measured["model"], strict=True)]
    ratio = common.ratio(measured["client"], baseline)
    result: dict[str, Any] = {
        "n": n,
        "rounds": count,
        "prompt_tokens_last": prompt_tokens,
        "times_ms": {name: common.summary(values) for name, values in measured.items()},
        "ratio": ratio,
    }
    text = common.table(
        f"Time to first token, {SMOLLM2} + local embedder, N={n} (medians of {count} rounds)",
        ["client TTFT ms", "retrieval ms", "model's own TTFT ms", "ratio (median)", "p95", f"goal <={GOAL}x"],
        [
            [
                result["times_ms"]["client"]["median"],
                result["times_ms"]["retrieval"]["median"],
                result["times_ms"]["model"]["median"],
                ratio["median"],
                ratio["p95"],
                common.goal(ratio["median"] <= GOAL),
            ]
        ],
    )
    text += f"\nPrompt: {prompt_tokens} tokens (system prompt, {top_k} sources, question).\n"
    return common.write(cfg, NAME, {**result, "table": text}, _plot(result))


def _plot(result: dict[str, Any]) -> Any:
    fig, (ax,) = common.figure(1, width=5)
    t = result["times_ms"]
    ax.bar(["bare"], [t["retrieval"]["median"]], label="retrieval")
    ax.bar(["bare"], [t["model"]["median"]], bottom=[t["retrieval"]["median"]], label="model's own TTFT")
    ax.bar(["websocket client"], [t["client"]["median"]], label="first ChatToken at the client")
    ax.set(ylabel="ms (median)", title=f"ratio {result['ratio']['median']:.2f}")
    ax.legend(fontsize=8)
    fig.suptitle("Time to first token")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
