"""Word, PowerPoint and Excel files: structure kept (headings, tables with their header, slide
numbers and cell ranges as locations), and zip containers that unpack to too much refused before
any library reads them."""

from __future__ import annotations

import io
import multiprocessing
import zipfile
from pathlib import Path

import docx
import openpyxl
import pytest

from app.container import Container
from app.db.models import Chunk, Document
from app.errors import IngestError
from app.llm.tokenizers import MINILM_TOKENIZER, HFTokenizer
from app.rag.ingest.chunking import chunk
from app.rag.ingest.intake import inspect
from app.rag.ingest.parsers.office import ZipLimits
from app.rag.ingest.parsing import ParseLimits, parse
from app.rag.ingest.pipeline import Ingestor, IngestSummary, Source
from app.rag.ingest.types import DocumentKind
from app.services import projects
from tests.fakes import FakeEmbedder

MINILM = HFTokenizer(MINILM_TOKENIZER)
FIXTURES = Path(__file__).parent / "fixtures" / "office"


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _ingest(container: Container, *sources: tuple[str, bytes]) -> IngestSummary:
    pid = projects.create(container.store, "kb").id
    ingestor = Ingestor(container.store, FakeEmbedder(), container.settings.ingest)
    return ingestor.ingest(pid, [Source.from_bytes(name, data) for name, data in sources])


def test_a_word_table_becomes_a_markdown_table_with_its_header() -> None:
    doc = parse(_fixture("tbl-having-applied-style.docx"), "style.docx")
    assert doc.kind is DocumentKind.DOCX
    assert doc.text.startswith("| foobar | barfoo |\n|---|---|\n| foo | bar |\n")
    assert "| foo to you | and a hearty foo to you too sir! |" in doc.text


def test_a_merged_word_cell_is_kept_once() -> None:
    text = parse(_fixture("tbl-cell-access.docx"), "cells.docx").text
    assert "| 1 | 2 | 3 |\n|---|---|---|\n| 4 |  | 6 |" in text


def test_word_headings_are_headings() -> None:
    doc = parse(_fixture("par-known-paragraphs.docx"), "paragraphs.docx")
    assert [(h.level, h.title) for h in doc.headings] == [(1, "Heading Paragraph")]
    assert doc.text[doc.headings[0].start :].startswith("# Heading Paragraph\n\nNormal paragraph")


def test_each_slide_is_a_page_so_chunks_cite_the_slide() -> None:
    doc = parse(_fixture("txt-paragraph-spacing.pptx"), "spacing.pptx")
    assert doc.kind is DocumentKind.PPTX
    assert len(doc.page_starts) == 3
    for number, start in enumerate(doc.page_starts, start=1):
        assert doc.text[start:].startswith(f"# Slide {number}\n")
    chunks = chunk(doc, MINILM)
    where = {c.page for c in chunks if "space after of 6 pt" in c.text}
    assert where == {2}


def test_a_slide_table_keeps_its_header() -> None:
    text = parse(_fixture("tbl-cell.pptx"), "cells.pptx").text
    assert (
        "| having custom margins | vert anchor is inherited | vert anchor is top | vert anchor is bottom |\n|---|"
        in text
    )


def test_a_sheet_names_its_cell_range() -> None:
    doc = parse(_fixture("shp-embedded-xlsx.xlsx"), "numbers.xlsx")
    assert doc.kind is DocumentKind.XLSX
    assert [h.title for h in doc.headings] == ["Sheet Sheet1", "Sheet1!A2:A3"]
    assert "| 1 |\n|---|\n| 2 |\n| 3 |" in doc.text


def _long_docx_table(rows: int) -> bytes:
    document = docx.Document()
    document.add_heading("Price list", level=1)
    table = document.add_table(rows=rows + 1, cols=3)
    for column, title in enumerate(("Item", "Unit price", "Supplier")):
        table.cell(0, column).text = title
    for row in range(1, rows + 1):
        for column, value in enumerate((f"part {row}", f"{row * 3} EUR", f"supplier {row % 7}")):
            table.cell(row, column).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_every_chunk_of_a_long_table_carries_its_header() -> None:
    doc = parse(_long_docx_table(300), "prices.docx")
    chunks = chunk(doc, MINILM)
    with_rows = [c for c in chunks if "| part " in c.text]
    assert len(with_rows) > 5
    header = "| Item | Unit price | Supplier |\n|---|---|---|"
    assert all(header in c.text for c in with_rows)
    assert any("| part 217 | 651 EUR | supplier 0 |" in c.text for c in with_rows)


def test_a_long_sheet_is_cut_into_ranges_with_the_header_repeated() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Budget"
    sheet.append(["Line", "Amount"])
    for row in range(1, 201):
        sheet.append([f"line {row}", row * 10])
    buffer = io.BytesIO()
    workbook.save(buffer)
    doc = parse(buffer.getvalue(), "budget.xlsx")
    ranges = [h.title for h in doc.headings if h.level == 2]
    assert ranges[0].startswith("Budget!A2:B") and ranges[-1].endswith(":B201")
    assert doc.text.count("| Line | Amount |") == len(ranges) > 1


def test_a_zip_bomb_disguised_as_docx_is_refused_before_parsing() -> None:
    # 50 MB of zeros in 50 KB: refused for its ratio whatever it is called.
    bomb = _zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"\x00" * 50_000_000})
    assert len(bomb) < 100_000
    for name in ("report.docx", "deck.pptx", "sheet.xlsx"):
        with pytest.raises(IngestError, match=r"looks like a zip bomb: word/document.xml is compressed [\d,]+ to 1"):
            parse(bomb, name)


def test_a_container_over_the_size_or_member_limits_is_refused() -> None:
    limits = ParseLimits(zip=ZipLimits(max_member_bytes=1_000, max_total_bytes=1_500, max_members=5))
    text = bytes(range(256)) * 4  # 1,024 bytes that barely compress: no ratio to speak of
    with pytest.raises(IngestError, match=r"looks like a zip bomb: big\.xml unpacks to 1,024 bytes"):
        parse(_zip({"big.xml": text}), "a.docx", limits)
    with pytest.raises(IngestError, match="looks like a zip bomb: it unpacks to more than 1,500 bytes"):
        parse(_zip({"a.xml": text[:800], "b.xml": text[:800]}), "a.docx", limits)
    with pytest.raises(IngestError, match="looks like a zip bomb: 6 files inside; the limit is 5"):
        parse(_zip({f"{n}.xml": b"x" for n in range(6)}), "a.docx", limits)


def test_a_member_that_lies_about_its_size_is_damaged_not_read_past_its_word() -> None:
    # The central directory says 1,000 bytes; the member holds 5 MB. zipfile stops at the declared
    # size and its CRC check fails, so the lie costs no more than the declared size.
    real = _fixture("par-known-paragraphs.docx")
    with zipfile.ZipFile(io.BytesIO(real)) as source:
        members = {info.filename: source.read(info) for info in source.infolist()}
    members["word/document.xml"] = members["word/document.xml"] + b" " * 5_000_000
    data = bytearray(_zip(members))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("word/document.xml")
    central = data.rfind(b"PK\x01\x02", 0, len(data))
    while data[central + 46 : central + 46 + len(info.filename)] != info.filename.encode():
        central = data.rfind(b"PK\x01\x02", 0, central)
    data[central + 24 : central + 28] = (1_000).to_bytes(4, "little")  # uncompressed size
    with pytest.raises(IngestError, match="damaged Word file"):
        parse(bytes(data), "lying.docx")


def test_office_files_are_not_skipped_as_archives() -> None:
    assert inspect("report.docx", _fixture("par-known-paragraphs.docx")) is None
    assert inspect("sheet.xlsx", _fixture("shp-embedded-xlsx.xlsx")) is None


def test_the_intake_report_gives_each_office_file_its_outcome_and_a_bomb_leaves_nothing_behind(
    container: Container,
) -> None:
    bomb = _zip({"word/document.xml": b"\x00" * 20_000_000})
    summary = _ingest(
        container,
        ("style.docx", _fixture("tbl-having-applied-style.docx")),
        ("bomb.docx", bomb),
        ("spacing.pptx", _fixture("txt-paragraph-spacing.pptx")),
        ("numbers.xlsx", _fixture("shp-embedded-xlsx.xlsx")),
        ("empty.docx", _zip({"[Content_Types].xml": b"<Types/>"})),
    )
    outcomes = {f.name: (f.status, f.error) for f in summary.files}
    assert outcomes["style.docx"] == ("added", None)
    assert outcomes["spacing.pptx"] == ("added", None)
    assert outcomes["numbers.xlsx"] == ("added", None)
    status, error = outcomes["bomb.docx"]
    assert status == "failed" and error is not None and error.startswith("looks like a zip bomb"), error
    assert outcomes["empty.docx"][0] == "failed"
    with container.store.read() as db:
        failed = db.query(Document).filter_by(name="bomb.docx").one()
        assert db.query(Chunk).filter_by(document_id=failed.id).count() == 0
        slides = db.query(Document).filter_by(name="spacing.pptx").one()
        pages = {c.page for c in db.query(Chunk).filter_by(document_id=slides.id)}
    assert pages == {1, 2, 3}
    assert multiprocessing.active_children() == []


def test_a_sheet_that_starts_lower_down_names_the_rows_it_has() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Q1"
    sheet["B3"], sheet["C3"] = "Region", "Sales"
    sheet["B4"], sheet["C4"] = "North", 120
    sheet["B5"], sheet["C5"] = "South", 95
    buffer = io.BytesIO()
    workbook.save(buffer)
    doc = parse(buffer.getvalue(), "sales.xlsx")
    assert [h.title for h in doc.headings] == ["Sheet Q1", "Q1!A4:C5"]
    assert "|  | Region | Sales |\n|---|---|---|\n|  | North | 120 |\n|  | South | 95 |" in doc.text
