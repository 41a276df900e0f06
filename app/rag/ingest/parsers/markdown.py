"""Markdown: the text is kept byte-for-byte, only its headings and code fences are located.

Headings follow CommonMark closely enough for citations: ATX (``# Title``, up to three spaces of
indent, optional closing hashes) and setext (a paragraph underlined with ``===`` or ``---``). Lines
inside fenced code blocks and a leading YAML front-matter block are never headings.
"""

from __future__ import annotations

import re

from app.rag.ingest.types import DocumentKind, Heading, ParsedDocument

# The optional closing hashes are removed in Python: as a lazy group before "[ \t]+#+[ \t]*$" they made
# the regex backtrack quadratically (a 200 KB line of alternating spaces and tabs took minutes).
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_FRONT_MATTER_END = re.compile(r"^(---|\.\.\.)[ \t]*$")
# Lines that cannot be the text of a setext heading (they start another block).
_NOT_PARAGRAPH = re.compile(r"^ {0,3}(?:[-*+>]|\d{1,9}[.)])(?:[ \t]|$)|^ {4}")
# Markup a reader does not see: HTML comments and anchors, heading attributes ("{#id}"), template
# shortcodes ("{% page ... %}"); links and images read as their text (a relative link quoted into an
# answer would lead out of the app).
_INVISIBLE = re.compile(r"<!--.*?-->|</?a\b[^>]*>|\{#[^}\s]*\}|\{%.*?%\}|\{\{.*?\}\}", re.S)
_LINK = re.compile(r"!?\[([^\]\n]*)\](?:\([^)\s]*(?:\s+\"[^\"]*\")?\)|\[[^\]\n]*\])")
# Emphasis and code marks around a heading's words ("## **Resources**", "## The `Result` type").
# Underscores stay: they are part of identifiers ("__init__") more often than emphasis in headings.
_MARKS = re.compile(r"\*{1,3}|`+")


def rendered(text: str) -> str:
    """``text`` as it reads rendered, whitespace collapsed: see ``_INVISIBLE`` and ``_LINK``. The
    stored text stays byte for byte (citations point into it); quotes and titles read this way."""
    return " ".join(_LINK.sub(r"\1", _INVISIBLE.sub("", text)).split())


def parse_markdown(text: str) -> ParsedDocument:
    """Locate headings in already-normalised Markdown; the first level-1 heading is the title."""
    headings = tuple(find_headings(text))
    title = next((h.title for h in headings if h.level == 1), None)
    return ParsedDocument(text=text, kind=DocumentKind.MARKDOWN, title=title, headings=headings)


def _lines(text: str) -> list[tuple[int, str]]:
    """``(offset, line)`` pairs, the line without its newline."""
    out: list[tuple[int, str]] = []
    offset = 0
    for line in text.split("\n"):
        out.append((offset, line))
        offset += len(line) + 1
    return out


def fence_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges ``[start, end)`` of fenced code blocks, fence lines included.

    An unclosed fence runs to the end of the text, as CommonMark renders it.
    """
    spans: list[tuple[int, int]] = []
    opener: tuple[int, str] | None = None  # (start offset, fence string)
    for offset, line in _lines(text):
        match = _FENCE.match(line)
        if opener is None:
            # A backtick fence's info string may not contain backticks (that would be inline code).
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                opener = (offset, match.group(1))
        elif match and _closes(match, opener[1]):
            spans.append((opener[0], min(offset + len(line), len(text))))
            opener = None
    if opener is not None:
        spans.append((opener[0], len(text)))
    return spans


def _closes(match: re.Match[str], fence: str) -> bool:
    """A closing fence repeats the opening character at least as often and has no info string."""
    marks = match.group(1)
    return marks[0] == fence[0] and len(marks) >= len(fence) and not match.group(2).strip()


def _front_matter_end(lines: list[tuple[int, str]]) -> int:
    """Index of the first line after a leading ``---`` YAML block, or 0 when there is none."""
    if not lines or lines[0][1].rstrip() != "---":
        return 0
    for index in range(1, len(lines)):
        if _FRONT_MATTER_END.match(lines[index][1]):
            return index + 1
    return 0


def _atx_title(rest: str) -> str:
    """An ATX heading's text without its closing sequence (hashes after a space or tab), as it reads."""
    title = rest.rstrip(" \t")
    unclosed = title.rstrip("#")
    if unclosed != title and unclosed[-1:] in (" ", "\t"):
        title = unclosed
    return _title(title)


def _title(text: str) -> str:
    """A heading as it reads rendered: no attributes, anchors, links or emphasis marks."""
    return " ".join(_MARKS.sub("", rendered(text)).split())


def find_headings(text: str) -> list[Heading]:
    """ATX and setext headings in document order, skipping fenced code and front matter."""
    lines = _lines(text)
    fences = fence_spans(text)
    fence_index = 0
    headings: list[Heading] = []
    paragraph: list[tuple[int, str]] = []  # the lines a setext underline would turn into a heading
    for offset, line in lines[_front_matter_end(lines) :]:
        while fence_index < len(fences) and fences[fence_index][1] <= offset:
            fence_index += 1
        if fence_index < len(fences) and fences[fence_index][0] <= offset:
            paragraph = []
            continue
        atx = _ATX.match(line)
        setext = _SETEXT.match(line)
        if atx:
            title = _atx_title(atx.group(2) or "")
            if title:
                headings.append(Heading(start=offset, level=len(atx.group(1)), title=title))
            paragraph = []
        elif setext:
            # Without a paragraph above, ``---`` is a thematic break: never heading text itself.
            if paragraph:
                title = _title(" ".join(part.strip() for _, part in paragraph))
                level = 1 if setext.group(1)[0] == "=" else 2
                headings.append(Heading(start=paragraph[0][0], level=level, title=title))
            paragraph = []
        elif not line.strip() or (not paragraph and _NOT_PARAGRAPH.match(line)):
            paragraph = []
        else:
            paragraph.append((offset, line))
    return headings
