"""llama-cpp-python's own OpenAI-compatible server as a subprocess, serving the shipped GGUF.

A real server nobody here wrote: what the OpenAI adapter meets in the field, minus the network.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from tests.live import free_port
from tests.waiting import wait_until


@contextmanager
def llama_server(model: Path, *, api_key: str, n_ctx: int = 2048, deadline: float = 60.0) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` until the block ends; yields its ``.../v1`` base URL."""
    missing = [name for name in ("sse_starlette", "starlette_context") if importlib.util.find_spec(name) is None]
    if missing:
        raise RuntimeError(f"llama_cpp.server needs the llama-cpp-python[server] extra; missing: {missing}")
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", "1", "--n_threads_batch", "1", "--api_key", api_key,
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            _wait_ready(process, f"{base_url}/models", api_key, deadline, log)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(process: subprocess.Popen[bytes], url: str, api_key: str, timeout: float, log: IO[bytes]) -> None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    wait_until(ready, timeout, f"llama_cpp.server to answer {url}", interval=0.1, detail=lambda: _tail(log))


def _tail(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")[-2000:]
