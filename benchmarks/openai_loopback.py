"""An OpenAI-compatible chat server on 127.0.0.1 that streams an answer (the distinct words of the
prompt's first source, cited), one token every ``--delay`` seconds: a remote provider whose cost is
waiting, for benchmarks/provider_concurrency.py. It runs in a process of its own, so its work does
not share the measured server's GIL, and stops by itself after ``--lifetime`` seconds.

    python -m benchmarks.openai_loopback --port 8123 --tokens 50 --delay 0.02

Speaks ``POST /v1/chat/completions`` with ``stream: true`` (server-sent events: one chunk per
token, a usage chunk, then ``[DONE]``), HTTP/1.1, chunked, connections kept alive.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys

SOURCE = re.compile(r'<source id="(\d+)"[^>]*>\n(.*?)\n</source>', re.DOTALL)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def words(request: object, tokens: int) -> list[str]:
    """The answer's ``tokens`` pieces, a word or a citation each (the clients count the words they
    get, ``[1].`` among them): the prompt's sources' own sentences in order, each citing its
    source, the last one cut short and cited (an answer the answer guard keeps, as ragchat's would
    be: one sentence of a source's distinct words padded with made-up ones was not, and every turn
    paid for the extractive answer that replaced it). Made-up words pad it only when the sources
    run out."""
    messages = request.get("messages") if isinstance(request, dict) else None
    last = messages[-1].get("content") if isinstance(messages, list) and messages else None
    found = SOURCE.findall(last) if isinstance(last, str) else []
    said: list[tuple[str, str]] = []  # a piece, and the source it comes from
    for number, body in found:
        for sentence in SENTENCE_END.split(body.strip()):
            sentence_words = sentence.rstrip(".!?").split()
            if sentence_words:
                said += [(f"{w} ", number) for w in sentence_words] + [(f"[{number}]. ", number)]
    said = said[:tokens]
    if said and not said[-1][0].startswith("["):  # cut mid-sentence: it ends cited all the same
        said[-1] = (f"[{said[-1][1]}]. ", said[-1][1])
    pieces = [piece for piece, _ in said]
    return pieces + [f"t{n} " for n in range(len(pieces), tokens)]


def _chunk(payload: object) -> bytes:
    data = f"data: {json.dumps(payload)}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tokens: int, delay: float) -> None:
    """Answer requests on one connection until the client closes it (keep-alive, as OpenAI does)."""
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the client closed the connection between requests
            length = 0
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            request = json.loads(await reader.readexactly(length)) if length else {}
            await _answer(writer, str(request.get("model", "loopback")), words(request, tokens), delay)
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # the client stopped an answer
    finally:
        writer.close()


async def _answer(writer: asyncio.StreamWriter, model: str, pieces: list[str], delay: float) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    base = {"id": "bench", "object": "chat.completion.chunk", "created": 0, "model": model}
    tokens = len(pieces)
    for text in pieces:
        await asyncio.sleep(delay)
        writer.write(_chunk({**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}))
        await writer.drain()
    writer.write(_chunk({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    usage = {"prompt_tokens": 100, "completion_tokens": tokens, "total_tokens": 100 + tokens}
    writer.write(_chunk({**base, "choices": [], "usage": usage}))
    data = b"data: [DONE]\n\n"
    writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
    await writer.drain()


async def serve(port: int, tokens: int, delay: float, lifetime: float) -> None:
    server = await asyncio.start_server(lambda r, w: _connection(r, w, tokens, delay), "127.0.0.1", port, backlog=256)
    print("ready", flush=True)
    async with server:
        await asyncio.sleep(lifetime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--lifetime", type=float, default=600.0)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.tokens, args.delay, args.lifetime))
    sys.exit(0)


if __name__ == "__main__":
    main()
