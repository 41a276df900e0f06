"""OCR for pages without a text layer and for images: the text a scan shows is read, the page that
was read by OCR says so in its heading path (what citations, the trace and the chunk viewer show),
and images beyond the pixel limit are refused before they are decoded. Runs where the optional
``ocr`` extra is installed."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("rapidocr_onnxruntime")

from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfReader, PdfWriter

from app.container import Container
from app.db.models import Chunk, Document
from app.errors import IngestError
from app.rag.ingest.parsing import parse
from app.rag.ingest.pipeline import Ingestor, Source
from app.services import projects
from tests.fakes import FakeEmbedder
from tests.rag.ingest.bombs import pdf

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SCANNED_LINES = ("Invoice total 4250 EUR", "Payment due in March")


def _scan() -> Image.Image:
    image = Image.new("L", (1240, 600), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, 48)
    for row, line in enumerate(SCANNED_LINES):
        draw.text((100, 100 + row * 90), line, font=font, fill=0)
    return image


def _text_then_scanned_pdf() -> bytes:
    scanned = io.BytesIO()
    _scan().save(scanned, "PDF", resolution=150)
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(pdf([b"BT /F1 12 Tf 72 720 Td (A text layer page) Tj ET"], [0]))))
    writer.append(PdfReader(scanned))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_page_without_text_is_read_by_ocr_and_says_so() -> None:
    doc = parse(_text_then_scanned_pdf(), "mixed.pdf")
    assert [h.title for h in doc.headings] == ["Page 1", "Page 2 (OCR)"]
    first, second = doc.text[: doc.page_starts[1]], doc.text[doc.page_starts[1] :]
    assert "A text layer page" in first
    # PP-OCRv4 drops some spaces between English words (docs/BENCHMARKS.md): the words are there.
    assert "4250EUR" in second.replace(" ", "") and "Payment due in March" in second


def test_an_image_is_read_by_ocr_under_a_heading_that_says_so() -> None:
    png = io.BytesIO()
    _scan().save(png, "PNG")
    doc = parse(png.getvalue(), "scan.png")
    assert doc.text.startswith("# Image (OCR)\n\n")
    assert "Invoice total 4250 EUR" in doc.text


def test_an_image_over_the_pixel_limit_is_refused_before_it_is_decoded() -> None:
    png = io.BytesIO()
    Image.new("1", (8_000, 8_000), 1).save(png, "PNG")  # 64 megapixels in a few KB
    with pytest.raises(IngestError, match="8,000 x 8,000 pixels; the limit is 60,000,000"):
        parse(png.getvalue(), "huge.png")


def test_the_ocr_page_is_cited_as_its_page_with_ocr_in_its_heading_path(container: Container) -> None:
    pid = projects.create(container.store, "kb").id
    ingestor = Ingestor(container.store, FakeEmbedder(), container.settings.ingest)
    summary = ingestor.ingest(pid, [Source.from_bytes("mixed.pdf", _text_then_scanned_pdf())])
    assert [f.status for f in summary.files] == ["added"]
    with container.store.read() as db:
        doc = db.query(Document).filter_by(name="mixed.pdf").one()
        cited = {(c.page, c.heading_path) for c in db.query(Chunk).filter_by(document_id=doc.id)}
    assert cited == {(1, "Page 1"), (2, "Page 2 (OCR)")}
