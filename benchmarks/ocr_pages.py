"""OCR quality and cost on image-only PDF pages rendered from known text.

Pages of real prose (this repository's Apache-2.0 LICENSE, which nobody here wrote) are drawn with
Pillow in DejaVu Sans at 150 dpi on A4, saved as an image-only PDF (no text layer), and ingested
through the PDF parser, which reads them by OCR. Reported: character error rate (edit distance
over the reference's characters, whitespace runs collapsed) and parse time per page.

    python -m benchmarks.ocr_pages [--pages 6]
"""

from __future__ import annotations

import argparse
import io
import textwrap
import time
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from app.rag.ingest.parsers.pdf import parse_pdf

ROOT = Path(__file__).resolve().parent.parent
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
WIDTH, HEIGHT, MARGIN, SIZE, LEADING = 1240, 1754, 120, 24, 34  # A4 at 150 dpi, 11.5-point text


def pages_of_text(count: int) -> list[str]:
    words = " ".join(ROOT.joinpath("LICENSE").read_text().split())
    lines = textwrap.wrap(words, 78)
    per_page = (HEIGHT - 2 * MARGIN) // LEADING
    return ["\n".join(lines[i : i + per_page]) for i in range(0, per_page * count, per_page)]


def render_pdf(pages: list[str]) -> bytes:
    font = ImageFont.truetype(FONT, SIZE)
    images = []
    for text in pages:
        image = Image.new("L", (WIDTH, HEIGHT), 255)
        draw = ImageDraw.Draw(image)
        for row, line in enumerate(text.splitlines()):
            draw.text((MARGIN, MARGIN + row * LEADING), line, font=font, fill=0)
        images.append(image)
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", resolution=150, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def cer(reference: str, hypothesis: str, *, spaces: bool = True) -> float:
    joiner = " " if spaces else ""
    ref, hyp = joiner.join(reference.split()), joiner.join(hypothesis.split())
    previous = list(range(len(hyp) + 1))
    for i, a in enumerate(ref, start=1):
        current = [i]
        for j, b in enumerate(hyp, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1] / max(len(ref), 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=6)
    args = parser.parse_args()
    pages = pages_of_text(args.pages)
    data = render_pdf(pages)
    parse_pdf(render_pdf(pages[:1]), max_pages=10, max_chars_per_page=200_000, max_chars=5_000_000)  # warm
    started = time.perf_counter()
    doc = parse_pdf(data, max_pages=1_000, max_chars_per_page=200_000, max_chars=5_000_000)
    elapsed = time.perf_counter() - started
    starts = [*doc.page_starts, len(doc.text) + 2]
    pages = [page for page in pages if page.strip()]
    read = [doc.text[starts[i] : starts[i + 1]] for i in range(len(pages))]
    rates = [cer(ref, hyp) for ref, hyp in zip(pages, read, strict=True)]
    unspaced = [cer(ref, hyp, spaces=False) for ref, hyp in zip(pages, read, strict=True)]
    chars = sum(len(page) for page in pages)
    print(f"{len(pages)} pages, {chars:,} characters, {len(data):,} bytes of image-only PDF")
    print(f"OCR headings: {[h.title for h in doc.headings]}")
    overall = sum(r * len(p) for r, p in zip(rates, pages, strict=True)) / chars
    print(f"CER per page: {', '.join(f'{r:.2%}' for r in rates)}; all: {overall:.2%}")
    print(f"CER ignoring spaces: {sum(r * len(p) for r, p in zip(unspaced, pages, strict=True)) / chars:.2%}")
    print(f"parse time: {elapsed:.2f} s, {elapsed / len(pages):.2f} s per page")


if __name__ == "__main__":
    main()
