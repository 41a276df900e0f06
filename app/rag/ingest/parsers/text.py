"""Bytes to text: strict decoding, binary detection and newline normalisation.

Offsets everywhere else point into the normalised text, so normalisation happens exactly once,
here, and changes nothing but line endings and NUL characters.
"""

from __future__ import annotations

import codecs
import re

from app.errors import IngestError

# git's rule of thumb: a NUL byte near the start means binary.
_SNIFF_BYTES = 8192
# Valid UTF-8 can still be binary (e.g. a run of small integers); real text has few control characters.
_MAX_CONTROL_RATIO = 0.05
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]")
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def looks_like_text(head: bytes) -> bool:
    """Whether a file's first bytes read as text: a byte-order mark, or UTF-8 without NUL bytes and
    with few control characters (a character cut off at the end of ``head`` is fine)."""
    head = head[:_SNIFF_BYTES]
    if head.startswith(tuple(bom for bom, _ in _BOMS)):
        return True
    if not head.strip() or b"\x00" in head:
        return False
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return len(_CONTROL.findall(text)) <= _MAX_CONTROL_RATIO * max(len(text), 1)


def too_much_text(limit: int) -> str:
    """Why a file failed that yields more text than ``limit`` characters (the per-file limit)."""
    return f"the file has more than {limit:,} characters of text; the limit per file is {limit:,}"


def normalise(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``; NUL characters are dropped. Nothing else changes."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


def decode_text(data: bytes, *, fallback_encoding: str | None = None) -> str:
    """Decode a text file strictly and normalise it.

    UTF-8 is assumed; a byte-order mark selects UTF-8/16/32 instead. ``fallback_encoding`` is used only
    when the file itself declares it (an HTML ``<meta charset>``), never guessed: a silent latin-1
    fallback would turn any binary file into plausible-looking garbage.

    Raises :class:`IngestError` for an empty file, a binary file or bytes that are not valid text.
    """
    if not data.strip():
        raise IngestError("the file is empty")
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _checked(_decode(data[len(bom) :], encoding))
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise IngestError("this looks like a binary file (it contains NUL bytes), not text")
    try:
        text = _decode(data, "utf-8")
    except IngestError:
        if fallback_encoding is None:
            raise
        text = _decode(data, fallback_encoding)
    return _checked(text)


def _decode(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"this is not valid {exc.encoding} text (undecodable byte at offset {exc.start}); "
            "save it as UTF-8 and upload it again"
        ) from exc


def _checked(text: str) -> str:
    sample = text[: _SNIFF_BYTES * 4]
    if sample and len(_CONTROL.findall(sample)) > _MAX_CONTROL_RATIO * len(sample):
        raise IngestError("this looks like a binary file (mostly control characters), not text")
    text = normalise(text)
    if not text.strip():
        raise IngestError("the file has no text, only whitespace")
    return text
