"""Operations overhead: a full ``sendMessage`` over HTTP on a live server with the Prometheus
metrics recorded (app/ops/metrics.py) and OpenTelemetry tracing on (app/ops/tracing.py: the request's,
the turn's and every stage's span, through the SDK's batch processor to an exporter that drops
them, so no collector's time is counted) ÷ the same turn with both off, back to back in rounds (the
order alternating). The ratio is of the process's CPU time per turn (server, client and the span
processor's thread are one process), steadier than wall time on a shared machine; the wall-time
ratio, the time inside the fake providers taken out, is reported beside it.

Metrics are always on in a server; "off" here swaps the recording functions (the operation's, the
turn's, the slots' and the pool's counters) for ones that do nothing, which is what the turn would
cost without them, and turns tracing off as a server without an endpoint has it. Goal: on ÷ off
<= 1.05 (median of the per-round ratios).

Usage: python -m benchmarks.ops_overhead [--quick]
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from app.llm.base import ChatModel, Embedder
from app.ops import metrics, tracing
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


class _Dropped(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@contextmanager
def ops_off() -> Iterator[None]:
    """The recording calls as no-ops (they are looked up on the module at each call), no tracer."""
    saved = {name: getattr(metrics, name) for name in ("operation", "turn", "slots", "DB_CONNECTIONS_IN_USE")}
    for name in ("operation", "turn", "slots"):
        setattr(metrics, name, _nothing)
    metrics.DB_CONNECTIONS_IN_USE = cast(Any, _Nothing())
    tracer, tracing._tracer = tracing._tracer, None
    try:
        yield
    finally:
        tracing._tracer = tracer
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

            cpu: dict[str, list[float]] = {"ops_on": [], "ops_off": []}

            def send(r: int, mode: str = "ops_on") -> float:
                clock.take()
                started = time.process_time()
                seconds, body = common.timed(
                    lambda: server.api.run(SEND_ANSWER, s=chat, c=questions[r % len(questions)])
                )
                # CPU of the whole process (server, client, the span processor's thread): steadier than
                # wall time on a shared machine, and what the recording costs.
                cpu[mode].append(time.process_time() - started)
                assert body["sendMessage"]["status"] == "COMPLETE", body
                return seconds - clock.take()

            def off(r: int) -> float:
                with ops_off():
                    return send(r, "ops_off")

            send(0)  # the index loads, the connection pool fills
            cpu["ops_on"].clear()
            tracing.configure(processor=BatchSpanProcessor(_Dropped()))
            try:
                times = common.rounds(count, {"ops_on": send, "ops_off": off})
            finally:
                tracing.shutdown()
    return {
        "n": n,
        "times_ms": {name: common.summary(values) for name, values in times.items()},
        "cpu_ms": {name: common.summary(values) for name, values in cpu.items()},
        "ratio": common.ratio(cpu["ops_on"], cpu["ops_off"]),
        "wall_ratio": common.ratio(times["ops_on"], times["ops_off"]),
    }


def run(cfg: Config) -> dict[str, Any]:
    n = cfg.pick(10_000, 2_000, 300)
    count = cfg.pick(80, 30, 2)
    questions = data.questions(cfg.pick(50, 20, 4))
    log.info("operations overhead at N=%d", n)
    result = measure(cfg, n, questions, count)
    ratio = result["ratio"]["median"]
    text = common.table(
        f"Chat turn with metrics and tracing ÷ without (sendMessage over HTTP; medians of {count} rounds)",
        [
            "N",
            "on: CPU ms",
            "off: CPU ms",
            "CPU ratio (median)",
            "goal <=",
            "reached",
            "wall ms on / off",
            "wall ratio",
        ],
        [
            [
                n,
                result["cpu_ms"]["ops_on"]["median"],
                result["cpu_ms"]["ops_off"]["median"],
                ratio,
                GOAL,
                common.goal(ratio <= GOAL),
                f"{result['times_ms']['ops_on']['median']:.1f} / {result['times_ms']['ops_off']['median']:.1f}",
                result["wall_ratio"]["median"],
            ]
        ],
    )
    return common.write(cfg, NAME, {"rounds": count, **result, "table": text}, _plot(result))


def _plot(result: dict[str, Any]) -> Any:
    fig, (ax,) = common.figure(1)
    names = ["ops_off", "ops_on"]
    ax.bar(names, [result["cpu_ms"][name]["median"] for name in names])
    ax.set(ylabel="process CPU ms per turn (median)")
    fig.suptitle(f"Metrics and tracing overhead: {result['ratio']['median']:.3f}x")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
