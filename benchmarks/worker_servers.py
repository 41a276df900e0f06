"""A benchmark server in subprocesses, as ``ragchat serve --workers N`` runs (app/serving.py), for
comparing one worker with several launched the same way (benchmarks/provider_concurrency.py).

Each worker builds the app through :func:`create`: settings from the environment (the parent's),
the knowledge base's synthetic embedder (tests.fakes.FakeEmbedder presented in its space, as the
in-process benchmark server uses), and a ticker in its event loop whose lags, with the worker's
garbage-collection pauses, go to ``<BENCH_TICKS_DIR>/<pid>.ticks`` (one ``kind monotonic seconds``
line each; Linux's monotonic clock is the same in every process, so a phase's window selects them).

Run: python -m benchmarks.worker_servers (with the RAGCHAT_ settings and BENCH_TICKS_DIR set).
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
from fastapi import FastAPI

from app.container import Container
from app.db.database import Database
from app.llm.base import Embedder
from app.main import create_app
from app.serving import serve
from app.settings import load_settings
from benchmarks import data
from benchmarks.providers import Clock, TimedEmbedder
from benchmarks.server import TICK
from tests.fakes import FakeEmbedder
from tests.graphql.client import Api
from tests.live import free_port

TICKS_DIR = "BENCH_TICKS_DIR"
FLUSH = 0.5  # seconds between a worker's writes of its ticks


class _Ticks:
    """This worker's event-loop lags and GC pauses, written to its file every ``FLUSH`` seconds."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []
        self._gc_started = 0.0

    def gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.lines.append(f"gc {time.monotonic():.4f} {time.perf_counter() - self._gc_started:.6f}\n")

    async def run(self) -> None:
        flushed = time.monotonic()
        while True:
            start = time.perf_counter()
            await asyncio.sleep(TICK)
            self.lines.append(f"lag {time.monotonic():.4f} {time.perf_counter() - start - TICK:.6f}\n")
            if time.monotonic() - flushed > FLUSH:
                self.flush()
                flushed = time.monotonic()

    def flush(self) -> None:
        lines, self.lines = self.lines, []
        with self.path.open("a", encoding="utf-8") as out:
            out.writelines(lines)


def create() -> FastAPI:
    """One worker's app (the factory ``python -m benchmarks.worker_servers`` names)."""
    settings = load_settings()
    embedder = TimedEmbedder(cast(Embedder, FakeEmbedder(dimensions=data.DIMS)), data.LOCAL_SPACE, Clock())
    container = Container.build(settings, embedder=embedder)
    app = create_app(settings, container, tune_gc=True)  # measured as `ragchat serve` runs
    inner = app.router.lifespan_context
    ticks = _Ticks(Path(os.environ[TICKS_DIR]) / f"{os.getpid()}.ticks")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with inner(app) as state:
            gc.callbacks.append(ticks.gc)
            ticker = asyncio.create_task(ticks.run())
            try:
                yield state
            finally:
                ticker.cancel()
                with suppress(asyncio.CancelledError):
                    await ticker
                gc.callbacks.remove(ticks.gc)
                ticks.flush()
        await container.aclose()

    app.router.lifespan_context = lifespan
    return app


@dataclass
class Workers:
    """A running benchmark server: its address, processes and where their ticks go."""

    api: Api
    process: subprocess.Popen[bytes]
    ticks: Path
    database_url: str

    def answers_by_worker(self) -> dict[int, int]:
        """Answers stored so far, by the server (worker lease) that wrote them."""
        store = Database.from_url(self.database_url)
        try:
            with store.read() as db:
                query = "SELECT owner, COUNT(*) FROM chat_messages WHERE role = 'assistant' GROUP BY owner"
                return {int(owner or 0): int(n) for owner, n in db.connection().exec_driver_sql(query)}
        finally:
            store.dispose()

    def pids(self) -> set[int]:
        """The server's processes: the parent (the one worker, with N = 1) and every worker."""
        return {self.process.pid, *(int(p.stem) for p in self.ticks.glob("*.ticks"))}

    def window(self, start: float, end: float) -> tuple[dict[int, list[float]], float]:
        """Each worker's loop lags between ``start`` and ``end`` (monotonic), and the longest GC pause."""
        lags: dict[int, list[float]] = {}
        longest = 0.0
        for path in self.ticks.glob("*.ticks"):
            for line in path.read_text(encoding="utf-8").splitlines():
                kind, at, value = line.split()
                if start <= float(at) <= end:
                    if kind == "lag":
                        lags.setdefault(int(path.stem), []).append(float(value))
                    else:
                        longest = max(longest, float(value))
        return lags, longest


@contextmanager
def workers(env: dict[str, str], count: int, workdir: Path, *, timeout: float = 120) -> Iterator[Workers]:
    """``count`` worker processes on one port, with ``env`` (RAGCHAT_ settings) as their settings."""
    port = free_port()
    ticks = workdir / f"ticks-{count}"
    ticks.mkdir()
    full = {k: v for k, v in os.environ.items() if not k.startswith("RAGCHAT_")}
    root = str(Path(__file__).resolve().parent.parent)
    full.update(env)
    full.update(
        {
            "RAGCHAT_HOST": "127.0.0.1",
            "RAGCHAT_PORT": str(port),
            "RAGCHAT_WORKERS": str(count),
            "RAGCHAT_LOG__LEVEL": "warning",
            TICKS_DIR: str(ticks),
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
        }
    )
    log = (workdir / f"server-{count}.log").open("wb")
    command = [sys.executable, "-m", "benchmarks.worker_servers"]
    process = subprocess.Popen(command, cwd=workdir, env=full, stdout=log, stderr=subprocess.STDOUT)
    server = Workers(Api(f"http://127.0.0.1:{port}"), process, ticks, env["RAGCHAT_DATABASE_URL"])
    try:
        deadline = time.monotonic() + timeout
        while len(list(ticks.glob("*.ticks"))) < count or not _healthy(server.api):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {count}-worker server did not start; see {log.name}")
            time.sleep(0.2)
        yield server
    finally:
        server.api.http.close()
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _healthy(api: Api) -> bool:
    try:
        return bool(api.http.get("/healthz").json()["ok"])
    except (httpx.TransportError, ValueError):
        return False


def main() -> None:
    serve(load_settings(), factory="benchmarks.worker_servers:create", ws="websockets-sansio")


if __name__ == "__main__":
    main()
