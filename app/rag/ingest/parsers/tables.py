"""Tables as Markdown, for every parser that finds one (Word, PowerPoint, Excel, PDF).

A long table is cut into blocks of rows, each block a table of its own with the header row
repeated and a blank line between blocks: the chunker cuts at blank lines first, so a row cited
from the middle of a long table still comes with its header.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

# The characters of table text per block of rows (header included) before the next block starts
# with the header again. Table text is dense (~3 characters a MiniLM token): ~120 tokens, so at the
# default 200-token target a blank line between blocks always falls where the chunker may cut.
TABLE_BLOCK_CHARS = 360


def cell_text(value: object) -> str:
    """A cell's text on one line, its pipes escaped so they do not split the Markdown row."""
    text = "" if value is None else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def _row(cells: Sequence[str], width: int) -> str:
    padded = [*cells, *([""] * (width - len(cells)))]
    return "| " + " | ".join(padded) + " |"


def table_blocks(rows: Sequence[Sequence[str]]) -> Iterator[tuple[int, int, str]]:
    """Markdown tables of ``rows`` (the first is the header), ``(first, last, text)`` per block of
    body rows (0-based indexes into ``rows``), each block under the header again."""
    if not rows:
        return
    width = max(len(row) for row in rows)
    header = _row(rows[0], width) + "\n" + "|" + "---|" * width
    if len(rows) == 1:
        yield 0, 0, header
        return
    lines: list[str] = []
    first = 1
    size = len(header)
    for index in range(1, len(rows)):
        line = _row(rows[index], width)
        if lines and size + len(line) + 1 > TABLE_BLOCK_CHARS:
            yield first, index - 1, header + "\n" + "\n".join(lines)
            lines, first, size = [], index, len(header)
        lines.append(line)
        size += len(line) + 1
    yield first, len(rows) - 1, header + "\n" + "\n".join(lines)


def markdown_tables(rows: Sequence[Sequence[str]]) -> str:
    """``rows`` (the first is the header) as Markdown tables of a few rows each, blank-line separated."""
    return "\n\n".join(text for _, _, text in table_blocks(rows))
