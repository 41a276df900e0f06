"""Tables in a PDF's text layer, kept as Markdown tables at their place in the page.

pypdf reads a table row by row as loose words, so "doNotScroll ... 1<<23" loses the header that
says what 1<<23 is. pdfplumber's table finder builds cells from a table's ruling lines; a page on
which it finds a table is written from pdfplumber's characters instead: the text above the table,
the table (header repeated in each block of rows, parsers/tables.py), then what follows it. The
words inside a table's box are taken out of the running text, so they appear once. A page without
a table keeps pypdf's text exactly.

Only ruled tables are found (the "lines" strategy): whitespace-aligned columns are too often
ordinary text set in columns. Bounds, besides the worker's time limit and the page's character
limit: a page with more ruling lines than :data:`MAX_EDGES_PER_PAGE` is not searched (finding
cells compares every horizontal line with every vertical one), and tables with more cells in all
than :data:`MAX_CELLS_PER_PAGE` leave the page's text as pypdf reads it. pdfplumber reads a page
~10x slower than pypdf, so table finding has a budget per file, counted in the characters of the
pages given to it (pypdf's count, known before pdfplumber runs): past it, the remaining pages keep
pypdf's text rather than the whole file failing the parse timeout it passed without tables. A
budget of characters rather than seconds, so that the same file always parses to the same text,
however loaded the machine.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Sequence
from typing import Any

from app.rag.ingest.parsers.tables import cell_text, markdown_tables

MAX_EDGES_PER_PAGE = 2_000
# Path operators that draw a table's rules: a rectangle, a line segment. A grid of two rows and two
# columns takes at least three (a frame and a rule each way); a form XObject ("Do") may hold more.
_RULES = re.compile(rb"(?<![^\s\])>])(?:re|l)(?=[\s/\[(<%]|\Z)")
_XOBJECT = re.compile(rb"(?<![^\s\])>])Do(?=[\s/\[(<%]|\Z)")
MAX_CELLS_PER_PAGE = 5_000
_DAMAGE = (
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    AssertionError,
    ZeroDivisionError,
    RecursionError,
)


class TableFinder:
    """One PDF opened by pdfplumber on first use; :meth:`page_text` per page, by 0-based index."""

    def __init__(self, data: bytes, page_count: int, max_chars: int) -> None:
        self._data = data
        self._page_count = page_count
        self._left = max_chars
        self._pdf: Any = None
        self._broken = False

    def page_text(self, index: int, page: Any, chars: int) -> str | None:
        """The text of page ``index`` (pypdf's ``page``, ``chars`` long as pypdf reads it) with its
        tables as Markdown tables, or None when it has no table or the file's budget is spent (or
        pdfplumber cannot read it: the caller keeps pypdf's text, the file does not fail)."""
        from pdfplumber.utils.exceptions import MalformedPDFException, PdfminerException

        # pdfplumber reads a page ~10x slower than pypdf: a page that draws too few rules for a
        # table is not given to it. pypdf has decoded the page's content stream already.
        if chars > self._left or not _may_have_rules(page):
            return None
        self._left -= chars
        try:
            pdf = self._open()
            if pdf is None:
                return None
            plumbed = pdf.pages[index]
            try:
                return _page_text(plumbed)
            finally:
                plumbed.close()  # its parsed objects would otherwise stay cached until the end
        # pdfplumber wraps pdfminer's own errors; damage it meets on its own way raises plain ones.
        except (PdfminerException, MalformedPDFException, *_DAMAGE):
            self._broken = True
            return None

    def _open(self) -> Any:
        if self._broken:
            return None
        if self._pdf is None:
            import pdfplumber

            self._pdf = pdfplumber.open(io.BytesIO(self._data))
            # Page numbers must mean the same pages as pypdf's; two readers of a damaged page tree may differ.
            if len(self._pdf.pages) != self._page_count:
                self._broken = True
                return None
        return self._pdf

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None


def _may_have_rules(page: Any) -> bool:
    contents = page.get_contents()
    if contents is None:
        return False
    stream = contents.get_data()
    return _XOBJECT.search(stream) is not None or len(list(itertools.islice(_RULES.finditer(stream), 3))) == 3


def _page_text(page: Any) -> str | None:
    if not page.chars or not 0 < len(page.edges) <= MAX_EDGES_PER_PAGE:
        return None
    tables: list[tuple[tuple[float, float, float, float], list[str], list[list[str]]]] = []
    cells = 0
    for table in page.find_tables():
        caption, rows = _rows(table.extract())
        if rows:
            tables.append((table.bbox, caption, rows))
            cells += len(rows) * len(rows[0])
    if not tables or cells > MAX_CELLS_PER_PAGE:
        return None
    tables.sort(key=lambda found: found[0][1])
    # Each character outside every table goes with the stretch of page above the first table whose
    # top is below its middle: text beside a table follows it.
    stretches: list[list[dict[str, Any]]] = [[] for _ in range(len(tables) + 1)]
    for char in page.chars:
        x, y = (char["x0"] + char["x1"]) / 2, (char["top"] + char["bottom"]) / 2
        if any(x0 <= x <= x1 and top <= y <= bottom for (x0, top, x1, bottom), _, _ in tables):
            continue
        stretches[sum(1 for (_, top, _, _), _, _ in tables if top <= y)].append(char)
    from pdfplumber.utils import extract_text

    parts = [extract_text(stretches[0])]
    for (_, caption, rows), after in zip(tables, stretches[1:], strict=True):
        parts.extend([*caption, markdown_tables(rows), extract_text(after)])
    return "\n\n".join(part.strip("\n") for part in parts if part.strip())


def _rows(raw: Sequence[Sequence[str | None]]) -> tuple[list[str], list[list[str]]]:
    """A found table's rows (the first its header) without empty rows and columns, and its caption:
    leading rows with one cell of text across a wider table ("Field Flag Tokens and values").
    No rows when what is left is not a table: one row or one column is a box drawn round text."""
    rows = [[cell_text(value) for value in row] for row in raw]
    rows = [row for row in rows if any(row)]
    width = max((len(row) for row in rows), default=0)
    used = [column for column in range(width) if any(column < len(row) and row[column] for row in rows)]
    rows = [[row[column] if column < len(row) else "" for column in used] for row in rows]
    caption: list[str] = []
    while len(used) > 1 and len(rows) > 2 and sum(1 for value in rows[0] if value) == 1:
        caption.append(next(value for value in rows[0] if value))
        rows = rows[1:]
    if len(rows) < 2 or len(used) < 2:
        return [], []
    return caption, rows
