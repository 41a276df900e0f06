"""The domain's enums as GraphQL enums, each registered as it is (``strawberry.enum`` keeps the
Python type), so a resolver passes a service's value through unchanged. GraphQL's names are the
members' names, in their order; descriptions are the API's own words, one for the enum and one
for each value (tests/graphql/test_descriptions.py checks that none is missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

import strawberry
from strawberry.types.enum import has_enum_definition

from app.errors import ErrorCode
from app.net.addresses import Refusal as UrlRefusal
from app.rag.answer.guard import Decision as GuardDecision
from app.rag.answer.mode import AnswerMode
from app.rag.ingest.intake import SkipReason
from app.rag.ingest.pipeline import FileStatus
from app.rag.ingest.types import DocumentKind
from app.rag.search.candidates import CandidateFate
from app.rag.search.conversation_settings import Quality, RewriteMode
from app.rag.search.degradation import DegradationReason
from app.rag.search.fusion import Fusion
from app.rag.search.ranking_modes import ExpansionMode, RerankMode
from app.rag.search.retrieval_mode import RetrievalMode
from app.rag.search.rewrite import RewriteOutcome
from app.rag.search.stages import Stage
from app.rag.search.widen import Decision as SearchDecision
from app.rag.search.widen import Judge as SearchJudge
from app.services.records import CitationKind, DocumentStatus, ItemState, JobOrigin, MessageStatus, Role


def expose(enum: type[Enum], description: str, values: Mapping[Enum, str], *, name: str | None = None) -> None:
    """Register ``enum`` with GraphQL under its own name (or ``name``), with a description for each of
    ``values`` (every member: a value without one is a mistake)."""
    missing = [member.name for member in enum if member not in values]
    if missing:
        raise ValueError(f"{enum.__name__}: no description for {', '.join(missing)}")
    strawberry.enum(enum, name=name, description=description)
    described = {member.name: text for member, text in values.items()}
    if has_enum_definition(enum):
        for value in enum.__strawberry_definition__.values:
            value.description = described[value.name]


expose(
    AnswerMode,
    "How a session's answers are written.",
    {
        AnswerMode.GENERATIVE: "The chat model writes the answer from the sources; the answer guard checks it.",
        AnswerMode.EXTRACTIVE: "No model: the sources' sentences that answer the question, quoted and each "
        "cited to its exact span. It can only say what the documents say.",
        AnswerMode.AUTO: "GENERATIVE when the session's chat model writes grounded answers reliably (its "
        "provider says so), else EXTRACTIVE. The trace's `answer.mode` says which ran.",
    },
)
expose(
    RerankMode,
    "Whether and how a session reranks the first candidates of each retrieval.",
    {
        RerankMode.OFF: "No reranking: the fused order.",
        RerankMode.AUTO: "The server's rerank endpoint when one is configured, else none.",
        RerankMode.ENDPOINT: "The server's rerank endpoint (a cross-encoder over HTTP); none when it has none.",
        RerankMode.JUDGE: "The session's chat model rates the first candidates (one extra model call per question).",
    },
)
expose(
    ExpansionMode,
    "Whether a session searches alternative phrasings of each question (multi-query expansion).",
    {
        ExpansionMode.OFF: "The question alone.",
        ExpansionMode.ON: "The session's chat model proposes alternative phrasings, searched beside the question "
        "(one extra model call per question).",
        ExpansionMode.AUTO: "ON when the session's chat model follows instructions reliably (its provider says "
        "so), else OFF.",
    },
)
expose(
    Quality,
    "How hard a chat turn searches: after each retrieval pass an evaluator judges the sources, and a "
    "pass that is not good enough is followed by a wider one while the budget allows.",
    {
        Quality.QUICK: "One retrieval pass.",
        Quality.BALANCED: "At most two passes.",
        Quality.THOROUGH: "At most four passes.",
    },
)
expose(
    RewriteMode,
    "Whether a follow-up is rewritten into a standalone search query by the session's chat model "
    "(the model-free history-aware query is searched otherwise, and whenever the rewrite fails).",
    {
        RewriteMode.OFF: "Never: the history-aware query is searched.",
        RewriteMode.ON: "Always, whatever the chat model declares.",
        RewriteMode.AUTO: "When the chat model declares it rewrites queries reliably (the shipped local "
        "models do not).",
    },
)
expose(
    RewriteOutcome,
    "What became of a follow-up's rewrite into a standalone query.",
    {
        RewriteOutcome.USED: "The chat model's rewrite was searched.",
        RewriteOutcome.FAILED: "The chat model failed or gave no usable question: the history-aware query was "
        "searched.",
        RewriteOutcome.TIMED_OUT: "No rewrite within RAGCHAT_CHAT__REWRITE_TIMEOUT: the history-aware query was "
        "searched.",
        RewriteOutcome.SKIPPED: "Not asked for: rewrite OFF, AUTO with a model that does not declare it, or a "
        "first message.",
    },
)
expose(
    SearchDecision,
    "What evaluate-and-widen did after a retrieval pass.",
    {
        SearchDecision.ADEQUATE: "The sources were judged good enough: the answer is written from them.",
        SearchDecision.WIDEN: "Not good enough: another, wider pass follows.",
        SearchDecision.BUDGET: "Not good enough, but the session's quality allows no more passes: the best pass "
        "is used.",
        SearchDecision.NO_IMPROVEMENT: "A wider pass found nothing better: the best pass is used.",
    },
    name="SearchDecision",
)
expose(
    SearchJudge,
    "Who judged a retrieval pass.",
    {
        SearchJudge.HEURISTIC: "A model-free heuristic: the best source's score and the share of the question's "
        "key terms the sources hold.",
        SearchJudge.MODEL: "The chat model (when it declares it judges retrieval reliably).",
    },
    name="SearchJudge",
)
expose(
    RetrievalMode,
    "How retrieval ranks a knowledge base's chunks.",
    {
        RetrievalMode.VECTOR: "By the cosine similarity of the chunk's embedding to the question's.",
        RetrievalMode.KEYWORD: "By the question's words (BM25 with SQLite FTS5's tokens, per knowledge base).",
        RetrievalMode.HYBRID: "Both rankings fused: by score (CONVEX, the default) or by rank (RRF).",
    },
)
expose(
    Fusion,
    "How a search fused its rankings (RAGCHAT_RAG__FUSION).",
    {
        Fusion.CONVEX: "By score: alpha x the cosine similarity + (1 - alpha) x the BM25 score, each min-max "
        "normalised over the candidates (the default for hybrid search).",
        Fusion.RRF: "By rank: the sum of weight / (k + rank) over the rankings; always used when several "
        "phrasings (expansion) or feedback rankings are fused.",
    },
)
expose(
    CandidateFate,
    "What became of a chunk retrieval considered, decided in this order.",
    {
        CandidateFate.KEPT: "Passed the threshold and within topK: a source of the answer.",
        CandidateFate.BELOW_THRESHOLD: "Its similarity score is below the threshold.",
        CandidateFate.BEYOND_TOP_K: "Passed the threshold, but topK better chunks were kept already.",
        CandidateFate.OVER_BUDGET: "Kept by retrieval, then cut to fit the chat model's context window.",
        CandidateFate.NEAR_DUPLICATE: "Nearly the same text as a better-ranked chunk: dropped before the cut "
        "to topK, so a different source takes its place.",
        CandidateFate.OVER_DOCUMENT_CAP: "Its document already gave as many sources as one document may.",
        CandidateFate.MERGED: "Kept, and merged into the adjacent chunk of its document ranked above it: "
        "the two are one source.",
    },
)
expose(
    GuardDecision,
    "What the answer guard decided about a generated answer.",
    {
        GuardDecision.PASS: "The answer passed every check.",
        GuardDecision.FLAGGED: "Kept, with a minor problem (an unsupported sentence, echoed text removed).",
        GuardDecision.FALLBACK: "The generated answer failed; the stored answer is the extractive one.",
        GuardDecision.REJECTED: "The generated answer failed and no extractive answer was possible: stored as failed.",
    },
    name="GuardDecision",
)
expose(
    DocumentStatus,
    "Whether a document can be searched.",
    {
        DocumentStatus.READY: "Parsed, chunked and embedded: searches find its chunks.",
        DocumentStatus.FAILED: "Its last ingestion failed (`error` says why); it has no chunks.",
    },
)
expose(
    DocumentKind,
    "Which parser read a document, from its file name (or, without an extension, its first bytes).",
    {
        DocumentKind.TEXT: "Plain text (.txt, .rst, .csv and the like); citations give line numbers.",
        DocumentKind.MARKDOWN: "Markdown; chunks carry the heading path they sit under.",
        DocumentKind.HTML: "HTML; the text is extracted, so locations point into the extracted text.",
        DocumentKind.PDF: "PDF; the text is extracted per page, and citations give the page.",
        DocumentKind.CODE: "Source code or configuration; headings are its definitions.",
        DocumentKind.DOCX: "Word (.docx); headings, lists and tables (as Markdown tables) are kept.",
        DocumentKind.PPTX: "PowerPoint (.pptx); one page per slide, so citations give the slide number.",
        DocumentKind.XLSX: "Excel (.xlsx); each sheet's rows as tables under headings naming the cell range.",
        DocumentKind.IMAGE: "An image (.png, .jpg) read by OCR; its heading says (OCR).",
        DocumentKind.UNKNOWN: "Not known: the document failed before a parser was chosen (an unsupported type).",
    },
)
expose(
    FileStatus,
    "What an upload did with one file.",
    {
        FileStatus.ADDED: "A new document (or one whose last ingestion had failed) was stored.",
        FileStatus.UNCHANGED: "The stored document has the same content: nothing was parsed, embedded or written.",
        FileStatus.UPDATED: "The stored document had other content: it was replaced, and only changed chunks "
        "were embedded again.",
        FileStatus.SKIPPED: "The file is not worth ingesting (compressed, binary, minified or generated): "
        "`skipReason` and `error` say why. Nothing was written; a stored document of that name stays as it is.",
        FileStatus.FAILED: "The file was not ingested; `error` says why. The other files of the upload go on.",
    },
)
expose(
    SkipReason,
    "Why a file was skipped rather than ingested.",
    {
        SkipReason.HIDDEN: "A dot-file, or inside a dot-folder.",
        SkipReason.EXCLUDED: "It matched an exclude pattern: --exclude, the folder's .ragchatignore, or a default "
        "one for build output (lock files, source maps, minified bundles, search indexes).",
        SkipReason.NOT_INCLUDED: "Include patterns were given and it matched none.",
        SkipReason.UNSUPPORTED: "A type no parser reads: images, fonts, archives, office documents, media.",
        SkipReason.COMPRESSED: "Compressed data (gzip, zip, xz...): nothing is unpacked.",
        SkipReason.BINARY: "Not text: NUL bytes, or bytes that are not UTF-8.",
        SkipReason.MINIFIED: "Machine-packed text: most of it on very long lines with almost no whitespace.",
        SkipReason.GENERATED: 'The file says it is generated (@generated, "DO NOT EDIT").',
        SkipReason.EMPTY: "Empty: no bytes, or only whitespace. Nothing to read, so nothing to retry.",
    },
)
expose(
    Stage,
    "A timed stage of a search or of a chat turn.",
    {
        Stage.RETRIEVAL_EMBED: "Embedding the question.",
        Stage.RETRIEVAL_VECTOR: "Nearest-neighbour search in the vector index.",
        Stage.RETRIEVAL_KEYWORD: "Keyword search (BM25 in the in-memory keyword index).",
        Stage.RETRIEVAL_SCORE: "Exact cosine similarity of every candidate, from its stored vector.",
        Stage.RETRIEVAL_LOAD: "Reading the candidates' text and location.",
        Stage.RETRIEVAL_FEEDBACK: "Pseudo-relevance feedback: searching again with the question moved towards "
        "its first results (vector and keywords).",
        Stage.RETRIEVAL_RANK: "Fusing the rankings and applying threshold and topK.",
        Stage.EXPANSION: "The chat model proposing alternative phrasings of the question (multi-query expansion).",
        Stage.RERANK: "A reranker scoring the first candidates (an HTTP rerank endpoint, or the chat model as judge).",
        Stage.REWRITE: "The chat model rewriting a follow-up into a standalone query (before retrieval).",
        Stage.EXTRACT: "Choosing the sentences to quote (extractive answers).",
        Stage.TOOL_SELECT: "Choosing the tools offered: the session's groups, similarity to the message, core tools.",
        Stage.TOOLS: "The tool loop: the model's replies and the calls it made, until it answered.",
        Stage.BUDGET: "Building the prompt to fit the model's context window (tokenizing).",
        Stage.FIRST_TOKEN: "From calling the chat model to its first token (included in GENERATE).",
        Stage.GENERATE: "From calling the chat model to its last token.",
        Stage.GUARD: "The answer guard's review of a generated answer.",
        Stage.CITATIONS: "Checking the answer's [n] markers, or attributing its sentences to sources.",
    },
)
expose(
    DegradationReason,
    "Why an answer or a search had less to work with than usual.",
    {
        DegradationReason.VECTOR_SEARCH_FAILED: "The vector index could not be searched: keyword search only "
        "(`effectiveMode` is KEYWORD).",
        DegradationReason.SCORES_UNAVAILABLE: "The stored vectors could not be read: scores are the vector "
        "index's, and chunks found by keyword alone have none (null) and skip the threshold.",
        DegradationReason.RETRIEVAL_FAILED: "Retrieval failed altogether (the embedder or the database): the "
        "answer was written without sources.",
        DegradationReason.RERANK_FAILED: "The reranker failed or timed out: the fused order was kept.",
        DegradationReason.EXPANSION_FAILED: "The chat model proposed no alternative phrasings (failed, timed out "
        "or said nothing usable): the question alone was searched.",
    },
)
expose(
    ErrorCode,
    "A stable error code a client can switch on.",
    {
        ErrorCode.INTERNAL: "A bug of the server's: logged with the request id the message gives.",
        ErrorCode.SETTINGS: "The server's configuration is invalid.",
        ErrorCode.NOT_FOUND: "The project, document, chat session or message does not exist (any more).",
        ErrorCode.VALIDATION: "The input was rejected.",
        ErrorCode.CONFLICT: "The request contradicts stored state (a duplicate name, mixed embedding spaces, "
        "a clientMessageId used for another question).",
        ErrorCode.FORBIDDEN: "The API key may not do this: managing tools needs an operator key "
        "(RAGCHAT_API__OPERATOR_KEYS).",
        ErrorCode.TOO_MANY_ATTEMPTS: "Too many failed sign-ins for this account or from this address: wait and "
        "try again.",
        ErrorCode.BUSY: "Too many answers are being generated: retry shortly.",
        ErrorCode.LIMIT_EXCEEDED: "An upload would put more files or bytes in the knowledge base's ingestion "
        "queue than the server allows (RAGCHAT_JOBS__MAX_QUEUED_FILES / __MAX_QUEUED_BYTES).",
        ErrorCode.INGEST: "A file could not be parsed or stored.",
        ErrorCode.STORAGE: "The database refused a write (disk full, read-only).",
        ErrorCode.FETCH: "A URL could not be fetched (cannot connect, timed out, an HTTP error status, too many "
        "redirects).",
        ErrorCode.URL_REFUSED: "The URL, or an address it resolves or redirects to, is one this server does not "
        "fetch from (not http/https, loopback, private, link-local...).",
        ErrorCode.TOO_LARGE: "The fetched document is larger than the limit (after decompression).",
        ErrorCode.UNSUPPORTED_TYPE: "The server sent a content type no parser reads.",
        ErrorCode.PROVIDER: "The embedder or chat model failed, or is not configured.",
        ErrorCode.PROVIDER_AUTH: "The provider refused the API key (missing or wrong).",
        ErrorCode.PROVIDER_RATE_LIMIT: "The provider is rate-limiting requests: retry later.",
        ErrorCode.PROVIDER_TIMEOUT: "The provider sent no answer, or no next token, within the timeout.",
        ErrorCode.PROVIDER_UNAVAILABLE: "The provider could not be reached, failed (5xx) or dropped the connection.",
        ErrorCode.MODEL_NOT_FOUND: "The provider does not know the model.",
        ErrorCode.UNUSABLE_ANSWER: "The answer guard refused the model's answer and there were no sources to "
        "quote instead; regenerating may help.",
        ErrorCode.CANCELLED: "The turn was cancelled (its client stopped or disconnected) and stored as failed.",
        ErrorCode.INTERRUPTED: "The server stopped before the answer was finished; it was stored as failed.",
        ErrorCode.FAILED: "The answer was stored as failed; `message` is its stored error.",
    },
)
expose(
    Role,
    "Who wrote a message.",
    {Role.USER: "The person asking.", Role.ASSISTANT: "ragchat: the answer."},
)
expose(
    MessageStatus,
    "Where a message is in its life.",
    {
        MessageStatus.COMPLETE: "Finished and stored with its citations and trace.",
        MessageStatus.STREAMING: "An answer being written now (subscribe to follow it).",
        MessageStatus.FAILED: "The answer failed; `error` says why and `content` keeps what had streamed.",
    },
)
expose(
    CitationKind,
    "How a citation came about.",
    {
        CitationKind.MODEL: "The model wrote the [n] marker.",
        CitationKind.ATTRIBUTED: "ragchat matched the sentence to the source.",
        CitationKind.EXTRACTED: "The sentence was quoted from the source (an extractive answer); "
        "`location` is its span.",
    },
)
expose(
    JobOrigin,
    "What started an ingestion job.",
    {
        JobOrigin.UPLOAD: "uploadDocuments.",
        JobOrigin.CLI: "`ragchat ingest`, in the foreground of its own process.",
        JobOrigin.URL: "A document fetched from an address.",
    },
)
expose(
    ItemState,
    "Where one file of an ingestion job is.",
    {
        ItemState.QUEUED: "Waiting for the worker (after a restart, unfinished files start again from here).",
        ItemState.PARSING: "Being read and split into chunks.",
        ItemState.EMBEDDING: "Its chunks being embedded: `chunksDone` of `chunksTotal`.",
        ItemState.READY: "Stored and searchable (`outcome` says added, updated or unchanged).",
        ItemState.FAILED: "Not ingested; `error` says why. retryIngestionJob tries it again.",
        ItemState.CANCELLED: "Cancelled before it was stored. retryIngestionJob queues it again.",
        ItemState.SKIPPED: "Deliberately not ingested; `error` says why.",
    },
)
expose(
    UrlRefusal,
    "Why a URL is not fetched (the SSRF guard); the operator can allow private addresses "
    "(RAGCHAT_INGEST__URL_ALLOW_PRIVATE, RAGCHAT_INGEST__URL_ALLOWED_NETWORKS).",
    {
        UrlRefusal.SCHEME: "Not an http or https URL.",
        UrlRefusal.MALFORMED: "Not a usable URL: no host, a user name or password in it, a bad port.",
        UrlRefusal.UNRESOLVABLE: "The host name has no address.",
        UrlRefusal.LOOPBACK: "A loopback address (127.0.0.0/8, ::1): this server itself.",
        UrlRefusal.PRIVATE: "A private network address (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7).",
        UrlRefusal.LINK_LOCAL: "A link-local address (169.254/16, where cloud metadata services answer; fe80::/10).",
        UrlRefusal.MULTICAST: "A multicast address.",
        UrlRefusal.UNSPECIFIED: "The unspecified address (0.0.0.0, ::).",
        UrlRefusal.RESERVED: "Another address outside the public internet (reserved, documentation, benchmarking).",
    },
    name="UrlRefusal",
)

__all__ = [
    "AnswerMode",
    "CandidateFate",
    "CitationKind",
    "DegradationReason",
    "DocumentKind",
    "DocumentStatus",
    "ErrorCode",
    "ExpansionMode",
    "FileStatus",
    "Fusion",
    "GuardDecision",
    "ItemState",
    "JobOrigin",
    "MessageStatus",
    "Quality",
    "RerankMode",
    "RetrievalMode",
    "RewriteMode",
    "RewriteOutcome",
    "Role",
    "SearchDecision",
    "SearchJudge",
    "SkipReason",
    "Stage",
    "UrlRefusal",
]
