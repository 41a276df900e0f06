"""A live ragchat server for the benchmarks: uvicorn on 127.0.0.1 in a thread of this process (so
the time spent inside fake providers can be read directly), with a ticker task in the server's own
event loop that records how late the loop wakes it (event-loop lag)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from app.container import Container
from app.llm.base import ChatModels, Embedder
from app.main import create_app
from app.serving import WEBSOCKET_OPTIONS
from app.settings import Settings
from tests.graphql.client import Api
from tests.live import free_port

TICK = 0.005


@dataclass
class Ticker:
    """Sleeps ``TICK`` in a loop and records how much later than asked it woke up."""

    lags: list[float] = field(default_factory=list)
    loop: asyncio.AbstractEventLoop | None = None
    thread_id: int | None = None  # the event loop's thread (its native id: /proc/self/task/<id>)

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.thread_id = threading.get_native_id()
        while True:
            start = time.perf_counter()
            await asyncio.sleep(TICK)
            self.lags.append(time.perf_counter() - start - TICK)

    def take(self) -> list[float]:
        lags, self.lags = self.lags, []
        return lags


@dataclass
class Live:
    api: Api
    container: Container
    ticker: Ticker


def settings_for(database_path: Path, **overrides: Any) -> Settings:
    """Settings for a benchmark server: this database, no .env file, the given overrides."""
    return Settings(_env_file=None, database_url=f"sqlite:///{database_path}", **overrides)


@contextmanager
def live(settings: Settings, embedder: Embedder, models: ChatModels, *, timeout: float = 30.0) -> Iterator[Live]:
    container = Container.build(settings, embedder=embedder, chat_models=models)
    app = create_app(settings, container, tune_gc=True)  # measured as `ragchat serve` runs
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio", **WEBSOCKET_OPTIONS
    )
    server = uvicorn.Server(config)
    ticker = Ticker()

    async def serve() -> None:
        tick = asyncio.create_task(ticker.run())
        try:
            await server.serve()
        finally:
            tick.cancel()
            aclose = getattr(models, "aclose", None)  # a real registry's HTTP clients, on their own loop
            if aclose is not None:
                await aclose()

    # The event loop `ragchat serve` runs on (uvicorn's "auto": uvloop when installed, as it is here).
    loop_factory = None if os.environ.get("BENCH_LOOP") == "asyncio" else config.get_loop_factory()

    def run() -> None:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(serve())

    thread = threading.Thread(target=run, name="bench-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the benchmark server did not start")
        time.sleep(0.02)
    api = Api(f"http://127.0.0.1:{port}")
    try:
        yield Live(api, container, ticker)
    finally:
        api.http.close()
        server.should_exit = True
        thread.join(timeout)
        container.close()


def create_session(api: Api, project_id: int, **settings: object) -> str:
    from tests.graphql.ops import CREATE_SESSION

    result = api.run(CREATE_SESSION, p=str(project_id), input=settings)["createChatSession"]
    assert result["__typename"] == "ChatSession", result
    return str(result["id"])
