"""A document filter in the API: the input a search, a preview or a session's settings take, and
the type that shows the filter a search used (app/rag/search/document_filter.py)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from app.rag.search.document_filter import MAX_TAG_LENGTH, MAX_TAGS, DocumentFilter

_TAGS_ANY = f"Documents with at least one of these tags (each at most {MAX_TAG_LENGTH} characters, {MAX_TAGS} at most)."
_TAGS_ALL = "Documents with every one of these tags."
_PREFIX = 'Documents whose path (their name in the knowledge base) starts with this, e.g. "runbooks/".'
_KINDS = 'Documents of these file types ("markdown", "pdf", "docx", ...: Document.kind\'s values).'
_FROM = "Documents dated at or after this: when the file last changed if known, else when it was ingested."
_TO = "Documents dated at or before this (same date as dateFrom)."


@strawberry.input(description="Which documents to search; every condition given must hold. Empty: every document.")
class DocumentFilterInput:
    tags_any: list[str] | None = strawberry.field(default=None, description=_TAGS_ANY)
    tags_all: list[str] | None = strawberry.field(default=None, description=_TAGS_ALL)
    path_prefix: str | None = strawberry.field(default=None, description=_PREFIX)
    kinds: list[str] | None = strawberry.field(default=None, description=_KINDS)
    date_from: datetime | None = strawberry.field(default=None, description=_FROM)
    date_to: datetime | None = strawberry.field(default=None, description=_TO)

    def to_filter(self) -> DocumentFilter:
        return DocumentFilter(
            tags_any=tuple(self.tags_any or ()),
            tags_all=tuple(self.tags_all or ()),
            path_prefix=self.path_prefix,
            kinds=tuple(self.kinds or ()),
            date_from=self.date_from,
            date_to=self.date_to,
        )


@strawberry.type(name="DocumentFilter", description="The documents a search was narrowed to.")
class DocumentFilterView:
    tags_any: list[str] = strawberry.field(description=_TAGS_ANY)
    tags_all: list[str] = strawberry.field(description=_TAGS_ALL)
    path_prefix: str | None = strawberry.field(description=_PREFIX)
    kinds: list[str] = strawberry.field(description=_KINDS)
    date_from: datetime | None = strawberry.field(description=_FROM)
    date_to: datetime | None = strawberry.field(description=_TO)

    @classmethod
    def of(cls, only: DocumentFilter | None) -> DocumentFilterView | None:
        if only is None:
            return None
        return cls(
            tags_any=list(only.tags_any),
            tags_all=list(only.tags_all),
            path_prefix=only.path_prefix,
            kinds=list(only.kinds),
            date_from=only.date_from,
            date_to=only.date_to,
        )
