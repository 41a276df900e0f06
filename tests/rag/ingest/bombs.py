"""Small files that expand hugely when parsed: hand-built PDFs with zlib-compressed content streams."""

from __future__ import annotations

import zlib


def text_operators(chars: int, word: bytes = b"bomb ") -> bytes:
    """A content stream that draws about ``chars`` characters of text, ``word`` by ``word``."""
    return b"BT /F1 12 Tf 72 720 Td " + (b"(" + word + b") Tj ") * (chars // len(word)) + b"ET"


def pdf(streams: list[bytes], pages: list[int]) -> bytes:
    """A PDF whose page ``n`` draws ``streams[pages[n]]`` (pages may share a stream), each stream
    stored with FlateDecode."""
    objects: list[bytes] = []
    first_stream = 4 + len(pages)
    kids = " ".join(f"{4 + n} 0 R" for n in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for index in pages:
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {first_stream + index} 0 R >>".encode()
        )
    for stream in streams:
        packed = zlib.compress(stream, 9)
        objects.append(f"<< /Length {len(packed)} /Filter /FlateDecode >>\nstream\n".encode() + packed + b"\nendstream")
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
