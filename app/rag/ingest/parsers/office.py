"""Word, PowerPoint and Excel (.docx, .pptx, .xlsx): their text as Markdown, structure kept.

- Word: headings become Markdown headings (and the document's headings), list paragraphs "- "
  items, tables Markdown tables.
- PowerPoint: one page per slide, so a citation's page is the slide number; the slide's title is
  its heading, its tables are Markdown tables, its speaker notes follow under "Notes:".
- Excel: each sheet's rows as Markdown tables; a heading per block of rows names the sheet and the
  cell range (``Budget!A2:D21``), so a citation says where in the workbook the row is.

A long table is cut into blocks of rows with the header repeated in each (parsers/tables.py).

These files are zip archives, and a small archive can unpack to gigabytes. :func:`check_zip`
refuses one whose members are too many, too large in all or alone, or compressed beyond what
XML compresses to, before any library reads it; Python's zipfile stops at each member's declared
size and fails its CRC check when a member lies about it. Time is bounded by the caller (a worker
process killed when it takes too long), characters by ``max_chars``.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from app.errors import IngestError
from app.rag.ingest.parsers.tables import cell_text, markdown_tables, table_blocks
from app.rag.ingest.parsers.text import normalise, too_much_text
from app.rag.ingest.types import DocumentKind, Heading, ParsedDocument

_ZIP_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class ZipLimits:
    """What an Office file's zip container may unpack to. Measured on real files: XML compresses
    10-30x typically; a sheet of repeated values up to ~100x; a zip bomb's zeros ~1000x."""

    max_members: int = 10_000
    max_member_bytes: int = 200 * 1024 * 1024
    max_total_bytes: int = 500 * 1024 * 1024
    max_ratio: float = 200.0
    # Below this size a member's ratio says nothing (a few hundred bytes of zeros compress 100x).
    ratio_from_bytes: int = 1024 * 1024


def check_zip(data: bytes, limits: ZipLimits) -> None:
    """Raise :class:`IngestError` when ``data`` is not a zip archive, or looks like a zip bomb."""
    if not data.startswith(_ZIP_MAGIC):
        raise IngestError("this is not an Office file (it is not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        raise IngestError(f"this is a damaged Office file that cannot be read ({exc})") from exc
    if len(members) > limits.max_members:
        raise IngestError(f"looks like a zip bomb: {len(members):,} files inside; the limit is {limits.max_members:,}")
    total = 0
    for member in members:
        if member.file_size > limits.max_member_bytes:
            raise IngestError(
                f"looks like a zip bomb: {member.filename} unpacks to {member.file_size:,} bytes;"
                f" the limit per file inside is {limits.max_member_bytes:,}"
            )
        if member.file_size >= limits.ratio_from_bytes:
            ratio = member.file_size / max(member.compress_size, 1)
            if ratio > limits.max_ratio:
                raise IngestError(
                    f"looks like a zip bomb: {member.filename} is compressed {ratio:,.0f} to 1;"
                    f" the limit is {limits.max_ratio:,.0f} to 1"
                )
        total += member.file_size
        if total > limits.max_total_bytes:
            raise IngestError(f"looks like a zip bomb: it unpacks to more than {limits.max_total_bytes:,} bytes")


class _Writer:
    """Text with headings and page starts, failing as soon as it passes ``max_chars``."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.parts: list[str] = []
        self.length = 0
        self.headings: list[Heading] = []
        self.page_starts: list[int] = []

    def block(self, text: str) -> None:
        """One block (paragraph, table, heading), separated from the previous by a blank line."""
        text = normalise(text).strip("\n")
        if not text.strip():
            return
        if self.parts:
            text = "\n\n" + text
        self.length += len(text)
        if self.length > self.max_chars:
            raise IngestError(too_much_text(self.max_chars))
        self.parts.append(text)

    def heading(self, level: int, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            return
        start = self.length + (2 if self.parts else 0)
        self.block(f"{'#' * level} {title}")
        self.headings.append(Heading(start, level, title))

    def page(self) -> None:
        self.page_starts.append(self.length + (2 if self.parts else 0))

    def document(self, kind: DocumentKind, title: str | None) -> ParsedDocument:
        text = "".join(self.parts)
        if not text.strip():
            raise IngestError("the file has no text")
        return ParsedDocument(
            text=text,
            kind=kind,
            title=title,
            headings=tuple(self.headings),
            page_starts=tuple(self.page_starts),
        )


# ---- Word ----


def parse_docx(data: bytes, *, max_chars: int, zip_limits: ZipLimits) -> ParsedDocument:
    check_zip(data, zip_limits)
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
        writer = _Writer(max_chars)
        for item in document.iter_inner_content():
            if isinstance(item, Paragraph):
                _docx_paragraph(writer, item)
            elif isinstance(item, Table):
                writer.block(markdown_tables(_docx_rows(item)))
        title = document.core_properties.title or None
    except IngestError:
        raise
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile, AttributeError, TypeError) as exc:
        raise IngestError(f"this is a damaged Word file that cannot be read ({exc})") from exc
    return writer.document(DocumentKind.DOCX, title.strip() if title and title.strip() else None)


def _docx_paragraph(writer: _Writer, paragraph: Any) -> None:
    text = paragraph.text
    if not text.strip():
        return
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        writer.heading(1, text)
        return
    if style.startswith("Heading "):
        level = style.removeprefix("Heading ").strip()
        writer.heading(int(level) if level.isdigit() and 1 <= int(level) <= 6 else 1, text)
        return
    numbered = paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None
    if style.startswith("List") or numbered:
        marker = "1." if "Number" in style else "-"
        writer.block(f"{marker} {' '.join(text.split())}")
        return
    writer.block(text)


def _docx_rows(table: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # A merged cell is returned once per grid column it spans; its text is kept once.
            cells.append("" if cell._tc is previous else cell_text(cell.text))
            previous = cell._tc
        rows.append(cells)
    return rows


# ---- PowerPoint ----


def parse_pptx(data: bytes, *, max_pages: int, max_chars: int, zip_limits: ZipLimits) -> ParsedDocument:
    check_zip(data, zip_limits)
    import pptx
    from pptx.exc import PackageNotFoundError

    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        slides = presentation.slides
        if len(slides) > max_pages:
            raise IngestError(f"the presentation has {len(slides):,} slides; the limit is {max_pages:,}")
        writer = _Writer(max_chars)
        for number, slide in enumerate(slides, start=1):
            writer.page()
            title_shape = slide.shapes.title
            title = title_shape.text_frame.text if title_shape is not None and title_shape.has_text_frame else ""
            writer.heading(1, f"Slide {number}: {title}" if title.strip() else f"Slide {number}")
            for shape in _shapes(slide.shapes):
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                if getattr(shape, "has_table", False) and shape.has_table:
                    rows = [[cell_text(cell.text) for cell in row.cells] for row in shape.table.rows]
                    writer.block(markdown_tables(rows))
                elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                    writer.block(_pptx_text(shape.text_frame))
            if slide.has_notes_slide:
                notes = slide.notes_slide.notes_text_frame
                if notes is not None and notes.text.strip():
                    writer.block("Notes: " + notes.text)
        title = presentation.core_properties.title or None
    except IngestError:
        raise
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile, AttributeError, TypeError) as exc:
        raise IngestError(f"this is a damaged PowerPoint file that cannot be read ({exc})") from exc
    return writer.document(DocumentKind.PPTX, title.strip() if title and title.strip() else None)


def _shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Shapes in reading order, groups opened."""
    for shape in shapes:
        if getattr(shape, "shape_type", None) == 6:  # MSO_SHAPE_TYPE.GROUP
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _pptx_text(frame: Any) -> str:
    lines = []
    for paragraph in frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if text:
            lines.append(("  " * paragraph.level) + "- " + text if paragraph.level else text)
    return "\n".join(lines)


# ---- Excel ----


def parse_xlsx(data: bytes, *, max_chars: int, zip_limits: ZipLimits) -> ParsedDocument:
    check_zip(data, zip_limits)
    import openpyxl
    from openpyxl.utils import get_column_letter
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        # read_only streams each sheet's XML instead of building every cell; data_only reads the
        # values a formula last computed, which is what a reader of the sheet sees.
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (InvalidFileException, KeyError, ValueError, zipfile.BadZipFile, TypeError, OSError) as exc:
        raise IngestError(f"this is a damaged Excel file that cannot be read ({exc})") from exc
    try:
        writer = _Writer(max_chars)
        budget = max_chars
        for sheet in workbook.worksheets:
            if not hasattr(sheet, "iter_rows"):
                continue  # a chart sheet
            # The dimension a file declares can claim 16,384 columns; rows are read as stored.
            sheet.reset_dimensions()
            rows: list[tuple[int, list[str]]] = []
            used = 0
            for row in sheet.iter_rows():
                cells = [cell_text(getattr(cell, "value", None)) for cell in row]
                while cells and not cells[-1]:
                    cells.pop()
                if not cells:
                    continue
                # Read-only rows pad gaps with EmptyCell, which has no row number; a stored cell has.
                number = next((c.row for c in row if getattr(c, "row", None)), None) or len(rows) + 1
                used += sum(len(cell) + 3 for cell in cells)
                if used > budget:
                    raise IngestError(too_much_text(max_chars))
                rows.append((number, cells))
            if not rows:
                continue
            budget -= used
            width = max(len(cells) for _, cells in rows)
            last_column = get_column_letter(width)
            writer.heading(1, f"Sheet {sheet.title}")
            for first, last, text in table_blocks([cells for _, cells in rows]):
                writer.heading(2, f"{sheet.title}!A{rows[first][0]}:{last_column}{rows[last][0]}")
                writer.block(text)
        title = workbook.properties.title or None
    except IngestError:
        raise
    except (KeyError, ValueError, zipfile.BadZipFile, AttributeError, TypeError) as exc:
        raise IngestError(f"this is a damaged Excel file that cannot be read ({exc})") from exc
    finally:
        workbook.close()
    return writer.document(DocumentKind.XLSX, title.strip() if title and title.strip() else None)
