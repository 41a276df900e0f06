"""6. Concurrency: 1, 2, 4 and 8 chat streams at once (graphql-transport-ws ``chat``, live server)
with a fake model that sleeps per token, a fake embedder that *blocks* its thread for 50 ms per
call, and retrieval over the benchmark knowledge base. Throughput (tokens/s) is compared with the
ideal, c times one stream's, and a ticker task in the server's event loop records how late it wakes
(event-loop lag). Were the embedder or SQLite ever run on the loop, lags of 50 ms would show; a
control phase blocks the loop on purpose (50 ms every 200 ms) to show what that looks like.

Usage: python -m benchmarks.concurrency [--quick]
"""

from __future__ import annotations

import gc
import logging
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from app.llm.base import ChatModel, Embedder
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.providers import Clock, Models, TimedChatModel, TimedEmbedder
from benchmarks.server import Live, create_session, live, settings_for
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.graphql.ops import CHAT

NAME = "concurrency"
BLOCK = 0.05  # seconds the fake embedder blocks its thread per call
STALL = 0.025  # a tick this late means the loop was held up
log = logging.getLogger("benchmarks")


def _client(server: Live, chat: str, questions: list[str], turns: int, out: list[int], errors: list[str]) -> None:
    with server.api.websocket() as ws:
        for t in range(turns):
            for event in ws.subscribe(CHAT, s=chat, c=questions[t % len(questions)]):
                chat = event["data"]["chat"]
                if chat["__typename"] == "ChatToken":
                    out.append(1)
                elif chat["__typename"] == "ChatError":
                    errors.append(chat["message"])


def _phase(server: Live, sessions: list[str], questions: list[str], turns: int, block_loop: bool = False) -> dict:
    tokens: list[int] = []
    errors: list[str] = []
    threads = [
        threading.Thread(target=_client, args=(server, s, questions, turns, tokens, errors), daemon=True)
        for s in sessions
    ]
    stop = threading.Event()
    blocker = threading.Thread(target=_block_loop, args=(server, stop), daemon=True) if block_loop else None
    server.ticker.take()
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    if blocker:
        blocker.start()
    for thread in threads:
        thread.join(300)
    seconds = time.perf_counter() - start
    stop.set()
    gc.callbacks.remove(pauses)
    lags = server.ticker.take()
    assert not errors, errors[:3]
    return {
        "streams": len(sessions),
        "seconds": seconds,
        "tokens": len(tokens),
        "tokens_per_s": len(tokens) / seconds,
        "lag_ms": {
            "median": statistics.median(lags) * 1000,
            "p99": sorted(lags)[int(0.99 * (len(lags) - 1))] * 1000,
            "max": max(lags) * 1000,
            "ticks": len(lags),
            "stalls": sum(1 for lag in lags if lag >= STALL),
        },
        "gc_pause_max_ms": pauses.longest * 1000,
    }


class GcPauses:
    """The longest garbage-collection pause (any thread: a collection stops them all)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._started)


def _block_loop(server: Live, stop: threading.Event) -> None:
    loop = server.ticker.loop
    assert loop is not None
    while not stop.wait(0.2):
        loop.call_soon_threadsafe(time.sleep, BLOCK)


def run(cfg: Config) -> dict[str, Any]:
    n = cfg.pick(100_000, 10_000, 300)
    levels = cfg.pick([1, 2, 4, 8], [1, 2, 4, 8], [1, 2])
    turns = cfg.pick(4, 2, 1)
    delay = cfg.pick(0.02, 0.02, 0.005)
    answer_tokens = cfg.pick(40, 30, 8)
    questions = data.questions(20)
    kb = data.knowledge_base(cfg, n)
    inner = FakeChatModel(token_delay=delay)
    inner.default_answer = " ".join(["word"] * (answer_tokens - 1)) + " [1]."
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        copy = kb.copy_to(Path(tmp))
        embedder = TimedEmbedder(
            cast(Embedder, FakeEmbedder(dimensions=data.DIMS)), data.LOCAL_SPACE, Clock(), block=BLOCK
        )
        settings = settings_for(copy.path, rag={"mode": "vector"}, chat={"max_concurrent_generations": 16})
        with live(settings, embedder, Models(TimedChatModel(cast(ChatModel, inner), Clock()))) as server:
            sessions = [
                create_session(server.api, kb.project_id, provider="fake", model="scripted", threshold=0.0)
                for _ in range(max(levels))
            ]
            _phase(server, sessions[:1], questions, 1)  # warm: the index loads
            phases = []
            for c in levels:
                log.info("concurrency: %d streams", c)
                phases.append(_phase(server, sessions[:c], questions, turns))
            control = _phase(server, sessions[:1], questions, turns, block_loop=True)
    single = phases[0]["tokens_per_s"]
    for phase in [*phases, control]:
        phase["ideal_tokens_per_s"] = single * phase["streams"]
        phase["efficiency"] = phase["tokens_per_s"] / phase["ideal_tokens_per_s"]
    rows = [
        [
            p["streams"],
            p["tokens_per_s"],
            p["ideal_tokens_per_s"],
            p["efficiency"],
            p["lag_ms"]["median"],
            p["lag_ms"]["p99"],
            p["lag_ms"]["max"],
            f"{p['lag_ms']['stalls']} / {p['lag_ms']['ticks']}",
            p["gc_pause_max_ms"],
        ]
        for p in [*phases, control]
    ]
    rows[-1][0] = "1 (control: loop blocked 50 ms every 0.2 s)"
    text = common.table(
        f"Concurrent chat streams (N={n}; {answer_tokens} tokens per answer at {delay * 1000:.0f} ms each; "
        f"{turns} turns per stream; embedder blocks {BLOCK * 1000:.0f} ms per call)",
        [
            "streams",
            "tokens/s",
            "ideal tokens/s",
            "achieved ÷ ideal",
            "loop lag median ms",
            "p99 ms",
            "max ms",
            f"ticks late >= {STALL * 1000:.0f} ms",
            "longest GC pause ms",
        ],
        rows,
    )
    result = {"n": n, "turns": turns, "token_delay_s": delay, "answer_tokens": answer_tokens, "phases": phases}
    return common.write(cfg, NAME, {**result, "control": control, "table": text}, _plot(phases, control))


def _plot(phases: list[dict[str, Any]], control: dict[str, Any]) -> Any:
    fig, (left, right) = common.figure(2, width=5)
    streams = [p["streams"] for p in phases]
    left.plot(streams, [p["tokens_per_s"] for p in phases], marker="o", label="achieved")
    left.plot(streams, [p["ideal_tokens_per_s"] for p in phases], linestyle="--", label="ideal (c x one stream)")
    left.set(xlabel="concurrent streams", ylabel="tokens per second", xticks=streams)
    left.legend(fontsize=8)
    labels = [str(s) for s in streams] + ["control"]
    right.bar(labels, [p["lag_ms"]["max"] for p in [*phases, control]], label="max")
    right.bar(labels, [p["lag_ms"]["p99"] for p in [*phases, control]], label="p99")
    right.axhline(BLOCK * 1000, color="grey", linestyle="--", label="one blocking embed call")
    right.set(xlabel="concurrent streams", ylabel="event-loop lag, ms")
    right.legend(fontsize=8)
    fig.suptitle("Concurrency: throughput and event-loop lag")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
