"""A loopback HTTP server with the answers the fetcher must cope with (documents, redirects,
oversize and compressed bodies, a slow drip, wrong types)."""

from __future__ import annotations

import gzip
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DOC = b"# Fetched\n\nThe lighthouse keeper logs the tides every morning.\n"
BOMB = gzip.compress(b"a" * (8 * 1024 * 1024))  # ~8 KB that expands to 8 MiB


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.server.seen.append((url.path, self.headers.get("Host", "")))  # type: ignore[attr-defined]
        self.server.auth.append((url.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        if url.path == "/notes.md":
            self._send(200, DOC, {"Content-Type": "text/markdown; charset=utf-8"})
        elif url.path == "/download":
            self._send(
                200,
                DOC,
                {"Content-Type": "text/plain", "Content-Disposition": 'attachment; filename="../../etc/tides.txt"'},
            )
        elif url.path == "/redirect":
            self._send(int(query.get("status", "302")), b"", {"Location": query["to"]})
        elif url.path == "/loop":
            self._send(302, b"", {"Location": "/loop"})
        elif url.path == "/big":
            self._send(200, b"x" * int(query["n"]), {"Content-Type": "text/plain"})
        elif url.path == "/big-unannounced":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()  # no length: HTTP/1.0 style, the body ends when the connection closes
            self.wfile.write(b"y" * int(query["n"]))
        elif url.path == "/gzip":
            body = gzip.compress(DOC) if query.get("bomb") is None else BOMB
            self._send(200, body, {"Content-Type": "text/plain", "Content-Encoding": "gzip"})
        elif url.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "100")
            self.end_headers()
            for _ in range(100):
                self.wfile.write(b"z")
                self.wfile.flush()
                time.sleep(0.05)
        elif url.path == "/image.png":
            self._send(200, b"\x89PNG\r\n\x1a\n", {"Content-Type": "image/png"})
        else:
            self._send(404, b"no", {"Content-Type": "text/plain"})

    def do_POST(self) -> None:  # the same routes; the body is read and dropped
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()


@contextmanager
def serving(host: str = "127.0.0.1") -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer((host, 0), _Handler)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    server.auth = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def serving_tls(tmp: Path, name: str = "localhost") -> Iterator[tuple[ThreadingHTTPServer, str]]:
    """The same server over TLS, its certificate (from a throwaway CA, made with the openssl command)
    naming only ``name``; yields the server and the CA file that verifies it."""
    ca_key, ca, key, csr, cert = (str(tmp / n) for n in ("ca.key", "ca.pem", "srv.key", "srv.csr", "srv.pem"))
    ext = tmp / "san.ext"
    ext.write_text(f"subjectAltName=DNS:{name}\n")
    run = partial(subprocess.run, check=True, capture_output=True)
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
         "-days", "2", "-subj", "/CN=ragchat test CA"])  # fmt: skip
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={name}"])
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
         "-days", "2", "-extfile", str(ext)])  # fmt: skip
    with serving() as server:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        yield server, ca
