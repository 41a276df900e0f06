"""Chat clients for benchmarks/provider_concurrency.py, in a process of their own so that their
work does not share the measured server's GIL: one graphql-transport-ws connection per session,
``--turns`` questions each, one after the other, all sessions at once. Prints one JSON object:
the seconds from the first connection to the last answer, this process's CPU seconds meanwhile
(the load generator shares the machine's cores with the server it measures), counts by event (``tokens`` counts
the words of the ChatToken texts, so tokens sent together in one event count each), and each turn's
seconds from its question to its first token.

    python -m benchmarks.stream_clients --url ws://127.0.0.1:8000/graphql --turns 3 1 2 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter

from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

CHAT = """subscription($s: ID!, $c: String!) { chat(sessionId: $s, content: $c) {
  __typename ... on ChatQueued { position } ... on ChatToken { text } ... on ChatError { code message } } }"""


async def _stream(url: str, sid: str, turns: int, counts: Counter[str], errors: list[str], firsts: list[float]) -> None:
    async with connect(url, subprotocols=[Subprotocol("graphql-transport-ws")], open_timeout=60) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        for turn in range(turns):
            payload = {"query": CHAT, "variables": {"s": sid, "c": f"what do penguins eat? ({turn})"}}
            await ws.send(json.dumps({"id": str(turn), "type": "subscribe", "payload": payload}))
            asked, first = time.perf_counter(), True
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 120))
                if message["type"] == "complete":
                    break
                if message["type"] != "next" or "errors" in message["payload"]:
                    errors.append(json.dumps(message)[:300])
                    break
                event = message["payload"]["data"]["chat"]
                kind = event["__typename"]
                counts[kind] += 1
                if kind == "ChatToken":
                    counts["tokens"] += len(event["text"].split())
                    if first:
                        firsts.append(time.perf_counter() - asked)
                        first = False
                elif kind == "ChatError":
                    if event["code"] == "BUSY":
                        counts["busy"] += 1
                    else:
                        errors.append(event["message"])


async def _everyone(url: str, sessions: list[str], turns: int) -> dict[str, object]:
    counts: Counter[str] = Counter()
    errors: list[str] = []
    firsts: list[float] = []
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(_stream(url, sid, turns, counts, errors, firsts) for sid in sessions))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"seconds": seconds, "cpu_s": cpu, "counts": dict(counts), "errors": errors[:5], "first_token_s": firsts}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--turns", type=int, default=1)
    parser.add_argument("sessions", nargs="+")
    args = parser.parse_args()
    if not args.url.startswith("ws://127.0.0.1:"):
        parser.error("loopback only: the URL must start with ws://127.0.0.1:")
    print(json.dumps(asyncio.run(_everyone(args.url, args.sessions, args.turns))))


if __name__ == "__main__":
    main()
