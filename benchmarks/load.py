"""Load, then audit: many chat subscriptions at once while documents are ingested and sessions come and go.

Starts a real ragchat server subprocess on 127.0.0.1 (a scripted chat model, the configured embedder,
a fresh database), drives it for a bounded time, stops it, and audits what it stored::

    .venv/bin/python -m benchmarks.load                      # 60 s, 30 chat clients
    .venv/bin/python -m benchmarks.load --seconds 5 --chats 20 --json load.json

The report: requests completed, busy rejections, errors by kind, p50/p95 latency per operation, and
the audit — every accepted message has its stored answer or a stored failure, no orphan rows, every
document complete, ``PRAGMA integrity_check`` ok, and no ``database is locked`` (nor any traceback)
in the server log. Exits 1 when the audit finds a problem. Loopback only; it stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pysqlite3.dbapi2 as sqlite3
import sqlite_vec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from app.db import migrate
from tests.providers import scripted_env

ROOT = Path(__file__).resolve().parents[1]
LOG_ALARMS = ("database is locked", "Traceback", "Unexpected error", "Exception in ASGI application")
ANSWERS = [
    "Emperor penguins huddle together through the polar winter [1].",
    "The documents say <FAIL> something",  # one mid-stream failure, stored as a failed answer
    "Barn owls hunt at night and find mice by sound [1]. Green tea is steamed soon after picking.",
]
WORDS = "penguin owl tea winter night steam leaf huddle hunt mouse river stone cloud paper lamp clock".split()

# -- the server ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``ragchat serve`` in a subprocess on 127.0.0.1, its output in ``log``."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None, *, database: Path | None = None) -> None:
        self.workdir = workdir
        self.database = database or workdir / "ragchat.db"
        self.log = workdir / "server.log"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCHAT_")}
        self.env.update(
            {
                "HF_HUB_OFFLINE": "1",
                "RAGCHAT_DATABASE_URL": f"sqlite:///{self.database}",
                "RAGCHAT_LOG__LEVEL": "warning",
            }
        )
        self.env.update(env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run another ragchat command against the same database and settings."""
        return subprocess.run(
            [sys.executable, "-m", "app", *args],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, timeout: float = 60) -> Server:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=self.workdir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code < 500:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the server did not answer within {timeout} s:\n{self.log_text()[-3000:]}")

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM (a graceful shutdown), then SIGKILL if it does not stop in time."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the audit -------------------------------------------------------------------------------------


def open_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=30)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


def _missing(child: str, parent: str, link: str, where: str = "") -> str:
    """SQL counting rows of ``child`` whose ``link`` names no row of ``parent``."""
    return f"SELECT count(*) FROM {child} c WHERE {where}NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.id = c.{link})"


ORPHANS = {
    "chunks_without_documents": _missing("chunks", "documents", "document_id"),
    "documents_without_projects": _missing("documents", "projects", "project_id"),
    "citations_without_messages": _missing("citations", "chat_messages", "message_id"),
    "messages_without_sessions": _missing("chat_messages", "chat_sessions", "session_id"),
    "sessions_without_projects": _missing("chat_sessions", "projects", "project_id"),
    "fts_rows_without_chunks": _missing("chunks_fts_docsize", "chunks", "id"),
    "chunks_without_fts_rows": "SELECT count(*) FROM chunks c WHERE NOT EXISTS "
    "(SELECT 1 FROM chunks_fts_docsize f WHERE f.id = c.id)",
    "ready_documents_with_wrong_chunk_count": "SELECT count(*) FROM documents d WHERE d.status = 'ready' "
    "AND d.chunk_count != (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)",
    "failed_documents_with_chunks": "SELECT count(*) FROM documents d WHERE d.status = 'failed' "
    "AND EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)",
    "answers_still_streaming": "SELECT count(*) FROM chat_messages WHERE status = 'streaming'",
}


def audit(db_path: Path, log: str = "") -> dict[str, Any]:
    """Counts of everything that would mean lost or inconsistent data; every count must be 0."""
    conn = open_db(db_path)
    try:
        found: dict[str, Any] = {
            "integrity_check": ",".join(r[0] for r in conn.execute("PRAGMA integrity_check")),
            "foreign_key_violations": len(conn.execute("PRAGMA foreign_key_check").fetchall()),
        }
        try:
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
            found["fts_integrity"] = "ok"
        except sqlite3.DatabaseError as exc:
            found["fts_integrity"] = str(exc)
        for name, sql in ORPHANS.items():
            found[name] = conn.execute(sql).fetchone()[0]
        vectors_orphaned = chunks_unvectored = 0
        for space_id, project_id, status in conn.execute("SELECT id, project_id, status FROM embedding_spaces"):
            table = f"vec_space_{int(space_id)}"
            vectors_orphaned += conn.execute(
                f"SELECT count(*) FROM {table} v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.rowid)"
            ).fetchone()[0]
            if status == "active":
                chunks_unvectored += conn.execute(
                    f"SELECT count(*) FROM chunks c WHERE c.project_id = ? AND NOT EXISTS "
                    f"(SELECT 1 FROM {table} v WHERE v.rowid = c.id)",
                    (project_id,),
                ).fetchone()[0]
        found["vectors_without_chunks"] = vectors_orphaned
        found["chunks_without_vectors"] = chunks_unvectored
        found["rows"] = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("projects", "documents", "chunks", "chat_sessions", "chat_messages", "citations")
        }
    finally:
        conn.close()
    found["log_alarms"] = {alarm: log.count(alarm) for alarm in LOG_ALARMS if alarm in log}
    return found


def problems(found: dict[str, Any]) -> list[str]:
    """What the audit found wrong, as sentences; empty when all is well."""
    out = [f"{k} = {found[k]}" for k in ("integrity_check", "fts_integrity") if found[k] != "ok"]
    skip = {"integrity_check", "fts_integrity", "rows", "log_alarms", "messages"}
    out += [f"{k} = {v}" for k, v in found.items() if k not in skip and v]
    out += [f"server log has {n} x {alarm!r}" for alarm, n in found.get("log_alarms", {}).items()]
    return out


@dataclass(frozen=True)
class Accepted:
    """A question the server accepted (it sent the answer's message id) and what the client saw."""

    message_id: int
    session_id: int
    saw: str  # "complete", "failed" or "cancelled" (the client left mid-stream)


def lost_messages(db_path: Path, accepted: list[Accepted], deleted_sessions: set[int]) -> dict[str, int]:
    """Every accepted answer must be stored complete or failed — unless its session was deleted."""
    conn = open_db(db_path)
    try:
        stored = dict(conn.execute("SELECT id, status FROM chat_messages WHERE role = 'assistant'").fetchall())
    finally:
        conn.close()
    counts: Counter[str] = Counter()
    for item in accepted:
        status = stored.get(item.message_id)
        if status is None:
            counts["gone_with_deleted_session" if item.session_id in deleted_sessions else "lost"] += 1
        elif item.saw == "cancelled":
            counts["ok" if status in ("complete", "failed") else f"stored_{status}"] += 1
        else:
            counts["ok" if status == item.saw else f"client_saw_{item.saw}_stored_{status}"] += 1
    return dict(counts)


# -- the load --------------------------------------------------------------------------------------

CHAT = """subscription($s: ID!, $c: String!) { chat(sessionId: $s, content: $c) { __typename
  ... on ChatRetrieval { messageId } ... on ChatDone { answer { id status } }
  ... on ChatError { code message failedMessageId } } }"""
ADD_DOC = """mutation($p: ID!, $n: String!, $t: String!) { addDocument(projectId: $p, name: $n, text: $t) {
  __typename ... on UploadReport { files { status document { id } } } ... on Error { message } } }"""
# Returns the queued ingestion job: its documents appear as the server's worker ingests them.
UPLOAD = """mutation($p: ID!, $files: [Upload!]!) { uploadDocuments(projectId: $p, files: $files) {
  __typename ... on IngestionJob { items { state document { id } } } ... on Error { message } } }"""
DELETE_DOC = "mutation($id: ID!) { deleteDocument(id: $id) { __typename ... on Error { message } } }"
CREATE_PROJECT = "mutation($n: String!) { createProject(input: {name: $n}) { __typename ... on Project { id } } }"
CREATE_SESSION = """mutation($p: ID!) { createChatSession(projectId: $p,
  input: {provider: "scripted", model: "scripted", threshold: 0.05, topK: 3}) {
  __typename ... on ChatSession { id } ... on Error { message } } }"""
DELETE_SESSION = "mutation($id: ID!) { deleteChatSession(id: $id) { __typename ... on Error { message } } }"
READ = """query($p: ID!, $s: ID!, $q: String!) { search(projectId: $p, query: $q) { __typename }
  retrievalPreview(sessionId: $s, message: $q) { __typename }
  chatSessions(first: 20) { ... on ChatSessionConnection {
    edges { node { id lastMessage { status citations { marker } } } } } } }"""


@dataclass
class Op:
    ok: int = 0
    busy: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)


@dataclass
class Run:
    base: str
    deadline: float
    projects: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    deleted_sessions: set[int] = field(default_factory=set)
    accepted: list[Accepted] = field(default_factory=list)
    ops: dict[str, Op] = field(default_factory=lambda: defaultdict(Op))
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    # Operations that must each have succeeded once before the run stops: past the deadline it goes
    # on (at most `grace` seconds more) while one has not, so a short run on a busy machine still
    # exercises every kind of operation instead of stopping before the slowest one came round.
    required: tuple[str, ...] = ()
    grace: float = 0.0

    def running(self) -> bool:
        now = time.monotonic()
        if now < self.deadline:
            return True
        missing = any(name not in self.ops or self.ops[name].ok == 0 for name in self.required)
        return missing and now < self.deadline + self.grace

    def text(self, words: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(words)) + "."


async def gql(run: Run, http: httpx.AsyncClient, name: str, query: str, **variables: Any) -> dict[str, Any] | None:
    """One GraphQL request, timed and classified; the field's result, or None when it failed."""
    started = time.perf_counter()
    try:
        response = await http.post("/graphql", json={"query": query, "variables": variables})
    except httpx.HTTPError as exc:
        run.ops[name].errors[type(exc).__name__] += 1
        return None
    return record(run, name, started, response)


def record(run: Run, name: str, started: float, response: httpx.Response) -> dict[str, Any] | None:
    op = run.ops[name]
    if response.status_code != 200:
        op.errors[f"http_{response.status_code}"] += 1
        return None
    body = response.json()
    if body.get("errors"):
        op.errors["graphql_error"] += 1
        return None
    data: dict[str, Any] = next(iter(body["data"].values()))
    kind = data.get("__typename", "") if isinstance(data, dict) else ""
    if kind.endswith("Error"):
        op.errors[kind] += 1
        return None
    op.ok += 1
    op.latencies.append(time.perf_counter() - started)
    return data


async def chat_client(run: Run, number: int, ws_url: str) -> None:
    rng = random.Random(number)
    async with connect(ws_url, subprotocols=[Subprotocol("graphql-transport-ws")], open_timeout=20) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        await asyncio.wait_for(ws.recv(), 20)
        turn = 0
        while run.running() and run.sessions:
            turn += 1
            chat = rng.choice(run.sessions)
            cancel = turn % 10 == 0  # every tenth question: leave after the first token
            busy = await ask(run, ws, str(turn), chat, f"what about {rng.choice(WORDS)}? ({number}.{turn})", cancel)
            if busy:
                await asyncio.sleep(rng.uniform(0.05, 0.3))


async def ask(run: Run, ws: ClientConnection, op_id: str, chat: str, question: str, cancel: bool) -> bool:
    """One chat subscription to its end; True when the server was busy."""
    op, started, message_id = run.ops["chat"], time.perf_counter(), None
    payload = {"query": CHAT, "variables": {"s": chat, "c": question}}
    await ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": payload}))
    try:
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if message.get("id") != op_id:
                continue
            if message["type"] != "next":
                op.errors["graphql_error" if message["type"] == "error" else "ended_without_answer"] += 1
                return False
            if message["payload"].get("errors") or not message["payload"].get("data"):
                op.errors["graphql_error"] += 1
                return False
            event = message["payload"]["data"]["chat"]
            kind = event["__typename"]
            if kind == "ChatRetrieval":
                message_id = int(event["messageId"])
                run.ops["chat_first_event"].latencies.append(time.perf_counter() - started)
            elif kind == "ChatToken" and cancel:
                await ws.send(json.dumps({"id": op_id, "type": "complete"}))
                run.accepted.append(Accepted(message_id or 0, int(chat), "cancelled"))
                run.ops["chat_cancelled"].ok += 1
                return False
            elif kind == "ChatDone":
                op.ok += 1
                op.latencies.append(time.perf_counter() - started)
                run.accepted.append(Accepted(int(event["answer"]["id"]), int(chat), "complete"))
                return False
            elif kind == "ChatError":
                if event["code"] == "BUSY":
                    op.busy += 1
                    return True
                op.errors[event["code"]] += 1
                if event["failedMessageId"]:
                    run.accepted.append(Accepted(int(event["failedMessageId"]), int(chat), "failed"))
                return False
    except (TimeoutError, ConnectionClosed) as exc:
        op.errors[type(exc).__name__] += 1
        return False


async def ingest_client(run: Run, number: int) -> None:
    rng = random.Random(100 + number)
    async with httpx.AsyncClient(base_url=run.base, timeout=60) as http:
        turn = 0
        while run.running():
            turn += 1
            project = rng.choice(run.projects)
            if turn % 3 == 0:
                data = await upload(run, http, project, turn, number)
            else:
                name = f"note-{number}-{turn % 7}.md"  # names repeat, so some adds are updates
                data = await gql(run, http, "addDocument", ADD_DOC, p=project, n=name, t=run.text(rng.randint(8, 60)))
            listed = (data or {}).get("files") or (data or {}).get("items") or []
            found = [f["document"]["id"] for f in listed if f["document"]]
            run.documents += [doc for doc in found if doc not in run.documents]
            if turn % 4 == 0 and run.documents:
                await gql(
                    run, http, "deleteDocument", DELETE_DOC, id=run.documents.pop(rng.randrange(len(run.documents)))
                )


async def upload(run: Run, http: httpx.AsyncClient, project: str, turn: int, number: int) -> dict[str, Any] | None:
    files = {str(i): (f"upload-{number}-{turn}-{i}.txt", run.text(40).encode(), "text/plain") for i in range(2)}
    operations = {"query": UPLOAD, "variables": {"p": project, "files": [None, None]}}
    started = time.perf_counter()
    try:
        response = await http.post(
            "/graphql",
            data={
                "operations": json.dumps(operations),
                "map": json.dumps({"0": ["variables.files.0"], "1": ["variables.files.1"]}),
            },
            files=files,
            headers={"Apollo-Require-Preflight": "true"},
        )
    except httpx.HTTPError as exc:
        run.ops["uploadDocuments"].errors[type(exc).__name__] += 1
        return None
    return record(run, "uploadDocuments", started, response)


async def session_churn(run: Run) -> None:
    """Create sessions, and delete the ones it made — sometimes while answers stream in them."""
    rng, mine = random.Random(200), []
    async with httpx.AsyncClient(base_url=run.base, timeout=60) as http:
        while run.running():
            data = await gql(run, http, "createChatSession", CREATE_SESSION, p=rng.choice(run.projects))
            if data:
                mine.append(data["id"])
                run.sessions.append(data["id"])
            if len(mine) > 3:
                victim = mine.pop(0)
                run.sessions.remove(victim)
                if await gql(run, http, "deleteChatSession", DELETE_SESSION, id=victim):
                    run.deleted_sessions.add(int(victim))
            await asyncio.sleep(0.2)


async def reader(run: Run) -> None:
    rng = random.Random(300)
    async with httpx.AsyncClient(base_url=run.base, timeout=60) as http:
        while run.running():
            await gql(run, http, "read", READ, p=rng.choice(run.projects), s=run.sessions[0], q=rng.choice(WORDS))


async def setup(run: Run, sessions: int) -> None:
    async with httpx.AsyncClient(base_url=run.base, timeout=120) as http:
        for name in ("load-a", "load-b"):
            data = await gql(run, http, "createProject", CREATE_PROJECT, n=name)
            assert data, f"cannot create a project: {run.ops['createProject'].errors}"
            run.projects.append(data["id"])
            await gql(run, http, "addDocument", ADD_DOC, p=data["id"], n="seed.md", t="# Seed\n\n" + " ".join(WORDS))
        for i in range(sessions):
            data = await gql(run, http, "createChatSession", CREATE_SESSION, p=run.projects[i % 2])
            assert data, f"cannot create a session: {run.ops['createChatSession'].errors}"
            run.sessions.append(data["id"])


async def drive(
    base: str, seconds: float, chats: int, ingesters: int, required: tuple[str, ...] = (), grace: float = 0.0
) -> Run:
    run = Run(base, deadline=float("inf"), required=required, grace=grace)
    await setup(run, sessions=max(4, chats // 4))
    run.deadline = time.monotonic() + seconds
    ws_url = base.replace("http://", "ws://") + "/graphql"
    tasks = [chat_client(run, i, ws_url) for i in range(chats)]
    tasks += [ingest_client(run, i) for i in range(ingesters)] + [session_churn(run), reader(run)]
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), seconds + grace + 120)
    for result in results:
        if isinstance(result, BaseException):
            run.ops["client"].errors[f"{type(result).__name__}: {result}"[:120]] += 1
    return run


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def summarise(run: Run, seconds: float, chats: int, found: dict[str, Any], lost: dict[str, int]) -> dict[str, Any]:
    errors: Counter[str] = Counter()
    operations = {}
    for name, op in sorted(run.ops.items()):
        errors.update({f"{name}:{kind}": n for kind, n in op.errors.items()})
        operations[name] = {
            "ok": op.ok,
            "busy": op.busy,
            "errors": dict(op.errors),
            "p50_ms": percentile(op.latencies, 0.50),
            "p95_ms": percentile(op.latencies, 0.95),
        }
    found = {**found, "messages": lost}
    trouble = problems(found) + [f"{n} accepted answers {k}" for k, n in lost.items() if k not in LEGIT_FATES]
    return {
        "seconds": seconds,
        "chat_clients": chats,
        "completed": sum(op.ok for name, op in run.ops.items() if name != "chat_first_event"),
        "busy_rejections": sum(op.busy for op in run.ops.values()),
        "errors_by_kind": dict(errors),
        "accepted_answers": len(run.accepted),
        "operations": operations,
        "audit": found,
        "problems": trouble,
    }


LEGIT_FATES = {"ok", "gone_with_deleted_session"}


def load(
    workdir: Path,
    *,
    seconds: float = 60,
    chats: int = 30,
    ingesters: int = 2,
    max_generations: int = 16,
    token_delay_ms: int = 15,
    env: dict[str, str] | None = None,
    required: tuple[str, ...] = (),
    grace: float = 0.0,
) -> dict[str, Any]:
    """Migrate a fresh database, serve it, drive it, stop it, audit it. Returns the report.
    ``required``: operations the run goes on for (up to ``grace`` more seconds) until each succeeded once."""
    script = workdir / "answers.json"
    script.write_text(json.dumps(ANSWERS), encoding="utf-8")
    settings = {
        **scripted_env(script, token_delay_ms=token_delay_ms),
        "RAGCHAT_CHAT__MAX_CONCURRENT_GENERATIONS": str(max_generations),
        **(env or {}),
    }
    server = Server(workdir, settings)
    migrate.upgrade(f"sqlite:///{server.database}")
    with server:
        run = asyncio.run(drive(server.base, seconds, chats, ingesters, required, grace))
    found = audit(server.database, server.log_text())
    return summarise(run, seconds, chats, found, lost_messages(server.database, run.accepted, run.deleted_sessions))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60, help="how long to drive the server (default 60)")
    parser.add_argument("--chats", type=int, default=30, help="concurrent chat subscriptions (default 30)")
    parser.add_argument("--ingesters", type=int, default=2, help="concurrent ingesting clients (default 2)")
    parser.add_argument("--max-generations", type=int, default=16, help="the server's concurrent answer cap")
    parser.add_argument("--token-delay-ms", type=int, default=15, help="scripted model delay per token")
    parser.add_argument("--workdir", type=Path, help="keep the database and server log here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= 3600 or not 1 <= args.chats <= 200:
        parser.error("--seconds must be in (0, 3600] and --chats in [1, 200]")
    with tempfile.TemporaryDirectory(prefix="ragchat-load-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        report = load(
            workdir,
            seconds=args.seconds,
            chats=args.chats,
            ingesters=args.ingesters,
            max_generations=args.max_generations,
            token_delay_ms=args.token_delay_ms,
        )
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
