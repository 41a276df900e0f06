"""PDF: text page by page with pypdf; pages joined by a blank line, each page's start recorded.
A page with a ruled table is written with the table as a Markdown table at its place (pdf_tables.py).

A small PDF can expand enormously (content streams are compressed, pages can share one stream),
so pages, characters per page and characters in all are bounded, and checked page by page: a file
over a limit fails as soon as that is known. The time a page may take is bounded by the caller
(parsing runs in a worker process that is killed when it takes too long).
"""

from __future__ import annotations

import io

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PyPdfError

from app.errors import IngestError
from app.rag.ingest.parsers import ocr
from app.rag.ingest.parsers.pdf_tables import TableFinder
from app.rag.ingest.parsers.text import normalise, too_much_text
from app.rag.ingest.types import DocumentKind, Heading, ParsedDocument

PAGE_SEPARATOR = "\n\n"


def parse_pdf(
    data: bytes,
    *,
    max_pages: int,
    max_chars_per_page: int,
    max_chars: int,
    find_tables: bool = True,
    table_chars: int = 150_000,
) -> ParsedDocument:
    """Extract each page's text, its tables as Markdown tables unless ``find_tables`` is false (the
    benchmark's baseline), on pages holding ``table_chars`` characters in all. Raises
    :class:`IngestError` for an empty, broken, password-protected or textless (scanned) PDF, and for
    one with more pages or text than the limits allow."""
    if not data.strip():
        raise IngestError("the file is empty")
    if b"%PDF-" not in data[:1024]:
        raise IngestError("this is not a PDF (it has no %PDF header)")
    try:
        reader = PdfReader(io.BytesIO(data))
        _unlock(reader)
        if len(reader.pages) > max_pages:
            raise IngestError(f"the PDF has {len(reader.pages):,} pages; the limit is {max_pages:,}")
        tables = TableFinder(data, len(reader.pages), table_chars) if find_tables else None
        try:
            pages, ocr_pages = _pages_text(reader, tables, max_chars_per_page, max_chars)
        finally:
            if tables is not None:
                tables.close()
        title = _title(reader)
    except IngestError:
        raise
    # pypdf raises its own errors for most damage, but plain ValueError/KeyError/... for some.
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise IngestError(f"this is a damaged PDF that cannot be read ({exc})") from exc
    if not any(page.strip() for page in pages):
        if ocr.available():
            raise IngestError("the PDF has no extractable text, and OCR found none in its images")
        raise IngestError("the PDF has no extractable text (a scanned PDF needs OCR: pip install ragchat[ocr])")
    page_starts = []
    offset = 0
    for page in pages:
        page_starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    # A page read by OCR is said so where a citation shows it: its heading path. Once one page is,
    # every page gets a heading, so a text-layer page does not sit under the OCR page's heading.
    headings = (
        tuple(
            Heading(start, 1, f"Page {number} {ocr.OCR_MARK}" if number in ocr_pages else f"Page {number}")
            for number, start in enumerate(page_starts, start=1)
        )
        if ocr_pages
        else ()
    )
    return ParsedDocument(
        text=PAGE_SEPARATOR.join(pages),
        kind=DocumentKind.PDF,
        title=title,
        headings=headings,
        page_starts=tuple(page_starts),
    )


def _pages_text(
    reader: PdfReader, tables: TableFinder | None, max_chars_per_page: int, max_chars: int
) -> tuple[list[str], set[int]]:
    """Each page's text, failing at the first page over a limit rather than after the last; a page
    with a table has it as a Markdown table; a page without a text layer is read by OCR from its
    images when OCR is installed (those pages' numbers are the second value)."""
    pages: list[str] = []
    ocr_pages: set[int] = set()
    total = 0
    for number, page in enumerate(reader.pages, start=1):
        text = _page_text(page.extract_text())
        if text.strip() and tables is not None:
            with_tables = tables.page_text(number - 1, page, len(text))
            if with_tables is not None:
                text = _page_text(with_tables)
        elif not text.strip() and ocr.available():
            text = _page_text("\n\n".join(ocr.ocr_image(image.data) for image in page.images))
            if text:
                ocr_pages.add(number)
        if len(text) > max_chars_per_page:
            raise IngestError(
                f"page {number} has {len(text):,} characters of text; the limit per page is {max_chars_per_page:,}"
            )
        total += len(text) + len(PAGE_SEPARATOR)
        if total > max_chars + len(PAGE_SEPARATOR):  # the separators between pages count, not after the last
            raise IngestError(too_much_text(max_chars))
        pages.append(text)
    return pages, ocr_pages


def _unlock(reader: PdfReader) -> None:
    if not reader.is_encrypted:
        return
    # Many PDFs are "encrypted" with an empty user password only to restrict printing or editing.
    try:
        unlocked = reader.decrypt("")
    except (DependencyError, FileNotDecryptedError, NotImplementedError) as exc:
        raise IngestError(f"this is an encrypted PDF that cannot be opened ({exc})") from exc
    if not unlocked:
        raise IngestError("the PDF is password-protected; upload an unprotected copy")


def _page_text(raw: str) -> str:
    # Trailing whitespace would only push the next page's start further away.
    return normalise(raw).rstrip()


def _title(reader: PdfReader) -> str | None:
    metadata = reader.metadata
    title = metadata.title if metadata is not None else None
    if not isinstance(title, str) or not title.strip():
        return None
    return title.strip()
