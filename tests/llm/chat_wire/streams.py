"""Reading a ChatModel stream in tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from app.llm.base import StreamEvent, TextDelta, Usage


@dataclass
class Collected:
    deltas: list[str] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def text(self) -> str:
        return "".join(self.deltas)


async def collect(events: AsyncIterator[StreamEvent], *, catch: bool = False) -> Collected:
    """Everything a stream yields; with ``catch``, also the error that ended it."""
    out = Collected()
    try:
        async for event in events:
            assert not out.usage, "nothing may follow Usage"
            if isinstance(event, TextDelta):
                out.deltas.append(event.text)
            else:
                assert isinstance(event, Usage)
                out.usage.append(event)
    except Exception as exc:
        if not catch:
            raise
        out.error = exc
    return out
