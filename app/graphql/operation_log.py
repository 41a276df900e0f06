"""Each GraphQL operation's name, type and outcome, for its request's summary line (app/request_log.py).

:class:`OperationLog`, a schema extension, brackets every operation (over HTTP and over the
websocket alike). While it runs, the places that know how it went :func:`note` it:
``RagchatSchema.process_errors`` (GraphQL errors: the client's mistakes or ours) and
``graphql.errors.to_graphql`` (a result union's error member, such as ``ValidationError``). When
it ends, the operation joins its request's record; on a websocket, where the connection's line
comes only when it closes, the operation also gets a line of its own.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import dataclass

from graphql import OperationDefinitionNode
from strawberry.extensions import SchemaExtension

from app import request_log
from app.ops import metrics
from app.request_log import INTERNAL_ERROR, OK, worst

log = logging.getLogger("ragchat.graphql.operation")
# The operation name comes from the client (``operationName``): logged only when it is a GraphQL name.
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,99}")


@dataclass
class _Operation:
    outcome: str = OK


_current: ContextVar[_Operation | None] = ContextVar("ragchat_graphql_operation", default=None)


def note(outcome: str) -> None:
    """Record how the operation running now went (outside one, its request): ``ok``,
    ``graphql_errors``, ``internal_error`` or an error type's name; the worst one counts."""
    operation = _current.get()
    if operation is not None:
        operation.outcome = worst(operation.outcome, outcome)
    elif (record := request_log.current()) is not None:
        record.note(outcome)


class OperationLog(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        operation = _Operation()
        token = _current.set(operation)
        try:
            yield
        finally:
            with suppress(ValueError):  # a stream closed from another task: that context ends anyway
                _current.reset(token)
            self._done(operation.outcome, (time.perf_counter() - started) * 1000)

    def _done(self, outcome: str, ms: float) -> None:
        context = self.execution_context
        name = context.operation_name
        name = name if name is None or _NAME.fullmatch(name) else "(invalid name)"
        try:
            kind: str | None = context.operation_type.value
        except RuntimeError:  # the document did not parse, or names no operation it holds
            kind = None
        metrics.operation(metrics.operation_label(name, in_document=self._defined(name)), kind, outcome, ms / 1000)
        record = request_log.current()
        if record is not None:
            record.operation(name, kind, outcome)
        if record is None or record.websocket:
            level = logging.WARNING if outcome == INTERNAL_ERROR else logging.INFO
            fields = {"operation_name": name, "operation_type": kind, "outcome": outcome, "duration_ms": round(ms, 1)}
            log.log(level, "%s %s %.1f ms %s", kind or "graphql", name or "(anonymous)", ms, outcome, extra=fields)

    def _defined(self, name: str | None) -> bool:
        """Whether the parsed document defines an operation called ``name`` (None: an unnamed one);
        only such a name becomes a metric label (app/ops/metrics.py)."""
        document = self.execution_context.graphql_document
        if document is None:
            return False
        return any(
            (node.name.value if node.name else None) == name
            for node in document.definitions
            if isinstance(node, OperationDefinitionNode)
        )
