"""Value types shared by parsing, chunking and ingestion."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum


class DocumentKind(StrEnum):
    """Which parser reads a document (app/rag/ingest/parsing.py): from its file name, or, lacking an
    extension, from its first bytes. Stored in ``documents.kind`` as the value."""

    TEXT = "text"
    MARKDOWN = "markdown"
    HTML = "html"
    PDF = "pdf"
    CODE = "code"
    DOCX = "docx"
    PPTX = "pptx"
    XLSX = "xlsx"
    IMAGE = "image"  # .png, .jpg: read by OCR
    # A document that failed before a parser was chosen: an unsupported type, or no extension.
    UNKNOWN = "unknown"


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


@dataclass(frozen=True)
class Heading:
    start: int  # character offset of the heading line in ParsedDocument.text
    level: int  # 1 = top level
    title: str


@dataclass(frozen=True)
class ParsedDocument:
    """Plain text extracted from a file, plus the structure a chunker and a citation need."""

    text: str
    kind: DocumentKind
    title: str | None = None
    headings: tuple[Heading, ...] = ()
    # For paged formats: page_starts[i] is the character offset where page i + 1 begins.
    page_starts: tuple[int, ...] = ()


@dataclass(frozen=True)
class ChunkSpec:
    """One chunk: ``text == document.text[char_start:char_end]`` exactly."""

    ordinal: int
    text: str
    char_start: int
    char_end: int
    line_start: int  # 1-based, inclusive
    line_end: int
    page: int | None
    heading_path: str  # "Install > From source", "" when the chunk has no heading
    token_count: int
    content_hash: str = field(default="")

    def __post_init__(self) -> None:
        if not self.content_hash:
            object.__setattr__(self, "content_hash", sha256(self.text))
