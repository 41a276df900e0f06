"""7. Concurrency that fits the provider: 32 chat streams at once (graphql-transport-ws ``chat``, live
server) against an OpenAI-compatible server on 127.0.0.1 that streams each answer one token every
``delay`` seconds (benchmarks/openai_loopback.py, a process of its own), through the real OpenAI
adapter and chat registry: retrieval over the benchmark knowledge base, the answer guard,
citations, stored answers. The clients run in a process of their own too
(benchmarks/stream_clients.py), so the server's loop shares its GIL with nobody's but its own
worker threads. Side by side in one run:

- 1 stream: the ideal's unit (one stream's tokens/s);
- 32 streams at openai's declared cap (32): throughput ÷ (32 x one stream), BusyErrors (none
  expected below the cap), event-loop lag from a ticker task in the server's loop;
- 48 streams at that cap: 16 wait in line (``ChatQueued``) for at most RAGCHAT_CHAT__QUEUE_TIMEOUT;
  ideal = 32 x one stream, as no more than 32 answers are written at once;
- 32 streams as before issue 16: one cap of 3 for every provider and no waiting;
- 32 streams with every token event's result executed by graphql-core, as before token events were
  pre-resolved (app/graphql/token_events.py), for its server CPU per token beside the default's;
- 32 streams against ``ragchat serve`` with 1 worker and with 2 (app/serving.py), all launched
  the same way, in subprocesses (benchmarks/worker_servers.py): the same embedder, data and
  settings; loop lag is the worst of the workers' tickers, server CPU the sum of their processes'.
  The configured cap (32) is server-wide (the workers count their slots together).
  ``BENCH_WORKER_COUNTS=1,2,3`` runs these phases with other numbers of workers.

Usage: python -m benchmarks.provider_concurrency [--quick]
"""

from __future__ import annotations

import gc
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from app.llm.base import Embedder
from app.llm.chat.registry import chat_registry
from benchmarks import common, data, worker_servers
from benchmarks.common import Config
from benchmarks.concurrency import GcPauses
from benchmarks.providers import Clock, TimedEmbedder
from benchmarks.server import Live, create_session, live, settings_for
from benchmarks.worker_servers import Workers, workers
from tests.fakes import FakeEmbedder
from tests.live import free_port

NAME = "provider_concurrency"
GOAL_RATIO = 0.9
GOAL_LAG_P99_MS = 25.0
log = logging.getLogger("benchmarks")


@dataclass(frozen=True)
class Loopback:
    base_url: str
    pid: int


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (Linux's /proc)."""
    return _cpu(Path(f"/proc/{pid}/stat"))


def thread_cpu(thread_id: int | None) -> float:
    """CPU seconds thread ``thread_id`` (a native id) of this process has used so far; 0 when unknown."""
    return _cpu(Path(f"/proc/self/task/{thread_id}/stat")) if thread_id is not None else 0.0


def _cpu(stat: Path) -> float:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def loopback(tokens: int, delay: float, lifetime: float) -> Iterator[Loopback]:
    """The OpenAI-compatible server in its own process: its base URL and process id."""
    port = free_port()
    args = ["--port", str(port), "--tokens", str(tokens), "--delay", str(delay), "--lifetime", str(lifetime)]
    command = [sys.executable, "-m", "benchmarks.openai_loopback", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, cwd=common.ROOT) as process:
        try:
            assert process.stdout is not None and process.stdout.readline().strip() == b"ready", "did not start"
            yield Loopback(f"http://127.0.0.1:{port}/v1", process.pid)
        finally:
            process.terminate()
            process.wait(10)


def _summary(
    found: dict[str, Any],
    cap: int,
    streams: int,
    cpu: float,
    provider_cpu: float,
    lags: list[float],
    gc_ms: float,
    loop_cpu: float | None = None,
) -> dict[str, Any]:
    counts, seconds = found["counts"], found["seconds"]
    assert not found["errors"], found["errors"]
    tokens = max(counts.get("tokens", 0), 1)
    return {
        "streams": streams,
        "cap": cap,
        "seconds": seconds,
        "tokens": counts.get("tokens", 0),
        "tokens_per_s": counts.get("tokens", 0) / seconds,
        "token_events": counts.get("ChatToken", 0),
        "answers": counts.get("ChatDone", 0),
        "busy": counts.get("busy", 0),
        "queued_events": counts.get("ChatQueued", 0),
        "lag_ms": {
            "median": statistics.median(lags) * 1000,
            "p99": sorted(lags)[int(0.99 * (len(lags) - 1))] * 1000,
            "max": max(lags) * 1000,
        },
        "gc_pause_max_ms": gc_ms,
        "server_cpu_s": cpu,
        "server_cpu_ms_per_token": cpu * 1000 / tokens,
        # Of it, the event loop's thread (every token's work) and the rest: worker threads (a turn's
        # database and CPU steps) and the process's other threads. Unknown for subprocess servers.
        "loop_cpu_ms_per_token": loop_cpu * 1000 / tokens if loop_cpu is not None else None,
        "other_threads_cpu_ms_per_token": (cpu - loop_cpu) * 1000 / tokens if loop_cpu is not None else None,
        # The load generators share the machine's cores: their CPU time says how much of it they took.
        "clients_cpu_s": found["cpu_s"],
        "clients_cpu_ms_per_token": found["cpu_s"] * 1000 / tokens,
        "provider_cpu_s": provider_cpu,
        "provider_cpu_ms_per_token": provider_cpu * 1000 / tokens,
        "load_average": os.getloadavg()[0],
        # Each turn's seconds from its question to its first token, as the clients saw them.
        "first_token_s": _spread(found.get("first_token_s", [])),
    }


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p95": None}
    return {"median": statistics.median(values), "p95": common.p95(values)}


def _clients(url: str, sessions: list[str], turns: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.stream_clients", "--url", url, "--turns", str(turns), *sessions]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=common.ROOT, check=True)
    return cast(dict[str, Any], json.loads(done.stdout))


def _phase(server: Live, provider: Loopback, sessions: list[str], turns: int, cap: int) -> dict[str, Any]:
    url = server.api.base.replace("http://", "ws://") + "/graphql"
    server.ticker.take()
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    provider_cpu = process_cpu(provider.pid)
    loop_cpu = thread_cpu(server.ticker.thread_id)
    cpu = time.process_time()  # the server's threads (clients and provider are other processes)
    try:
        found = _clients(url, sessions, turns)
    finally:
        gc.callbacks.remove(pauses)
    cpu = time.process_time() - cpu
    loop_cpu = thread_cpu(server.ticker.thread_id) - loop_cpu
    provider_cpu = process_cpu(provider.pid) - provider_cpu
    lags = server.ticker.take()
    return _summary(found, cap, len(sessions), cpu, provider_cpu, lags, pauses.longest * 1000, loop_cpu)


def workers_phase(server: Workers, provider: Loopback, sessions: list[str], turns: int, cap: int) -> dict[str, Any]:
    """A phase against a subprocess server: lags from every worker's ticker (the worst p99 of
    them is reported), CPU summed over its processes."""
    url = server.api.base.replace("http://", "ws://") + "/graphql"
    pids = server.pids()
    answered = server.answers_by_worker()
    before = {pid: process_cpu(pid) for pid in pids}
    provider_cpu = process_cpu(provider.pid)
    start = time.monotonic()
    found = _clients(url, sessions, turns)
    end = time.monotonic()
    cpu = sum(process_cpu(pid) - used for pid, used in before.items())
    provider_cpu = process_cpu(provider.pid) - provider_cpu
    time.sleep(2 * worker_servers.FLUSH)  # the workers write their ticks every FLUSH seconds
    by_worker, gc_s = server.window(start, end)
    worst = max(by_worker.values(), key=lambda lags: sorted(lags)[int(0.99 * (len(lags) - 1))])
    phase = _summary(found, cap, len(sessions), cpu, provider_cpu, worst, gc_s * 1000)
    # How the kernel spread the connections: each worker's answers in this phase.
    phase["answers_by_worker"] = sorted(
        (n - answered.get(owner, 0) for owner, n in server.answers_by_worker().items()), reverse=True
    )
    phase["lag_p99_ms_by_worker"] = [sorted(v)[int(0.99 * (len(v) - 1))] * 1000 for v in by_worker.values()]
    return phase


def _server_phases(
    cfg: Config,
    kb: data.KnowledgeBase,
    provider: Loopback,
    chat: dict[str, Any],
    plan: list[tuple[int, int]],
    turns: int,
    api: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        copy = kb.copy_to(Path(tmp))
        settings = settings_for(
            copy.path,
            rag={"mode": "vector"},
            llm={"provider": "openai", "model": "loopback"},
            openai={"base_url": provider.base_url, "api_key": "bench"},
            chat=chat,
            **({"api": api} if api else {}),
        )
        # The knowledge base's space, so retrieval runs (its vectors are synthetic anyway).
        embedder = TimedEmbedder(cast(Embedder, FakeEmbedder(dimensions=data.DIMS)), data.LOCAL_SPACE, Clock())
        with live(settings, embedder, chat_registry(settings)) as server:
            streams = max(n for n, _ in plan)
            sessions = [
                # One retrieval pass, no rewrite: the stream of tokens is the subject, not the chat
                # model's helper replies (each would be a whole loopback answer, untimed by the clients).
                create_session(
                    server.api,
                    kb.project_id,
                    provider="openai",
                    model="loopback",
                    threshold=0.0,
                    quality="QUICK",
                    rewrite="OFF",
                )
                for _ in range(streams)
            ]
            _phase(server, provider, sessions[:1], 1, 0)  # warm: the index loads, the adapter connects
            phases = []
            for n, cap in plan:
                log.info("provider concurrency: %d streams, cap %d", n, cap)
                phases.append(_phase(server, provider, sessions[:n], turns, cap))
            return phases


def worker_counts() -> tuple[int, ...]:
    """The ``ragchat serve --workers`` counts the subprocess phases run (``BENCH_WORKER_COUNTS``)."""
    return tuple(int(c) for c in os.environ.get("BENCH_WORKER_COUNTS", "1,2").split(","))


@contextmanager
def worker_server(
    kb: data.KnowledgeBase, provider: Loopback, limits: dict[str, int], count: int, streams: int, cap: int
) -> Iterator[tuple[Workers, list[str]]]:
    """A ``count``-worker ``ragchat serve`` over a copy of ``kb`` answering from ``provider``, with
    ``streams`` chat sessions made and every worker warmed (indexes load, the adapter connects:
    connections land where the kernel puts them)."""
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        copy = kb.copy_to(Path(tmp))
        env = {
            "RAGCHAT_DATABASE_URL": f"sqlite:///{copy.path}",
            "RAGCHAT_RAG__MODE": "vector",
            "RAGCHAT_LLM__PROVIDER": "openai",
            "RAGCHAT_LLM__MODEL": "loopback",
            "RAGCHAT_OPENAI__BASE_URL": provider.base_url,
            "RAGCHAT_OPENAI__API_KEY": "bench",
            "RAGCHAT_CHAT__LIMITS": json.dumps(limits),
        }
        with workers(env, count, Path(tmp)) as server:
            options = {"threshold": 0.0, "quality": "QUICK", "rewrite": "OFF"}
            sessions = [
                create_session(server.api, kb.project_id, provider="openai", model="loopback", **options)
                for _ in range(streams)
            ]
            workers_phase(server, provider, sessions[: 4 * count], 1, cap)
            yield server, sessions


def _workers_phases(
    kb: data.KnowledgeBase, provider: Loopback, limits: dict[str, int], streams: int, turns: int, cap: int
) -> list[dict[str, Any]]:
    """``streams`` streams against a subprocess server of 1 worker, then of 2 (module docstring)."""
    phases = []
    for count in worker_counts():
        with worker_server(kb, provider, limits, count, streams, cap) as (server, sessions):
            log.info("provider concurrency: %d streams, %d worker processes", streams, count)
            phases.append({**workers_phase(server, provider, sessions, turns, cap), "workers": count})
    return phases


def run(cfg: Config) -> dict[str, Any]:
    n = cfg.pick(10_000, 10_000, 300)
    many = cfg.pick(32, 32, 4)
    past = cfg.pick(48, 48, 6)
    turns = cfg.pick(3, 2, 1)
    tokens = cfg.pick(50, 40, 8)
    delay = cfg.pick(0.02, 0.02, 0.005)
    kb = data.knowledge_base(cfg, n)
    declared = 32 if not cfg.tiny else 4
    limits = {} if not cfg.tiny else {"openai": declared}  # tiny: 4 streams stand for 32
    with loopback(tokens, delay, lifetime=900) as provider:
        now = _server_phases(
            cfg, kb, provider, {"limits": limits}, [(1, declared), (many, declared), (past, declared)], turns
        )
        before = _server_phases(cfg, kb, provider, {"limits": {"openai": 3}, "queue_timeout": 0}, [(many, 3)], turns)
        # The same streams with every token sent as the model writes it (no batching window).
        unbatched = _server_phases(
            cfg, kb, provider, {"limits": limits, "stream_coalesce_ms": 0}, [(many, declared)], turns
        )
        executed = _server_phases(
            cfg, kb, provider, {"limits": limits}, [(many, declared)], turns, api={"preresolved_token_events": False}
        )
        processes = _workers_phases(kb, provider, limits, many, turns, declared)
    single = now[0]["tokens_per_s"]
    phases = [*now, *before, *unbatched, *executed, *processes]
    labels = [
        "1 stream",
        f"{many} streams",
        f"{past} streams (past the cap)",
        f"{many} streams, before: cap 3",
        f"{many} streams, tokens one by one (no batching window)",
        f"{many} streams, token events executed (not pre-resolved)",
        *(
            f"{many} streams, `serve` 1 worker"
            if p["workers"] == 1
            else f"{many} streams, `serve --workers {p['workers']}`"
            for p in processes
        ),
    ]
    for phase, label in zip(phases, labels, strict=True):
        spread = phase.get("answers_by_worker")
        phase["label"] = label if not spread or len(spread) < 2 else f"{label} ({' / '.join(map(str, spread))} answers)"
        phase["ideal_tokens_per_s"] = single * min(phase["streams"], phase["cap"])
        phase["ratio"] = phase["tokens_per_s"] / phase["ideal_tokens_per_s"]
    rows = [
        [
            p["label"],
            p["cap"],
            p["answers"],
            p["busy"],
            p["queued_events"],
            p["tokens_per_s"],
            p["ideal_tokens_per_s"],
            p["ratio"],
            p["lag_ms"]["median"],
            p["lag_ms"]["p99"],
            p["lag_ms"]["max"],
            p["gc_pause_max_ms"],
            p["server_cpu_ms_per_token"],
            p["clients_cpu_ms_per_token"],
            p["provider_cpu_ms_per_token"],
            p["load_average"],
        ]
        for p in phases
    ]
    text = common.table(
        f"Chat streams against a loopback OpenAI-compatible server ({tokens} tokens per answer, one every "
        f"{delay * 1000:.0f} ms; {turns} turns per stream; N={n})",
        [
            "phase",
            "cap",
            "answers",
            "BusyError",
            "ChatQueued events",
            "tokens/s",
            "ideal tokens/s",
            "achieved ÷ ideal",
            "loop lag median ms",
            "p99 ms",
            "max ms",
            "longest GC pause ms",
            "server CPU ms / token",
            "clients' CPU ms / token",
            "provider's CPU ms / token",
            "load avg",
        ],
        rows,
    )
    at_cap = phases[1]

    def over(a: float, b: float) -> float:
        return a / b if b else float("nan")  # a tiny run's provider may not tick its CPU clock at all

    per_token = {
        "batched_over_unbatched": over(at_cap["server_cpu_ms_per_token"], unbatched[0]["server_cpu_ms_per_token"]),
        "server_over_provider": over(at_cap["server_cpu_ms_per_token"], at_cap["provider_cpu_ms_per_token"]),
        "unbatched_server_over_provider": over(
            unbatched[0]["server_cpu_ms_per_token"], unbatched[0]["provider_cpu_ms_per_token"]
        ),
        "preresolved_over_executed": over(at_cap["server_cpu_ms_per_token"], executed[0]["server_cpu_ms_per_token"]),
        "loop_share": over(at_cap["loop_cpu_ms_per_token"], at_cap["server_cpu_ms_per_token"]),
    }
    text += (
        f"\nServer CPU per token at {many} streams: batched ÷ one by one {per_token['batched_over_unbatched']:.2f}; "
        f"÷ the provider's own CPU per token {per_token['server_over_provider']:.1f} "
        f"(one by one: {per_token['unbatched_server_over_provider']:.1f}; goal 2.5); token events pre-resolved ÷ "
        f"executed {per_token['preresolved_over_executed']:.2f}; of it the event loop's thread "
        f"{at_cap['loop_cpu_ms_per_token']:.3f} ms ({per_token['loop_share']:.0%}), the other threads "
        f"{at_cap['other_threads_cpu_ms_per_token']:.3f} ms\n"
    )

    def judged(phase: dict[str, Any]) -> dict[str, Any]:
        return {"ratio": phase["ratio"], "busy": phase["busy"], "lag_p99_ms": phase["lag_ms"]["p99"]}

    result = {
        "n": n,
        "turns": turns,
        "tokens": tokens,
        "token_delay_s": delay,
        "phases": phases,
        "at_cap": judged(at_cap),
        "cpu_per_token": per_token,
        # The configuration a remote-provider deployment runs (docs/SCALING.md): the goal's judge.
        "workers": {str(p["workers"]): judged(p) for p in processes},
        "table": text,
    }
    return common.write(cfg, NAME, result, _plot(phases))


def _plot(phases: list[dict[str, Any]]) -> Any:
    fig, (left, right) = common.figure(2, width=5)
    labels = [p["label"].replace(" (", "\n(").replace(", ", ",\n") for p in phases]
    left.bar(labels, [p["ratio"] for p in phases])
    left.axhline(GOAL_RATIO, color="grey", linestyle="--", label=f"goal {GOAL_RATIO}")
    left.set(ylabel="achieved ÷ ideal tokens/s")
    left.legend(fontsize=8)
    right.bar(labels, [p["lag_ms"]["max"] for p in phases], label="max")
    right.bar(labels, [p["lag_ms"]["p99"] for p in phases], label="p99")
    right.axhline(GOAL_LAG_P99_MS, color="grey", linestyle="--", label=f"goal p99 {GOAL_LAG_P99_MS:.0f} ms")
    right.set(ylabel="event-loop lag, ms")
    right.legend(fontsize=8)
    for axis in (left, right):
        axis.tick_params(axis="x", labelsize=7)
    fig.suptitle("Streams against a remote provider: throughput and event-loop lag")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
