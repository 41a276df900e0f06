"""Uploading 200 files: the mutation returns at once (issue 17), progress arrives for every file, and
the job ends with every file ready, or failed or skipped with a reason.

Each round uploads ``FILES`` Markdown files (one of them binary, skipped with its
reason) to a new knowledge base of a live server, in one multipart request, while a websocket
client follows ``ingestionProgress(projectId)`` from before the request. Measured side by side in
the same round: the upload mutation's round trip, a no-op mutation's (``updateProject`` with no
change: parsing, perimeter, one read and one write transaction), and the time until the job ended.
Reported: upload ÷ no-op, and job ÷ upload (what the synchronous mutation used to hold the request
open for, against what it holds now).

The embedder is the tests' fake with 5 ms per chunk, which sleeps (as the real one releases the GIL
in native code): the benchmark measures the request path and the worker's bookkeeping, not a model.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from app.db import migrate
from app.llm.base import ChatModels, Embedder
from benchmarks import common
from benchmarks.common import Config
from benchmarks.server import live, settings_for
from tests.fakes import FakeChatModel, FakeModels
from tests.graphql.client import Api
from tests.graphql.ops import CREATE_PROJECT, PROGRESS, UPLOAD
from tests.providers import SlowFakeEmbedder

NAME = "upload_jobs"
GOAL_SECONDS = 1.0
NOOP = "mutation($id: ID!) { updateProject(id: $id, input: {}) { __typename } }"
ENDED = {"READY", "FAILED", "CANCELLED", "SKIPPED"}
_REASONED = {"FAILED", "SKIPPED"}  # states that carry the reason in ``error``


def _files(count: int) -> dict[str, tuple[str, bytes]]:
    files = {}
    for i in range(count - 1):
        text = f"# Note {i}\n\n" + " ".join(f"penguin{i % 13} colony{j % 17} krill" for j in range(120))
        files[f"variables.files.{i}"] = (f"note{i:03}.md", text.encode())
    files[f"variables.files.{count - 1}"] = ("broken.txt", b"\x00\x01\x02 not text")
    return files


def _follow(
    api: Api, project_id: str, count: int, seen: dict[str, list[dict[str, Any]]], ready: threading.Event
) -> None:
    with api.websocket() as ws:
        events = ws.subscribe(PROGRESS, p=project_id)
        ready.set()
        for payload in events:
            item = payload["data"]["ingestionProgress"]
            seen.setdefault(item["name"], []).append(item)
            if len(seen) == count and all(e[-1]["state"] in ENDED for e in seen.values()):
                return


def _round(api: Api, count: int, index: int) -> dict[str, Any]:
    pid = api.run(CREATE_PROJECT, name=f"round {index}")["createProject"]["id"]
    files = _files(count)
    noop, _ = common.timed(lambda: api.run(NOOP, id=pid))
    seen: dict[str, list[dict[str, Any]]] = {}
    subscribed = threading.Event()
    follower = threading.Thread(target=_follow, args=(Api(api.base), pid, count, seen, subscribed))
    follower.start()
    assert subscribed.wait(10)
    time.sleep(0.2)  # the subscribe message reaches the server before the upload does
    started = time.perf_counter()
    upload, body = common.timed(lambda: api.upload(UPLOAD, dict(files), {"p": pid, "wait": False}))
    job = body["data"]["uploadDocuments"]
    assert job["__typename"] == "IngestionJob", job
    follower.join(600)
    ended = time.perf_counter() - started
    last = {name: events[-1] for name, events in seen.items()}
    return {
        "upload_s": upload,
        "noop_s": noop,
        "job_s": ended,
        "files_with_events": len(seen),
        "events": sum(len(e) for e in seen.values()),
        "ready": sum(1 for item in last.values() if item["state"] == "READY"),
        # A file not ingested must say why: FAILED, or SKIPPED (binary data, since issue 17's intake).
        "failed_with_reason": sum(1 for item in last.values() if item["state"] in _REASONED and item["error"]),
        "unaccounted": sum(
            1
            for item in last.values()
            if item["state"] != "READY" and not (item["state"] in _REASONED and item["error"])
        ),
    }


def run(cfg: Config) -> dict[str, Any]:
    count = cfg.pick(200, 200, 20)
    rounds = cfg.pick(5, 3, 1)
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_for(Path(tmp) / "bench.db")
        migrate.upgrade(settings.database_url)
        embedder = cast(Embedder, SlowFakeEmbedder("hash-words-5ms", 0.005))
        models = cast(ChatModels, FakeModels(FakeChatModel()))
        with live(settings, embedder, models) as server:
            measured = [_round(server.api, count, i) for i in range(rounds)]
    ratio_noop = common.ratio([m["upload_s"] for m in measured], [m["noop_s"] for m in measured])
    ratio_job = common.ratio([m["job_s"] for m in measured], [m["upload_s"] for m in measured])
    upload = common.summary([m["upload_s"] for m in measured])
    rows = [
        [f"upload mutation, {count} files", f"{upload['median']:.0f} ms (p95 {upload['p95']:.0f})"],
        ["upload ÷ no-op mutation (same round)", f"{ratio_noop['median']:.1f}x"],
        ["job end ÷ upload (what the request used to hold)", f"{ratio_job['median']:.0f}x"],
        ["files with progress events", f"{min(m['files_with_events'] for m in measured)} of {count}"],
        ["events per file", f"{statistics.median(m['events'] / count for m in measured):.1f}"],
        ["ended ready / failed or skipped with a reason / otherwise", "{} / {} / {}".format(
            min(m["ready"] for m in measured),
            min(m["failed_with_reason"] for m in measured),
            max(m["unaccounted"] for m in measured),
        )],
    ]  # fmt: skip
    text = common.table(f"Uploading {count} files as a job ({rounds} rounds)", ["measurement", "result"], rows)
    result = {
        "files": count,
        "rounds": measured,
        "upload_ms": upload,
        "ratio_upload_to_noop": ratio_noop,
        "ratio_job_to_upload": ratio_job,
        "goal_seconds": GOAL_SECONDS,
        "table": text,
    }
    return common.write(cfg, NAME, result, _plot(measured))


def _plot(measured: list[dict[str, Any]]) -> Any:
    fig, (ax,) = common.figure(1)
    xs = range(1, len(measured) + 1)
    ax.bar([x - 0.2 for x in xs], [m["upload_s"] for m in measured], width=0.4, label="upload mutation")
    ax.bar([x + 0.2 for x in xs], [m["job_s"] for m in measured], width=0.4, label="job until every file ended")
    ax.axhline(GOAL_SECONDS, color="grey", linestyle="--", label="1 s")
    ax.set_yscale("log")
    ax.set_xlabel("round")
    ax.set_ylabel("seconds")
    ax.legend()
    return fig


if __name__ == "__main__":
    common.main(run, __doc__ or NAME)
