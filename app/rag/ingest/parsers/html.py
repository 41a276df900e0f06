"""HTML: the visible text of the page's main content, blocks as paragraphs, h1-h6 as headings.

Boilerplate (scripts, styles, navigation, forms, embedded media) is dropped. When the page marks its
content with ``<main>`` or ``<article>`` only that is read, and then ``<header>``/``<footer>`` inside
it are kept (an article's header usually holds its title); elsewhere they are page chrome.
"""

from __future__ import annotations

import codecs
import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from app.errors import IngestError
from app.rag.ingest.parsers.text import decode_text, too_much_text
from app.rag.ingest.types import DocumentKind, Heading, ParsedDocument

_ALWAYS_SKIP = frozenset(
    {"script", "style", "nav", "aside", "form", "noscript", "svg", "iframe", "template", "head", "object", "canvas"}
)
_CHROME = frozenset({"header", "footer"})
_PARAGRAPH = frozenset(
    {"p", "div", "section", "article", "main", "ul", "ol", "dl", "table", "blockquote", "pre", "figure", "hr"}
    | {"address", "details", "fieldset", "header", "footer", "h1", "h2", "h3", "h4", "h5", "h6"}
)
_LINE = frozenset({"li", "tr", "dt", "dd", "caption", "figcaption", "summary"})
_HEADING_LEVEL = {f"h{n}": n for n in range(1, 7)}
_SPACES = re.compile(r"\s+")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)


def parse_html(data: bytes, *, max_chars: int) -> ParsedDocument:
    """Extract visible text; raises :class:`IngestError` when the page has none, or more than
    ``max_chars`` characters of it."""
    tree = LexborHTMLParser(decode_text(data, fallback_encoding=_declared_charset(data)))
    title_node = tree.css_first("head > title")  # not an <svg><title> tooltip
    roots = _content_roots(tree)
    writer = _Writer(max_chars)
    for root in roots:
        writer.walk(root, _ALWAYS_SKIP if root.tag in ("main", "article") else _ALWAYS_SKIP | _CHROME)
        writer.pending_break = 2
    text, headings = writer.result()
    if not text:
        raise IngestError("the page has no visible text")
    title = _SPACES.sub(" ", title_node.text()).strip() if title_node is not None else ""
    if not title:
        title = next((h.title for h in headings if h.level == 1), "")
    return ParsedDocument(text=text, kind=DocumentKind.HTML, title=title or None, headings=tuple(headings))


def _declared_charset(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    try:
        return codecs.lookup(match.group(1).decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return None


def _content_roots(tree: LexborHTMLParser) -> list[LexborNode]:
    main = tree.css_first("main")
    if main is not None:
        return [main]
    articles = _outermost(tree.css("article"))
    if articles:
        return articles
    root = tree.body if tree.body is not None else tree.root
    return [root] if root is not None else []


def _outermost(articles: list[LexborNode]) -> list[LexborNode]:
    """The articles not inside another article. Each element's answer is remembered, so a page of
    many deeply nested articles costs one walk over its elements, not one per article."""
    in_article: dict[int, bool] = {}  # element -> it is an article or inside one
    outermost = []
    for article in articles:
        path: list[int] = []
        node, inside = article.parent, False
        while node is not None:
            if node.mem_id in in_article:
                inside = in_article[node.mem_id]
                break
            path.append(node.mem_id)
            if node.tag == "article":
                inside = True
                break
            node = node.parent
        in_article.update(dict.fromkeys(path, inside))
        in_article[article.mem_id] = True
        if not inside:
            outermost.append(article)
    return outermost


def _hidden(node: LexborNode) -> bool:
    attributes = node.attributes
    return "hidden" in attributes or attributes.get("aria-hidden") == "true"


class _Writer:
    """Accumulates text with collapsed whitespace, turning block boundaries into line breaks."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.parts: list[str] = []
        self.length = 0
        self.pending_break = 0  # 0: none, 1: newline, 2: blank line
        self.pending_space = False
        self.prefix = ""  # "- " before a list item's first text
        self.pre_depth = 0
        self.headings: list[Heading] = []
        self.open_heading: tuple[int, int] | None = None  # (level, offset of its text or -1)
        self.heading_parts: list[str] = []

    def walk(self, root: LexborNode, skip: frozenset[str]) -> None:
        # An explicit stack: real-world pages nest deeper than Python's recursion limit.
        stack: list[tuple[LexborNode | None, str]] = [(root, "")]
        while stack:
            node, closing = stack.pop()
            if node is None:
                self._close(closing)
                continue
            tag = node.tag or ""
            if tag == "-text":
                self._text(node.text(deep=False) or "")
            elif tag.startswith("-") or tag in skip or _hidden(node):
                continue
            else:
                self._open(tag)
                stack.append((None, tag))
                stack.extend((child, "") for child in reversed(list(node.iter(include_text=True))))

    def _open(self, tag: str) -> None:
        if tag in _PARAGRAPH:
            self.pending_break = 2
        elif tag in _LINE or tag == "br":
            self.pending_break = max(self.pending_break, 1)
        elif tag in ("td", "th") and self.parts and not self.pending_break:
            self._emit(" | ")
        if tag == "li":
            self.prefix = "- "
        if tag == "pre":
            self.pre_depth += 1
        if tag in _HEADING_LEVEL:
            self.open_heading = (_HEADING_LEVEL[tag], -1)

    def _close(self, tag: str) -> None:
        if tag in _PARAGRAPH:
            self.pending_break = 2
        elif tag in _LINE:
            self.pending_break = max(self.pending_break, 1)
        if tag == "pre":
            self.pre_depth -= 1
        if tag in _HEADING_LEVEL and self.open_heading is not None:
            level, start = self.open_heading
            title = _SPACES.sub(" ", "".join(self.heading_parts)).strip()
            if start >= 0 and title:
                self.headings.append(Heading(start=start, level=level, title=title))
            self.open_heading = None
            self.heading_parts = []

    def _text(self, raw: str) -> None:
        if self.pre_depth:
            if not raw.strip():
                # Whitespace between spans inside <pre> is content (line breaks, indentation).
                if self.parts and not self.pending_break:
                    self._emit(raw)
                return
            text = raw
        else:
            text = _SPACES.sub(" ", raw)
            self.pending_space = self.pending_space or text.startswith(" ")
            text = text.strip(" ")
            if not text:
                return
        if self.parts and self.pending_break:
            self._emit("\n" * self.pending_break)
        elif self.parts and self.pending_space:
            self._emit(" ")
        self.pending_break = 0
        self.pending_space = not self.pre_depth and raw[-1:].isspace()
        self._emit(self.prefix)
        self.prefix = ""
        if self.open_heading is not None and self.open_heading[1] < 0:
            self.open_heading = (self.open_heading[0], self.length)
        self._emit(text)

    def _emit(self, piece: str) -> None:
        self.parts.append(piece)
        self.length += len(piece)
        if self.length > self.max_chars:  # stop now: the rest of a huge page is not worth walking
            raise IngestError(too_much_text(self.max_chars))
        if self.open_heading is not None and self.open_heading[1] >= 0:
            self.heading_parts.append(piece)

    def result(self) -> tuple[str, list[Heading]]:
        text = "".join(self.parts)
        stripped = text.rstrip()
        return stripped, [h for h in self.headings if h.start < len(stripped)]
