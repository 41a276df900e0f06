"""The trace's classes (app/services/chat/trace_model.py) are its GraphQL types: each field shows with
the description it declares and a STORED_ONLY one not at all; a field that says neither is refused,
and registering a class in place keeps what reading a stored trace needs."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import pytest
from graphql import GraphQLObjectType
from pydantic import TypeAdapter
from strawberry.utils.str_converters import to_camel_case

from app.graphql.chat.trace_types import register
from app.graphql.schema import build_schema
from app.services.chat import trace_model
from app.services.chat.trace_model import STORED_ONLY, api


def test_every_trace_field_shows_under_its_name_with_its_own_description() -> None:
    schema = build_schema()._schema
    for cls in trace_model.TRACE_TYPES:
        shown = schema.get_type(cls.__name__)
        assert isinstance(shown, GraphQLObjectType), cls.__name__
        declared = {
            f.metadata["name"] or to_camel_case(f.name): f.metadata["description"]
            for f in fields(cls)
            if not f.metadata.get("stored_only")
        }
        assert {name: f.description for name, f in shown.fields.items()} == declared, cls.__name__


def test_stored_only_fields_are_kept_in_the_json_and_not_shown() -> None:
    hidden = {f.name for f in fields(trace_model.RetrievalTrace) if f.metadata.get("stored_only")}
    assert hidden == {"version", "history_turns", "source_chunk_ids", "trace_id"}
    trace = build_schema()._schema.get_type("RetrievalTrace")
    assert isinstance(trace, GraphQLObjectType)
    assert not {"version", "historyTurns", "sourceChunkIds", "traceId"} & set(trace.fields)


def test_a_field_that_is_neither_described_nor_stored_only_is_refused() -> None:
    @dataclass(kw_only=True)
    class TraceForgotten:
        """An entry with a field nobody described."""

        shown: int = field(metadata=api("Shown."))
        hidden: int = field(default=0, metadata=STORED_ONLY)
        forgotten: int = 0

    with pytest.raises(ValueError, match="forgotten"):
        register(TraceForgotten)


def test_a_class_without_a_docstring_is_refused() -> None:
    @dataclass(kw_only=True)
    class TraceUndocumented:
        shown: int = field(metadata=api("Shown."))

    with pytest.raises(ValueError, match="docstring"):
        register(TraceUndocumented)


def test_registering_in_place_keeps_the_defaults_a_stored_trace_relies_on() -> None:
    @dataclass(kw_only=True)
    class TraceLater(trace_model._Camel):
        """An entry older traces do not have."""

        items: list[int] = field(default_factory=list, metadata=api("Items."))
        best_score: float | None = field(default=None, metadata=api("The best."))

    register(TraceLater)
    assert TypeAdapter(TraceLater).validate_python({}) == TraceLater(items=[], best_score=None)
    assert TypeAdapter(TraceLater).validate_python({"bestScore": 0.5}).best_score == 0.5
