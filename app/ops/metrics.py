"""The Prometheus metrics (prometheus-client), the names docs/OPERATIONS.md and the Grafana dashboard
in docs/ use.

Recorded where the numbers already are: each GraphQL operation when app/graphql/operation_log.py ends
it; each chat turn when its log line is written (app/services/chat/log.py), with the stage timings
its stored trace already measured (not timed twice); the generation slots as they are taken and
given back (app/services/chat/slots.py); the database connections as the pool lends them. What only
the database knows (the ingestion queue) is read when /metrics is scraped (app/ops/scrape.py).

With ``ragchat serve --workers N`` each worker is a process of its own: app/serving.py points
``PROMETHEUS_MULTIPROC_DIR`` at a private folder before the workers start (prometheus-client chooses
its storage when it is first imported, from that variable), every worker writes its samples there,
and a scrape answered by any worker reads them all (:func:`exposition`). Gauges of a process's own
state are summed over the live workers (``livesum``); a worker that stops gives its files back
(:func:`process_stopped`).

Label values are bounded: operation names only as the parsed document spells them, the first
:data:`MAX_OPERATIONS` distinct ones per process, the rest ``other``; providers, modes, stages,
states and outcomes come from the server's own lists. No user text is ever a label.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
MAX_OPERATIONS = 64  # distinct operation names per process; a client inventing names gets "other"
OTHER = "other"
ANONYMOUS = "anonymous"
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,99}")
_LIVE_FILE = re.compile(r"gauge_live[a-z]+_(\d+)\.db")
# Seconds: an operation is usually milliseconds, a turn's stages up to a minute's generation.
_FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_SLOW = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0)

OPERATIONS = Counter(
    "ragchat_graphql_operations", "GraphQL operations by name, type and outcome", ["operation", "type", "outcome"]
)
OPERATION_SECONDS = Histogram(
    "ragchat_graphql_operation_seconds", "GraphQL operations' duration", ["operation", "type"], buckets=_FAST
)
TURNS = Counter(
    "ragchat_chat_turns", "Chat turns by answer mode, provider and outcome", ["mode", "provider", "outcome"]
)
TURN_SECONDS = Histogram("ragchat_chat_turn_seconds", "Chat turns' duration", ["provider"], buckets=_SLOW)
STAGE_SECONDS = Histogram(
    "ragchat_chat_stage_seconds", "Each chat-turn stage's duration, as its trace timed it", ["stage"], buckets=_SLOW
)
FIRST_TOKEN_SECONDS = Histogram(
    "ragchat_chat_first_token_seconds", "From the chat model's call to its first token", ["provider"], buckets=_SLOW
)
TOKENS = Counter(
    "ragchat_chat_tokens", "Tokens sent to (in) and written by (out) chat models", ["provider", "direction"]
)
SLOTS_IN_USE = Gauge("ragchat_generation_slots_in_use", "Generation slots taken", ["pool"], multiprocess_mode="livesum")
SLOTS_WAITING = Gauge(
    "ragchat_generation_slots_waiting", "Turns waiting in line for a slot", ["pool"], multiprocess_mode="livesum"
)
DB_CONNECTIONS_IN_USE = Gauge(
    "ragchat_db_connections_in_use", "Database connections lent out by the pool", multiprocess_mode="livesum"
)
# Read from the database when scraped, the same for every worker: the latest reading counts.
INGESTION_QUEUE = Gauge(
    "ragchat_ingestion_queue_depth", "Files waiting for or in ingestion", multiprocess_mode="mostrecent"
)
INGESTION_ITEMS = Gauge(
    "ragchat_ingestion_items", "Ingestion items by state", ["state"], multiprocess_mode="mostrecent"
)
INGESTED_ITEMS = Counter("ragchat_ingestion_finished_items", "Ingestion items finished, by final state", ["state"])
INGESTED_CHUNKS = Counter("ragchat_ingestion_chunks", "Chunks embedded and stored by ingestion (rate: chunks/s)")
# Each worker holds its own copy of the same indexes: the largest reading counts.
INDEX_SPACES = Gauge("ragchat_index_spaces_loaded", "Embedding spaces held in memory", multiprocess_mode="livemax")
INDEX_VECTORS = Gauge("ragchat_index_vectors", "Vectors held in memory (all spaces)", multiprocess_mode="livemax")
INDEX_WARMUP_SECONDS = Gauge(
    "ragchat_index_warmup_seconds", "Loading the embedder and the indexes at start-up", multiprocess_mode="livemax"
)

_operations: set[str] = set()


def operation_label(name: str | None, *, in_document: bool) -> str:
    """The label of an operation: its name when the parsed document defines an operation of that
    name (``in_document``), ``anonymous`` for its one unnamed operation, else ``other``."""
    if not in_document:
        return OTHER
    if name is None:
        return ANONYMOUS
    if not _NAME.fullmatch(name):
        return OTHER
    if name not in _operations:
        if len(_operations) >= MAX_OPERATIONS:
            return OTHER
        _operations.add(name)
    return name


def operation(label: str, kind: str | None, outcome: str, seconds: float) -> None:
    kind = kind or OTHER
    OPERATIONS.labels(label, kind, outcome).inc()
    OPERATION_SECONDS.labels(label, kind).observe(seconds)


def turn(
    *,
    mode: str | None,
    provider: str,
    outcome: str,
    seconds: float,
    stages_ms: Mapping[str, float],
    tokens_in: int | None,
    tokens_out: int | None,
) -> None:
    """One chat turn, with the stage timings its trace recorded (``first_token`` among them)."""
    TURNS.labels(mode or "none", provider, outcome).inc()
    TURN_SECONDS.labels(provider).observe(seconds)
    for stage, ms in stages_ms.items():
        STAGE_SECONDS.labels(str(stage)).observe(ms / 1000)
        if stage == "first_token":
            FIRST_TOKEN_SECONDS.labels(provider).observe(ms / 1000)
    if tokens_in:
        TOKENS.labels(provider, "in").inc(tokens_in)
    if tokens_out:
        TOKENS.labels(provider, "out").inc(tokens_out)


def slots(pool: str, in_use: int, waiting: int) -> None:
    """A pool's slots in this process, as they are now."""
    SLOTS_IN_USE.labels(pool).set(in_use)
    SLOTS_WAITING.labels(pool).set(waiting)


def ingested(state: str, chunks: int) -> None:
    """One ingestion item finished in ``state`` after storing ``chunks`` chunks."""
    INGESTED_ITEMS.labels(state).inc()
    if chunks:
        INGESTED_CHUNKS.inc(chunks)


def ingestion(counts: Mapping[str, int], unfinished: tuple[str, ...]) -> None:
    for state, count in counts.items():
        INGESTION_ITEMS.labels(state).set(count)
    INGESTION_QUEUE.set(sum(counts.get(state, 0) for state in unfinished))


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROCESS_DIR) or None


def exposition() -> tuple[bytes, str]:
    """The text a scrape gets: every worker's samples when several share a folder, else this process's."""
    if multiprocess_dir() is not None:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def forget_dead_workers() -> None:
    """A worker starting (a killed one's replacement, say) drops the live gauges of workers that are
    gone without saying so (SIGKILL), so their slots and connections stop counting."""
    folder = multiprocess_dir()
    if folder is None:
        return
    pids = {int(m.group(1)) for name in os.listdir(folder) if (m := _LIVE_FILE.fullmatch(name))}
    for pid in pids - {os.getpid()}:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, folder)
        except PermissionError:  # alive, another user's
            pass


def process_stopped() -> None:
    """This worker stops: its live gauges (slots, connections) no longer count."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(os.getpid())
