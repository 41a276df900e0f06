"""Operations overhead: a full ``sendMessage`` over HTTP on a live server with the Prometheus
metrics recorded (app/ops/metrics.py) ÷ the same turn with every recording call made a no-op, back
to back in rounds (the order alternating), the time inside the fake providers taken out of both.

Metrics are always on in a server; "off" here swaps the recording functions (the operation's, the
turn's, the slots' and the pool's counters) for ones that do nothing, which is what the turn would
cost without them. Goal: on ÷ off <= 1.05 (median of the per-round ratios).

Usage: python -m benchmarks.ops_overhead [--quick]
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from app.llm.base import ChatModel, Embedder
from app.ops import metrics
from benchmarks import common, data
from benchmarks.chat_overhead import SEND_ANSWER, CitingChatModel
from benchmarks.common import Config
from benchmarks.providers import Clock, Models, TimedChatModel, TimedEmbedder
from benchmarks.server import create_session, live, settings_for
from tests.fakes import FakeEmbedder

NAME = "ops_overhead"
GOAL = 1.05
log = logging.getLogger("benchmarks")


class _Nothing:
    def inc(self, *_: object) -> None:
        pass

    def dec(self, *_: object) -> None:
        pass


def _nothing(*_: object, **__: object) -> None:
    pass


@contextmanager
def metrics_off() -> Iterator[None]:
    """The recording calls as no-ops (they are looked up on the module at each call)."""
    saved = {name: getattr(metrics, name) for name in ("operation", "turn", "slots", "DB_CONNECTIONS_IN_USE")}
    for name in ("operation", "turn", "slots"):
        setattr(metrics, name, _nothing)
    metrics.DB_CONNECTIONS_IN_USE = cast(Any, _Nothing())
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(metrics, name, value)


def measure(cfg: Config, n: int, questions: list[str], count: int) -> dict[str, Any]:
    kb = data.knowledge_base(cfg, n)
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        copy = kb.copy_to(Path(tmp))
        clock = Clock()
        embedder = TimedEmbedder(cast(Embedder, FakeEmbedder(dimensions=data.DIMS)), data.LOCAL_SPACE, clock)
        model = TimedChatModel(cast(ChatModel, CitingChatModel()), clock)
        settings = settings_for(copy.path, rag={"mode": "vector"})
        with live(settings, embedder, Models(model)) as server:
            chat = create_session(
                server.api, kb.project_id, provider="fake", model="scripted", threshold=0.0, quality="QUICK"
            )

            def send(r: int) -> float:
                clock.take()
                seconds, body = common.timed(
                    lambda: server.api.run(SEND_ANSWER, s=chat, c=questions[r % len(questions)])
                )
                assert body["sendMessage"]["status"] == "COMPLETE", body
                return seconds - clock.take()

            def off(r: int) -> float:
                with metrics_off():
                    return send(r)

            send(0)  # the index loads, the connection pool fills
            times = common.rounds(count, {"metrics_on": send, "metrics_off": off})
    return {
        "n": n,
        "times_ms": {name: common.summary(values) for name, values in times.items()},
        "ratio": common.ratio(times["metrics_on"], times["metrics_off"]),
    }


def run(cfg: Config) -> dict[str, Any]:
    n = cfg.pick(10_000, 2_000, 300)
    count = cfg.pick(40, 20, 2)
    questions = data.questions(cfg.pick(50, 20, 4))
    log.info("operations overhead at N=%d", n)
    result = measure(cfg, n, questions, count)
    ratio = result["ratio"]["median"]
    text = common.table(
        f"Chat turn with metrics ÷ without (sendMessage over HTTP minus the fakes; medians of {count} rounds)",
        ["N", "on ms", "off ms", "ratio (median)", "p95", "goal <=", "reached"],
        [
            [
                n,
                result["times_ms"]["metrics_on"]["median"],
                result["times_ms"]["metrics_off"]["median"],
                ratio,
                result["ratio"]["p95"],
                GOAL,
                common.goal(ratio <= GOAL),
            ]
        ],
    )
    return common.write(cfg, NAME, {"rounds": count, **result, "table": text}, _plot(result))


def _plot(result: dict[str, Any]) -> Any:
    fig, (ax,) = common.figure(1)
    names = ["metrics_off", "metrics_on"]
    ax.bar(names, [result["times_ms"][name]["median"] for name in names])
    ax.set(ylabel="ms per turn (median, fakes' time removed)")
    fig.suptitle(f"Metrics overhead: {result['ratio']['median']:.3f}x")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
