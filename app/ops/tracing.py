"""OpenTelemetry traces, off unless ``RAGCHAT_OPS__OTLP_ENDPOINT`` names an OTLP/HTTP collector.

A span per HTTP request and websocket connection (:class:`TraceRequests`), a ``chat turn`` span as
its child for each turn (made with the turn's retrieval trace, app/services/chat/trace.py), and a
span per stage under it, from the durations the stored trace already measured (not timed twice), and
a span per chat model call (``chat <model>``, :meth:`TurnSpan.model_call`):
each stage's span ends when its timing is recorded and starts that long before; the retrieval's
stages, recorded together, are laid end to end in the order they ran. Spans carry provider, model,
outcome and token counts, never the question, the answer or document text.

The trace id joins the three records: it is in the log lines of the request (app/logs.py), in the
stored retrieval trace (``traceId``), and in the spans. When tracing is off every call here returns
at once and nothing is recorded.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from opentelemetry import trace as otel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import logs
from app.llm.base import TextDelta, Usage

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

SERVICE = "ragchat"
E = TypeVar("E")
_tracer: otel.Tracer | None = None
_provider: TracerProvider | None = None


def configure(endpoint: str | None = None, *, processor: SpanProcessor | None = None) -> bool:
    """Trace to the OTLP/HTTP ``endpoint`` (or into ``processor``: tests); neither turns tracing off.
    True when tracing is on."""
    global _tracer, _provider
    shutdown()
    if endpoint is None and processor is None:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    if processor is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
    provider.add_span_processor(processor)
    _provider, _tracer = provider, provider.get_tracer(SERVICE)
    return True


def shutdown() -> None:
    """Send what is buffered and stop tracing."""
    global _tracer, _provider
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


def enabled() -> bool:
    return _tracer is not None


def _hex(span: otel.Span) -> str:
    return format(span.get_span_context().trace_id, "032x")


@contextmanager
def span(name: str, attributes: Mapping[str, str | int]) -> Iterator[otel.Span | None]:
    """A span of its own (a background task's: an ingestion item), or None when tracing is off."""
    tracer = _tracer
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(name, attributes=dict(attributes)) as current:
        yield current


class TraceRequests:
    """A span per HTTP request and websocket connection (pure ASGI: streams pass untouched)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer = _tracer
        if tracer is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        method = "WS" if scope["type"] == "websocket" else scope.get("method", "GET")
        path = scope.get("path", "")  # never the query string: it can hold a document and its variables
        span = tracer.start_span(
            f"{method} {path}",
            kind=otel.SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
        )
        logs.trace_id.set(_hex(span))

        async def sending(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.http.response.start"):
                span.set_attribute("http.response.status_code", message["status"])
                if message["status"] >= 500:
                    span.set_status(otel.StatusCode.ERROR)
            await send(message)

        with otel.use_span(span, end_on_exit=True):
            await self.app(scope, receive, sending)


class TurnSpan:
    """One chat turn's span and its stages' (nothing when tracing is off)."""

    def __init__(self, provider: str, model: str) -> None:
        tracer = _tracer
        self._tracer = tracer
        self._span = (
            tracer.start_span("chat turn", attributes={"ragchat.provider": provider, "ragchat.model": model})
            if tracer is not None
            else None
        )

    @property
    def trace_id(self) -> str | None:
        return _hex(self._span) if self._span is not None else None

    def stage(self, name: str, ms: float) -> None:
        """A stage that just ended after ``ms``."""
        self.stages([(name, ms)])

    def stages(self, timed: Iterable[tuple[str, float]]) -> None:
        """Stages that ran one after the other and just ended, in that order."""
        if self._span is None or self._tracer is None:
            return
        done = list(timed)
        parent = otel.set_span_in_context(self._span)
        end = time.time_ns()
        starts = []
        for _, ms in reversed(done):
            starts.append(end - int(ms * 1_000_000))
            end = starts[-1]
        for (name, ms), start in zip(done, reversed(starts), strict=True):
            span = self._tracer.start_span(name, context=parent, start_time=start, attributes={"ragchat.stage": name})
            span.end(end_time=start + int(ms * 1_000_000))

    @property
    def recording(self) -> bool:
        return self._span is not None

    def model_call(self, provider: str, model: str, events: AsyncIterator[E]) -> AsyncIterator[E]:
        """``events`` (a chat model's stream) as a span of its own under the turn, named and
        labelled as OpenTelemetry's GenAI conventions say (``chat <model>``, provider, model, token
        counts; never the prompt or the answer); ``events`` itself when tracing is off, so an
        untraced token costs nothing more."""
        if self._span is None or self._tracer is None:
            return events
        return self._model_call(self._tracer, self._span, provider, model, events)

    @staticmethod
    async def _model_call(
        tracer: otel.Tracer, turn: otel.Span, provider: str, model: str, events: AsyncIterator[E]
    ) -> AsyncIterator[E]:
        span = tracer.start_span(
            f"chat {model}",
            context=otel.set_span_in_context(turn),
            kind=otel.SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
            },
        )
        started, first = time.perf_counter(), True
        try:
            async for event in events:
                if first and isinstance(event, TextDelta) and event.text:
                    span.set_attribute("ragchat.first_token_ms", round((time.perf_counter() - started) * 1000, 3))
                    first = False
                elif isinstance(event, Usage):
                    span.set_attribute("gen_ai.usage.input_tokens", event.prompt_tokens)
                    span.set_attribute("gen_ai.usage.output_tokens", event.completion_tokens)
                yield event
        except Exception as exc:  # a provider's failure; a stop (GeneratorExit, cancellation) is not one
            span.set_status(otel.StatusCode.ERROR, type(exc).__name__)
            raise
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
            span.end()

    def end(self, outcome: str, mode: str | None, tokens_in: int | None, tokens_out: int | None) -> None:
        span, self._span = self._span, None
        if span is None:
            return
        span.set_attribute("ragchat.outcome", outcome)
        if mode:
            span.set_attribute("ragchat.answer_mode", mode)
        if tokens_in is not None:
            span.set_attribute("gen_ai.usage.input_tokens", tokens_in)
        if tokens_out is not None:
            span.set_attribute("gen_ai.usage.output_tokens", tokens_out)
        if outcome == "failed":
            span.set_status(otel.StatusCode.ERROR)
        span.end()
