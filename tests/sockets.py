"""Where each socket of the test process was made. A socket dropped without close() inside a
reference cycle is found by the garbage collector later, in whichever test happens to be running
then, and its ResourceWarning ("unclosed <socket.socket ...>") says nothing of who opened it.
This records, for every socket, the test that was running and the stack that made it, and adds
both as a note to the unraisable exception the warning becomes, so pytest's report names them.

Records are keyed by id(): the collector clears weak references before it runs finalizers, so a
weak mapping could not find the socket whose finalizer warns. A socket being finalized is still
alive, so its id cannot have been reused yet; entries of sockets gone are dropped between tests."""

from __future__ import annotations

import socket
import sys
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STACK_FRAMES = 40  # enough to reach the test's own frame through httpx/httpcore or websockets
_SKIPPED = ("/_pytest/", "/pytest/__main__", "/pluggy/", "/xdist/", "/execnet/", "<frozen runpy>")


@dataclass(frozen=True)
class Birth:
    test: str
    stack: traceback.StackSummary

    def describe(self) -> str:
        frames = [frame for frame in self.stack if not any(part in frame.filename for part in _SKIPPED)]
        return f"the socket was made during {self.test}, at:\n" + "".join(traceback.format_list(frames))


_births: dict[int, tuple[weakref.ref[socket.socket], Birth]] = {}
_running = ["(between tests)"]
_original_init = socket.socket.__init__


def _init(self: socket.socket, *args: Any, **kwargs: Any) -> None:
    _original_init(self, *args, **kwargs)
    stack = traceback.extract_stack(limit=STACK_FRAMES)[:-1]
    _births[id(self)] = (weakref.ref(self), Birth(_running[0], stack))


def record() -> None:
    """Record every socket made from now on (socket.socket's constructor, which create_connection,
    accept() and the asyncio and httpx backends all go through)."""
    socket.socket.__init__ = _init  # type: ignore[method-assign]


def running(test: str) -> None:
    """Name the test now running, and forget the sockets that are gone."""
    _running[0] = test
    for key, (ref, _) in list(_births.items()):
        if ref() is None:
            del _births[key]


def birth(sock: object) -> Birth | None:
    found = _births.get(id(sock))
    return found[1] if found is not None else None


def left_open(test: str) -> list[str]:
    """The sockets made during ``test`` that are still open (closed by nobody, so far)."""
    found = []
    for ref, made in list(_births.values()):
        sock = ref()
        if sock is not None and made.test == test and sock.fileno() != -1:
            found.append(repr(sock))
    return found


def naming(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``hook`` (sys.unraisablehook), with a note on where the socket was made added to any
    exception raised in a socket's finalizer before ``hook`` sees it."""

    def named(unraisable: Any) -> object:
        if isinstance(unraisable.object, socket.socket) and isinstance(unraisable.exc_value, BaseException):
            made = birth(unraisable.object)
            if made is not None:
                unraisable.exc_value.add_note(made.describe())
        return hook(unraisable)

    return named


def install() -> Callable[[], None]:
    """Wrap the current sys.unraisablehook (pytest's, when called after it is set); returns the undo."""
    previous = sys.unraisablehook
    sys.unraisablehook = naming(previous)

    def undo() -> None:
        sys.unraisablehook = previous

    return undo
