"""Ruled tables in a PDF's text layer become Markdown tables at their place in the page: header
first, repeated in each chunk of a long table, their words not also left in the running text; a
page without a table reads exactly as before."""

from __future__ import annotations

import io

from pypdf import PdfReader

from app.llm.tokenizers import MINILM_TOKENIZER, HFTokenizer
from app.rag.ingest.chunking import chunk
from app.rag.ingest.parsers.text import normalise
from app.rag.ingest.parsing import ParseLimits, parse
from tests.rag.ingest.bombs import pdf

ANIMALS = [
    ("Animal", "Habitat", "Diet"),
    ("Wombat", "Burrows", "Grasses"),
    ("Quokka", "Islands", "Leaves"),
    ("Platypus", "Rivers", "Shrimps"),
]
PROSE_ABOVE = ["Field notes from the survey.", "The table lists what each animal eats."]
PROSE_BELOW = ["Counts were taken at dawn."]
COLUMNS = (72.0, 200.0, 330.0, 460.0)
ROW = 18.0


def _text(x: float, y: float, line: str) -> str:
    escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /F1 10 Tf {x:g} {y:g} Td ({escaped}) Tj ET"


def _page(above: list[str], rows: list[tuple[str, ...]], below: list[str], extra: str = "") -> bytes:
    """A page: lines of text, a table ruled on every side of every cell, more lines of text."""
    ops, y = [], 740.0
    for line in above:
        ops.append(_text(72, y, line))
        y -= 14
    top = y - 10
    bottom = top - ROW * len(rows)
    for r in range(len(rows) + 1):
        ops.append(f"{COLUMNS[0]:g} {top - r * ROW:g} m {COLUMNS[-1]:g} {top - r * ROW:g} l S")
    for x in COLUMNS:
        ops.append(f"{x:g} {top:g} m {x:g} {bottom:g} l S")
    for r, row in enumerate(rows):
        for x, value in zip(COLUMNS, row, strict=False):
            ops.append(_text(x + 4, top - (r + 1) * ROW + 5, value))
    y = bottom - 24
    for line in below:
        ops.append(_text(72, y, line))
        y -= 14
    return ("\n".join(ops) + extra).encode("latin-1")


def _pypdf_text(data: bytes, page: int) -> str:
    return normalise(PdfReader(io.BytesIO(data)).pages[page].extract_text()).rstrip()


def test_a_ruled_table_reaches_the_chunk_as_a_markdown_table_with_its_header() -> None:
    doc = parse(pdf([_page(PROSE_ABOVE, ANIMALS, PROSE_BELOW)], [0]), "survey.pdf")
    table = (
        "| Animal | Habitat | Diet |\n|---|---|---|\n"
        "| Wombat | Burrows | Grasses |\n| Quokka | Islands | Leaves |\n| Platypus | Rivers | Shrimps |"
    )
    # At its place: after the text above it, before the text below it.
    assert doc.text == "\n\n".join(["\n".join(PROSE_ABOVE), table, "\n".join(PROSE_BELOW)])
    chunks = chunk(doc, HFTokenizer(MINILM_TOKENIZER))
    assert [c.page for c in chunks] == [1]
    assert table in chunks[0].text


def test_a_table_cells_words_are_in_the_table_and_not_also_in_the_running_text() -> None:
    doc = parse(pdf([_page(PROSE_ABOVE, ANIMALS, PROSE_BELOW)], [0]), "survey.pdf")
    for row in ANIMALS:
        for word in row:
            assert doc.text.count(word) == 1, word
            line = next(line for line in doc.text.splitlines() if word in line)
            assert line.startswith("| ") and line.endswith(" |"), line


def test_each_chunk_of_a_long_table_repeats_its_header() -> None:
    rows = [("Station", "Reading", "Unit")] + [(f"Gauge {n:02d}", f"{n * 7 % 97}.{n % 10}", "mm") for n in range(36)]
    doc = parse(pdf([_page(["Rainfall by gauge."], rows, ["End of readings."])], [0]), "rain.pdf")
    chunks = chunk(doc, HFTokenizer(MINILM_TOKENIZER))
    header = "| Station | Reading | Unit |\n|---|---|---|\n"
    with_rows = [c for c in chunks if "| Gauge " in c.text]
    assert len(with_rows) >= 2
    assert all(header in c.text for c in with_rows)
    assert "| Gauge 35 | " in with_rows[-1].text
    assert {c.page for c in chunks} == {1}


def test_a_page_without_a_table_reads_byte_for_byte_as_pypdf_reads_it() -> None:
    # A framed note (one column of boxes) and underlines are rules but no table: the page stays pypdf's text.
    framed = "\n".join(
        [
            _text(72, 740, "Chapter one"),
            "70 700 m 300 700 l S",
            _text(80, 685, "Note"),
            _text(80, 665, "Keep the starter warm."),
            "70 680 230 20 re S 70 660 230 20 re S",
            _text(72, 640, "Then bake the loaf (at 230 C)."),
            "70 630 m 300 630 l S",
        ]
    ).encode()
    data = pdf([framed, _page(PROSE_ABOVE, ANIMALS, PROSE_BELOW)], [0, 1])
    doc = parse(data, "bread.pdf")
    first = doc.text[: doc.page_starts[1] - 2]
    assert first == _pypdf_text(data, 0)
    assert first == "Chapter one\nNote\nKeep the starter warm.\nThen bake the loaf (at 230 C)."
    assert "| Animal | Habitat | Diet |" in doc.text[doc.page_starts[1] :]


def test_a_page_with_more_rules_than_the_limit_is_not_searched_for_tables() -> None:
    from app.rag.ingest.parsers import pdf_tables

    hatching = "\n" + "\n".join(
        f"{10 + n % 500 * 0.5:g} 20 m {10 + n % 500 * 0.5:g} 30 l S" for n in range(pdf_tables.MAX_EDGES_PER_PAGE + 1)
    )
    data = pdf([_page(PROSE_ABOVE, ANIMALS, PROSE_BELOW, extra=hatching)], [0])
    doc = parse(data, "hatched.pdf")
    assert doc.text == _pypdf_text(data, 0)
    assert "|---|" not in doc.text


def test_once_table_finding_has_read_its_characters_the_pages_keep_pypdf_text() -> None:
    # Two pages with a table each: a budget that holds the first page's characters and not the
    # second's finds the first page's table only.
    data = pdf([_page(PROSE_ABOVE, ANIMALS, PROSE_BELOW), _page(PROSE_ABOVE, ANIMALS, PROSE_BELOW)], [0, 1])
    page = len(_pypdf_text(data, 0))
    for budget, tables in [(0, 0), (page * 3 // 2, 1), (page * 3, 2)]:
        assert (
            parse(data, "survey.pdf", ParseLimits(table_chars=budget)).text.count("| Animal | Habitat | Diet |")
            == tables
        )
