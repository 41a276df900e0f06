"""Two `ragchat serve` processes on one database against one, under the same load (issue 18, item 5).

For each backend (PostgreSQL from pgserver in a temporary folder, and a SQLite file), one database
is migrated and given a small knowledge base (``--docs`` documents through the API, the fake
embedder). Then ``--clients`` threads send requests for ``--seconds``: a mix of ``search`` queries
and chat turns (``sendMessage``, the scripted model, no token delay: retrieval, the prompt, the
answer guard and the stored answer with its citations are real), round-robin over the servers of
the phase. Phases alternate one server / two servers for ``--rounds`` rounds, so both see the
same machine; the report is completed requests per second and p50/p95 latency per phase, and the
two/one ratio of each round. On a 2-core machine the servers and the clients share the cores:
the ratio says what a second process buys there, not what a second machine would.

Usage: python -m benchmarks.two_servers [--seconds 10] [--clients 8] [--rounds 2] [--docs 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from app.db import migrate
from benchmarks.load import WORDS, Server
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION, SEND
from tests.providers import scripted_env

ANSWER = "Emperor penguins huddle together through the polar winter [1]."
SEARCH = """query($p: ID!, $q: String!) { search(projectId: $p, query: $q, topK: 5, threshold: 0) {
  __typename ... on SearchResults { kept { chunkId } } } }"""


def servers(folder: Path, url: str, count: int) -> list[Server]:
    script = folder / "answers.json"
    script.write_text(json.dumps([ANSWER]), encoding="utf-8")
    made = []
    for n in range(count):
        workdir = folder / f"server-{n}"
        workdir.mkdir(exist_ok=True)
        env = scripted_env(script)
        env.update(
            {
                "RAGCHAT_DATABASE_URL": url,
                "RAGCHAT_EMBEDDER__PROVIDER": "fake",
                "RAGCHAT_EMBEDDER__MODEL": "hash-words",
                "RAGCHAT_JOBS__SPOOL_DIR": str(folder / "uploads"),
                "RAGCHAT_LOG__LEVEL": "warning",
            }
        )
        made.append(Server(workdir, env))
    return made


def post(client: httpx.Client, base: str, query: str, **variables: Any) -> dict[str, Any]:
    response = client.post(f"{base}/graphql", json={"query": query, "variables": variables}, timeout=60)
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    if body.get("errors"):
        raise RuntimeError(body["errors"])
    return body["data"]


def seed(base: str, docs: int) -> tuple[str, list[str]]:
    """A knowledge base of ``docs`` documents and one chat session per client-to-be."""
    with httpx.Client() as client:
        pid = post(client, base, CREATE_PROJECT, name="kb")["createProject"]["id"]
        for n in range(docs):
            words = " ".join(WORDS[(n * 7 + i) % len(WORDS)] for i in range(60))
            post(client, base, ADD_DOC, p=pid, name=f"note-{n}.md", text=f"# Note {n}\n\nPenguins {words}.")
        sessions = [
            post(
                client, base, CREATE_SESSION, p=pid,
                input={"provider": "scripted", "model": "scripted", "threshold": 0.0, "answerMode": "GENERATIVE"},
            )["createChatSession"]["id"]
            for _ in range(64)
        ]  # fmt: skip
    return pid, sessions


def drive(bases: list[str], pid: str, sessions: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` threads, each sending search / chat requests in turn to its server until time is up."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(n: int) -> None:
        base = bases[n % len(bases)]
        with httpx.Client() as http:
            turn = 0
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                try:
                    if turn % 2:
                        post(http, base, SEND, s=sessions[n % len(sessions)], c=f"Why do penguins {WORDS[turn % 16]}?")
                    else:
                        post(http, base, SEARCH, p=pid, q=f"penguin {WORDS[(n + turn) % 16]}")
                except (httpx.HTTPError, RuntimeError) as exc:
                    with lock:
                        errors.append(type(exc).__name__)
                else:
                    with lock:
                        latencies.append(time.perf_counter() - started)
                turn += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "requests_per_s": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(ordered) if ordered else None,
        "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))] if ordered else None,
        "errors": len(errors),
    }


@contextmanager
def postgres(folder: Path) -> Iterator[str]:
    folder.chmod(0o755)  # pgserver runs the server as its own user under root
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
    try:
        server.psql("CREATE DATABASE two_servers;")
        uri = server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
        yield uri.replace("/postgres?", "/two_servers?", 1)
    finally:
        server.cleanup()


def measure(backend: str, url: str, folder: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    migrate.upgrade(url)
    pair = servers(folder, url, 2)
    with ExitStack() as stack:
        for server in pair:
            stack.enter_context(server)
        pid, sessions = seed(pair[0].base, args.docs)
        drive([s.base for s in pair], pid, sessions, args.clients, 3)  # warm-up: both servers, first requests
        rows = []
        for round_ in range(args.rounds):
            one = drive([pair[0].base], pid, sessions, args.clients, args.seconds)
            two = drive([s.base for s in pair], pid, sessions, args.clients, args.seconds)
            rows.append({"backend": backend, "round": round_ + 1, "one": one, "two": two})
            print(
                f"{backend:10} round {round_ + 1}: one server {one['requests_per_s']:6.1f} req/s "
                f"(p50 {one['p50_ms']:.0f} ms, p95 {one['p95_ms']:.0f} ms, {one['errors']} errors); "
                f"two servers {two['requests_per_s']:6.1f} req/s (p50 {two['p50_ms']:.0f} ms, "
                f"p95 {two['p95_ms']:.0f} ms, {two['errors']} errors); two/one "
                f"{two['requests_per_s'] / one['requests_per_s']:.2f}x",
                flush=True,
            )
        for server in pair:
            if "Traceback" in server.log_text():
                raise RuntimeError(f"a server logged a traceback:\n{server.log_text()[-3000:]}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragchat-two-servers-") as tmp:
        folder = Path(tmp)
        for backend in args.backends.split(","):
            work = folder / backend
            work.mkdir()
            if backend == "postgresql":
                with postgres(work) as url:
                    rows += measure(backend, url, work, args)
            else:
                rows += measure(backend, f"sqlite:///{work / 'ragchat.db'}", work, args)
    for backend in {r["backend"] for r in rows}:
        ratios = [r["two"]["requests_per_s"] / r["one"]["requests_per_s"] for r in rows if r["backend"] == backend]
        print(f"{backend}: two/one servers, requests per second: median {statistics.median(ratios):.2f}x")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
