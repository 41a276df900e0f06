"""Hostile load, bounded and on loopback only: 50 documents by URL at once from a server that sends
its headers one byte every quarter second (tests/net/trickle.py, on 127.0.0.2, standing for an
internet host), while ``/healthz`` is polled. A ``ragchat serve`` subprocess with fake providers.

Prints ``/healthz`` latency (p50/p99) before and during the attack, the server's thread count
(``/proc/<pid>/status``, idle pool workers included; the baseline is taken after a burst of as many
ordinary requests) and how many of its threads wait on a socket (``/proc/<pid>/task/*/wchan``)
before, at the peak and after, and how the fetches ended. The target: p99 under 100 ms during the
attack, threads back to their baseline after.

Hostile tool-schema patterns (a backtracking regular expression in a tool's ``inputSchema``) are a
second attack in the same run: ``--patterns N`` (10 by default) sends N ``testTool`` calls whose
argument would make ``^(a+)+$`` backtrack under Python's ``re`` (patterns run on RE2 off the event
loop: app/services/tools/schema.py). ``--patterns 0`` measures the slow fetches alone.

    ./.venv/bin/python -m benchmarks.hostile_load [--quick] [--patterns N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from app.db import migrate
from benchmarks.common import table
from benchmarks.load import Server
from tests.graphql.ops import CREATE_PROJECT
from tests.net.trickle import Trickle, trickling
from tests.providers import scripted_env

FETCHES = 50
URL_TIMEOUT = 5.0  # seconds: RAGCHAT_INGEST__URL_TIMEOUT of the server under attack
IDLE_WORKER_SECONDS = 10  # anyio ends a worker thread that has been idle this long
POLL_EVERY = 0.02  # seconds between two /healthz requests
HEALTHZ_P99_MS = 100.0
ADD_URL = """mutation($p: ID!, $url: String!) { addDocumentFromUrl(projectId: $p, url: $url) {
  __typename ... on Error { message } } }"""
CREATE_TOOL = """mutation($input: CreateToolInput!) { createTool(input: $input) { __typename ... on Tool { id }
  ... on Error { message } } }"""
TEST_TOOL = """mutation($id: ID!, $a: JSON!) { testTool(id: $id, arguments: $a) { __typename
  ... on ToolTest { ok error } ... on Error { message } } }"""
PROJECTS = "{ projects { ... on ProjectConnection { totalCount } } }"
BACKTRACKING = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["s"]}


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError(f"no thread count for process {pid}")


# Where the kernel shows a thread waiting on a socket (recv with a timeout polls); an idle pool
# worker waits on a futex, the event loop in epoll.
SOCKET_WAITS = ("poll_schedule_timeout", "do_select", "sk_wait_data", "wait_woken")


def socket_threads(pid: int) -> int:
    """Threads of ``pid`` blocked reading or writing a socket by themselves (not the event loop)."""
    count = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            count += (task / "wchan").read_text().startswith(SOCKET_WAITS)
    return count


def percentiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    rank = max(0, round(0.99 * len(ordered)) - 1)
    return {"p50_ms": statistics.median(ordered) * 1000, "p99_ms": ordered[rank] * 1000, "n": len(ordered)}


async def poll(client: httpx.AsyncClient, until: asyncio.Future[Any], out: list[float]) -> None:
    """GET /healthz one after another until ``until`` is done; each latency in ``out``."""
    while not until.done():
        started = time.perf_counter()
        response = await client.get("/healthz", timeout=30)
        response.raise_for_status()
        out.append(time.perf_counter() - started)
        await asyncio.sleep(POLL_EVERY)


async def post(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, "variables": variables}, timeout=120)
    data: dict[str, Any] = response.json()["data"]
    return data


async def hostile_patterns(client: httpx.AsyncClient, count: int, slow: Trickle) -> list[dict[str, Any]]:
    """``count`` testTool calls whose argument makes a backtracking pattern explode (26 a's and a !)."""
    if count == 0:
        return []
    tool = {
        "name": "pattern_bomb",
        "description": "A tool whose input schema carries a backtracking pattern",
        "inputSchema": BACKTRACKING,
        "group": "hostile",
        "method": "GET",
        "urlTemplate": f"http://127.0.0.2:{slow.port}/{{s}}",
        "timeoutSeconds": 1,
    }
    made = (await post(client, CREATE_TOOL, input=tool))["createTool"]
    if made["__typename"] != "Tool":
        return [made]
    calls = [post(client, TEST_TOOL, id=made["id"], a={"s": "a" * 26 + "!"}) for _ in range(count)]
    return [r["testTool"] for r in await asyncio.gather(*calls)]


async def attack(server: Server, slow: Trickle, fetches: int, patterns: int) -> dict[str, Any]:
    assert server.proc is not None
    pid = server.proc.pid
    async with httpx.AsyncClient(base_url=server.base) as client:
        project = (await post(client, CREATE_PROJECT, name="hostile"))["createProject"]["id"]
        # The baseline is taken after as many ordinary requests at once as the attack sends: the
        # thread pool keeps the idle workers a burst of database work needed, attack or not.
        await asyncio.gather(*(post(client, PROJECTS) for _ in range(fetches + patterns)))
        quiet: list[float] = []
        await poll(client, asyncio.ensure_future(asyncio.sleep(2)), quiet)
        before = threads(pid)
        reading_before = socket_threads(pid)
        url = f"http://127.0.0.2:{slow.port}/notes.md"
        adding = [asyncio.ensure_future(post(client, ADD_URL, p=project, url=url)) for _ in range(fetches)]
        bombs = asyncio.ensure_future(hostile_patterns(client, patterns, slow))
        everything = asyncio.ensure_future(asyncio.gather(*adding, bombs))
        attacked: list[float] = []
        peak, reading_peak = before, reading_before

        async def watch() -> None:
            nonlocal peak, reading_peak
            while not everything.done():
                peak, reading_peak = max(peak, threads(pid)), max(reading_peak, socket_threads(pid))
                await asyncio.sleep(0.1)

        await asyncio.gather(poll(client, everything, attacked), watch())
        added = [a.result()["addDocumentFromUrl"] for a in adding]
        await asyncio.sleep(1)  # the last connections close
        after, reading_after = threads(pid), socket_threads(pid)
        # anyio ends a worker thread idle for 10 s: past that, only threads something still holds remain.
        await asyncio.sleep(IDLE_WORKER_SECONDS + 1)
        settled = threads(pid)
    outcomes = Counter(_outcome(a) for a in added)
    return {
        "fetches": fetches,
        "patterns": patterns,
        "healthz_quiet": percentiles(quiet),
        "healthz_attacked": percentiles(attacked),
        "threads": {"before": before, "peak": peak, "after": after, "settled": settled},
        "threads_in_socket_io": {"before": reading_before, "peak": reading_peak, "after": reading_after},
        "fetch_outcomes": dict(outcomes),
        "pattern_outcomes": bombs.result(),
        "slow_server": {"accepted": slow.accepted, "still_open": slow.open},
    }


def _outcome(added: dict[str, Any]) -> str:
    message = added.get("message", "")
    if "within" in message:
        return "timed out"
    if "RAGCHAT_OUTBOUND__MAX_CONCURRENT" in message:
        return "refused: no slot"
    return str(added["__typename"])


def run(fetches: int, patterns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ragchat-hostile-") as folder, trickling("127.0.0.2") as slow:
        workdir = Path(folder)
        script = workdir / "answers.json"
        script.write_text(json.dumps(["unused"]), encoding="utf-8")
        env = scripted_env(script)
        env.update(
            {
                "RAGCHAT_EMBEDDER__PROVIDER": "fake",
                "RAGCHAT_EMBEDDER__MODEL": "hash-words",
                "RAGCHAT_INGEST__URL_ALLOWED_NETWORKS": '["127.0.0.2/32"]',
                "RAGCHAT_INGEST__URL_TIMEOUT": str(URL_TIMEOUT),
                "RAGCHAT_TOOLS__ALLOWED_NETWORKS": '["127.0.0.2/32"]',
            }
        )
        server = Server(workdir, env)
        migrate.upgrade(f"sqlite:///{server.database}")
        with server:
            return asyncio.run(attack(server, slow, fetches, patterns))


def report(result: dict[str, Any]) -> str:
    quiet, attacked, count = result["healthz_quiet"], result["healthz_attacked"], result["threads"]
    reading = result["threads_in_socket_io"]
    rows = [
        ["/healthz p50 (ms)", quiet["p50_ms"], attacked["p50_ms"]],
        ["/healthz p99 (ms)", quiet["p99_ms"], attacked["p99_ms"]],
        ["/healthz requests", quiet["n"], attacked["n"]],
    ]
    title = f"{result['fetches']} slow fetches, {result['patterns']} hostile patterns"
    lines = [
        table(title, ["", "quiet", "attacked"], rows),
        f"threads: before {count['before']}, peak {count['peak']}, after {count['after']}, "
        f"{IDLE_WORKER_SECONDS + 1:g} s later {count['settled']} "
        f"(in socket I/O: {reading['before']}, {reading['peak']}, {reading['after']})",
        f"fetches: {result['fetch_outcomes']}; slow server: {result['slow_server']}",
        f"p99 under {HEALTHZ_P99_MS:g} ms while attacked: {attacked['p99_ms'] < HEALTHZ_P99_MS}; "
        f"threads back to baseline once idle workers ended: {count['settled'] <= count['before']}; "
        f"none left in socket I/O: {reading['after'] <= reading['before']}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="10 fetches instead of 50")
    parser.add_argument("--patterns", type=int, default=10, help="hostile pattern testTool calls (see the docstring)")
    args = parser.parse_args(argv)
    result = run(10 if args.quick else FETCHES, args.patterns)
    print(report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
