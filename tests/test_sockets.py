"""An unclosed socket that the garbage collector finds, in whatever test runs then, is reported
with the test and the code that made it (tests/sockets.py)."""

from __future__ import annotations

import gc
import socket
import sys
import warnings
from typing import Any

import pytest

from tests import sockets


def _leave_a_connection_in_a_cycle(port: int) -> None:
    made = socket.create_connection(("127.0.0.1", port), timeout=10)
    cycle: list[object] = [made]
    cycle.append(cycle)  # only the collector frees it, later: as a forgotten client connection is


def _peer_port(sock: socket.socket) -> int | None:
    try:
        return int(sock.getpeername()[1])
    except OSError:  # not connected (a listening socket another test left)
        return None


def test_an_unclosed_socket_found_by_the_collector_names_the_test_and_the_code_that_made_it(
    request: pytest.FixtureRequest,
) -> None:
    notes: list[str] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        previous = sys.unraisablehook

        def seen(unraisable: Any) -> None:
            if isinstance(unraisable.object, socket.socket) and _peer_port(unraisable.object) == port:
                notes.extend(getattr(unraisable.exc_value, "__notes__", []))
            else:  # anything else the collection finds is reported as ever
                previous(unraisable)

        sys.unraisablehook = sockets.naming(seen)
        try:
            _leave_a_connection_in_a_cycle(port)
            with warnings.catch_warnings():
                warnings.simplefilter("error", ResourceWarning)
                gc.collect()
        finally:
            sys.unraisablehook = previous
    [note] = notes
    assert note.startswith(f"the socket was made during {request.node.nodeid}, at:"), note
    assert "in _leave_a_connection_in_a_cycle" in note and "socket.create_connection" in note, note
