"""The retrieval trace in the schema: the classes of app/services/chat/trace_model.py, registered in
place with the descriptions they carry, so a resolver hands over the stored trace as it was read."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping

import strawberry
from strawberry.annotation import StrawberryAnnotation
from strawberry.types.base import get_object_definition
from strawberry.types.field import StrawberryField
from strawberry.utils.str_converters import to_camel_case

# Registered first: strawberry.type resolves the enums a type carries, and registers one it meets unregistered bare.
from app.graphql import enums as _enums  # noqa: F401
from app.graphql.tools import call_types as _call_types  # noqa: F401  (ToolCallStatus)
from app.graphql.tools import types as _tool_types  # noqa: F401  (ToolSelectionReason)
from app.rag.search.candidates import Location
from app.rag.search.degradation import Degradation
from app.services.chat import trace_model
from app.services.chat.trace_model import (
    KEYWORD_RANK,
    PASSED_ON_WORDS,
    SCORE,
    VECTOR_RANK,
    RetrievalTrace,
    StageTiming,
    TraceRanking,
    TraceSearch,
)

__all__ = [
    "KEYWORD_RANK",
    "PASSED_ON_WORDS",
    "SCORE",
    "VECTOR_RANK",
    "Degradation",
    "Location",
    "RetrievalTrace",
    "StageTiming",
    "TraceRanking",
    "TraceSearch",
]


def _describe(cls: type, **descriptions: str) -> None:
    """Describe each field of a class registered in place (a dataclass has no room for them)."""
    fields = {f.python_name: f for f in cls.__strawberry_definition__.fields}  # type: ignore[attr-defined]
    if set(fields) != set(descriptions):
        raise ValueError(f"{cls.__name__}: describe exactly {sorted(fields)}")
    for name, text in descriptions.items():
        fields[name].description = text


# Retrieval's value types, exposed as they are: strawberry.type registers a class in place (it stays a
# frozen dataclass), so search hits, chat sources, citations and the trace hand theirs over unchanged.
strawberry.type(
    Location,
    description="Where a chunk sits in its document. Offsets and lines count in the document's text (for HTML "
    "and PDF, the extracted text).",
)
_describe(
    Location,
    char_start="First character, 0-based.",
    char_end="One past the last character.",
    line_start="First line, 1-based.",
    line_end="Last line, inclusive.",
    page="The PDF page it starts on, 1-based; null for documents without pages.",
    heading_path='The headings it sits under, outermost first, joined by " > " (empty above the first heading).',
)
strawberry.type(Degradation, description="Something that went wrong without stopping the search or answer.")
_describe(
    Degradation,
    reason="What failed.",
    message="What failed, in words, with the underlying error (for an operator; not stable).",
)


def register(cls: type, types: Mapping[str, object] | None = None) -> None:
    """Register a trace class with GraphQL in place: its docstring describes the type and each field's
    ``api(...)`` metadata the field (and its GraphQL name, or the property it is read through, when
    those differ); a STORED_ONLY field is left out. ``types`` gives a field another GraphQL type."""
    if not cls.__doc__ or cls.__doc__.startswith(f"{cls.__name__}("):  # dataclass's made-up docstring
        raise ValueError(f"{cls.__name__}: its docstring is its description in the API")
    declared = {f.name: f for f in dataclasses.fields(cls)}
    types = dict(types or {})
    if set(types) - set(declared):
        raise ValueError(f"{cls.__name__} has no field {sorted(set(types) - set(declared))}")
    # strawberry.type makes the class a dataclass again from its class attributes: put the fields back
    # there, so their defaults, default factories and metadata survive it.
    for name, declared_field in declared.items():
        setattr(cls, name, declared_field)
    strawberry.type(cls, description=" ".join(cls.__doc__.split()))
    definition = get_object_definition(cls, strict=True)
    namespace = vars(sys.modules[cls.__module__])
    shown: list[StrawberryField] = []
    for exposed in definition.fields:
        name = exposed.python_name
        metadata = declared[name].metadata
        if metadata.get("stored_only"):
            continue
        if "description" not in metadata:
            raise ValueError(f"{cls.__name__}.{name}: give it api(...) or STORED_ONLY")
        exposed.description = metadata["description"]
        exposed.graphql_name = metadata["name"]
        if read := metadata["read"]:
            exposed.graphql_name = exposed.graphql_name or to_camel_case(name)
            exposed.python_name = read  # what the default resolver reads
            types.setdefault(name, getattr(cls, read).fget.__annotations__["return"])
        if name in types:
            exposed.type_annotation = StrawberryAnnotation(types[name], namespace=namespace)
        shown.append(exposed)
    definition.fields[:] = shown


# A field whose GraphQL type is not its stored one.
_TYPES: dict[type, dict[str, object]] = {
    trace_model.TraceCandidate: {"chunk_id": strawberry.ID, "document_id": strawberry.ID},
    # Shown only when complete (RetrievalTrace.budgeted_tokens), so never null there.
    trace_model.TraceTokens: {
        "context": int,
        "answer_reserve": int,
        "context_window": int,
        "tokenizer": str,
        "exact": bool,
    },
}
for _cls in trace_model.TRACE_TYPES:
    register(_cls, _TYPES.get(_cls))
