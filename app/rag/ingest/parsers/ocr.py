"""Text from images, offline: scanned PDF pages that have no text layer, and .png/.jpg files.

RapidOCR (PaddleOCR's PP-OCRv4 models run by onnxruntime) ships its three ONNX models inside its
wheel, so nothing is downloaded at run time. It is an optional dependency (``pip install
ragchat[ocr]``): without it an image-only page fails as before, saying OCR is not installed.

Bounds: an image over ``MAX_PIXELS`` is refused before it is decoded (Pillow reads the size from
the header), and a large one is scaled down to ``MAX_SIDE`` pixels on its longer side before
recognition, so one page's work is bounded; the whole file's time is bounded by the parser
worker's timeout, which kills the process.
"""

from __future__ import annotations

import io
from functools import cache
from typing import Any

from app.errors import IngestError

# 60 megapixels: an A4 page scanned at 600 dpi is 35. Beyond, a "scan" is a decompression bomb.
MAX_PIXELS = 60_000_000
# The longer side recognition sees: PP-OCR's detector works at ~960 px; 2,000 keeps 10-point text
# of an A4 page legible (a 300-dpi scan is 3,508 px high).
MAX_SIDE = 2_000
OCR_MARK = "(OCR)"


def available() -> bool:
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


@cache
def _engine() -> Any:
    from rapidocr_onnxruntime import RapidOCR

    return RapidOCR()


def ocr_image(data: bytes) -> str:
    """The text in an encoded image (PNG, JPEG...), lines in reading order."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise IngestError(f"the image is {width:,} x {height:,} pixels; the limit is {MAX_PIXELS:,} pixels")
            rgb = image.convert("RGB")
            if max(width, height) > MAX_SIDE:
                rgb.thumbnail((MAX_SIDE, MAX_SIDE))
            return _recognise(rgb)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise IngestError(f"this image cannot be read ({exc})") from exc


def _recognise(image: Any) -> str:
    import numpy as np

    result, _ = _engine()(np.asarray(image))
    if not result:
        return ""
    # Each box: [[corners], text, score]. Lines are grouped by their top edge, then read left to right.
    boxes = sorted(result, key=lambda box: (box[0][0][1], box[0][0][0]))
    lines: list[list[tuple[float, str]]] = []
    last_top = None
    for corners, text, _score in boxes:
        top = corners[0][1]
        bottom = corners[2][1]
        if last_top is None or top - last_top > (bottom - top) / 2:
            lines.append([])
            last_top = top
        lines[-1].append((corners[0][0], text))
    return "\n".join(" ".join(text for _, text in sorted(line)) for line in lines)
