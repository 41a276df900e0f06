"""Typed settings, read from the environment (prefix ``RAGCHAT_``) and an optional ``.env`` file.

Nested groups use ``__``: ``RAGCHAT_RAG__THRESHOLD=0.3``, ``RAGCHAT_OPENAI__API_KEY=...``.
Nothing is read at import time: build ``Settings()`` (or call :func:`load_settings`) where needed.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin
from urllib.parse import urlsplit

from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.errors import SettingsError
from app.rag.search.document_filter import DocumentFilter
from app.rag.search.retrieval_mode import RetrievalMode
from app.rag.session_settings import RagSettings

ENV_PREFIX = "RAGCHAT_"
ENV_NESTED = "__"
SECRET_NAME = re.compile(r"[a-z0-9_]{1,64}")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL (lower case, the default port left out), or None
    for anything else: what a secret's allowed origins are compared with."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname.rstrip(".")
    shown = "" if port is None or port == _DEFAULT_PORTS[parts.scheme.lower()] else f":{port}"
    return f"{parts.scheme.lower()}://{host.lower()}{shown}"


# The providers a production server offers. Test providers (a scripted chat model for browser tests
# and demos) exist only when RAGCHAT_TEST_PROVIDERS names the module that adds them (app/llm/registry.py).
ProviderName = Literal["local", "openai", "ollama"]


class RagDefaults(RagSettings):
    """The RAG settings a new chat session gets when the client does not choose them (RagSettings'
    fields, bounds and defaults: RAGCHAT_RAG__TOP_K, ...), and the server's own retrieval settings."""

    mode: RetrievalMode = RetrievalMode.HYBRID
    rrf_k: int = Field(60, ge=1, le=1000)
    vector_weight: float = Field(1.0, ge=0.0, le=10.0)
    keyword_weight: float = Field(1.0, ge=0.0, le=10.0)
    # Hybrid fusion: rrf (by rank, the weights above) or convex (by score: convex_alpha x cosine +
    # (1 - convex_alpha) x BM25, each min-max normalised over the candidates). docs/BENCHMARKS.md.
    fusion: Literal["rrf", "convex"] = "convex"
    convex_alpha: float = Field(0.75, ge=0.0, le=1.0, allow_inf_nan=False)
    # Convex fusion's document evidence (app/rag/search/evidence.py): a candidate gains document_coverage
    # x the idf-weighted share of the question's words that its document's candidates hold together
    # (0: off). docs/BENCHMARKS.md, "Document evidence".
    document_coverage: float = Field(0.2, ge=0.0, le=1.0, allow_inf_nan=False)
    # A message after earlier turns is first searched alone: when its best passage scores at least
    # this (cosine, the embedder's scale like the threshold), it stands on its own (a new topic)
    # and is searched without the earlier turns; below it, it is a follow-up and the history-aware
    # query is searched, unless the earlier turns outvote its own words (app/rag/search/conversation.py,
    # ``outvoted``). 1.0: always history-aware. Tuned with `ragchat bench conversations` and
    # the topic changes of `ragchat bench answers --dataset` (docs/BENCHMARKS.md, "Topic changes").
    standalone_score: float = Field(0.45, ge=0.0, le=1.0, allow_inf_nan=False)
    # A message that finds a passage alone but has a pronoun ("how can we use it in a monorepo?") is
    # still a follow-up when the earlier turns raise its best passage's score by at least this much:
    # a pronoun that points inside the message (a standalone question) gains little or loses. 1.0:
    # never. Tuned on the conversations and topic changes of `ragchat bench answers --dataset`.
    follow_up_gain: float = Field(0.05, ge=0.0, le=1.0, allow_inf_nan=False)

    @field_validator("document_filter", mode="before")
    @classmethod
    def _stored(cls, value: object) -> object:
        """RAGCHAT_RAG__DOCUMENT_FILTER, a JSON object such as ``{"tags_any": ["policy"], "path_prefix":
        "runbooks/"}``: every new session's filter unless its client picks one. Each bad part is named
        (the session settings' own checks), so a typo is refused at start-up, not searched forever."""
        return _default_filter(value)


_FILTER = TypeAdapter(DocumentFilter)
_FILTER_FIELDS = tuple(f.name for f in fields(DocumentFilter))


def _listed(message: str) -> str:
    return message.replace("valid tuple", "list")  # JSON has lists; the filter keeps them as tuples


def _default_filter(value: object) -> DocumentFilter | None:
    """The server's default document filter from the environment (JSON text, or the object
    pydantic-settings decoded from it); None when it is empty. A ValueError names each bad field."""
    if value is None or isinstance(value, DocumentFilter):
        return value.normalised() if value is not None else None
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError(f"must be a JSON object with some of the fields {', '.join(_FILTER_FIELDS)}")
    if unknown := sorted(set(value) - set(_FILTER_FIELDS)):
        raise ValueError(f"unknown field {', '.join(map(repr, unknown))} (known: {', '.join(_FILTER_FIELDS)})")
    try:
        parsed = _FILTER.validate_python(value)
    except ValidationError as exc:
        raise ValueError("; ".join(f"{err['loc'][0]}: {_listed(err['msg'])}" for err in exc.errors())) from None
    if problems := parsed.problems():
        raise ValueError("; ".join(f"{field}: {message}" for field, message in problems))
    return parsed.normalised()


class EmbedderSettings(BaseModel):
    provider: str = "local"  # a ProviderName, unless test providers are loaded (Settings checks)
    model: str = "all-MiniLM-L6-v2-int8"
    # Only for providers whose models accept a dimension (OpenAI text-embedding-3-*).
    dimensions: int | None = Field(None, ge=1, le=8192)
    batch_size: int = Field(32, ge=1, le=1024)
    threads: int = Field(0, ge=0, le=256, description="0 lets the runtime choose")
    # The local embedder's arithmetic: int8 (the shipped int8 weights multiplied as int8, ~2x the
    # chunks/s) or fp32 (the shipped graph, which casts them back to fp32); one vector space.
    # int8 is the default since SciFact's full train run held it within 0.005 nDCG@10 of fp32
    # (docs/BENCHMARKS.md, "int8 local embedder"). LocalEmbedder's own default stays fp32: the
    # benchmarks' cached synthetic vectors were made with it.
    precision: Literal["int8", "fp32"] = "int8"
    # Where the local embedder keeps its derived int8 graph; None: $XDG_CACHE_HOME/ragchat/models.
    cache_dir: Path | None = None


class ChatModelSettings(BaseModel):
    provider: str = "local"  # a ProviderName, unless test providers are loaded (Settings checks)
    model: str = "SmolLM2-135M-Instruct"
    threads: int = Field(0, ge=0, le=256, description="0 lets the runtime choose")
    context_window: int = Field(2048, ge=256, le=1_048_576)
    max_answer_tokens: int = Field(384, ge=16, le=32_768)
    temperature: float = Field(0.2, ge=0.0, le=2.0, allow_inf_nan=False)
    # Read by test providers only (tests/providers.py: a JSON list of the scripted model's answers).
    script: Path | None = None
    token_delay_ms: int = Field(0, ge=0, le=10_000)


class OpenAISettings(BaseModel):
    api_key: SecretStr | None = None
    base_url: str | None = None
    timeout: float = Field(60.0, gt=0, le=3600)


class OllamaSettings(BaseModel):
    host: str = "http://127.0.0.1:11434"
    timeout: float = Field(120.0, gt=0, le=3600)


class IngestSettings(BaseModel):
    # Chosen on SciFact with the default embedder (docs/BENCHMARKS.md); MiniLM reads 256 tokens.
    chunk_tokens: int = Field(200, ge=16, le=8192)
    overlap_tokens: int = Field(32, ge=0, le=4096)
    max_file_bytes: int = Field(50 * 1024 * 1024, ge=1, le=2 * 1024**3)
    # A chunk's length in characters, whatever its token count: text without spaces or with huge
    # runs of whitespace is few tokens but many characters, and every search result carries its text.
    max_chunk_chars: int = Field(4000, ge=384, le=1_000_000)
    # What one file may yield, and how long parsing it may take (a small file can expand hugely).
    max_pages: int = Field(2000, ge=1, le=1_000_000)
    max_chars_per_page: int = Field(200_000, ge=100, le=100_000_000)
    max_chars_per_file: int = Field(5_000_000, ge=100, le=1_000_000_000)
    parse_timeout: float = Field(30.0, gt=0, le=3600, allow_inf_nan=False)
    # Documents added by URL (app/net/fetch.py): loopback, private, link-local and other non-public
    # addresses are refused unless allowed here, wholesale or by network ("10.1.0.0/16", "::1/128").
    url_allow_private: bool = False
    url_allowed_networks: list[str] = Field(default_factory=list)
    url_max_bytes: int = Field(20 * 1024 * 1024, ge=1024, le=2 * 1024**3)
    url_timeout: float = Field(30.0, gt=0, le=3600, allow_inf_nan=False)
    url_max_redirects: int = Field(5, ge=0, le=20)

    @field_validator("url_allowed_networks")
    @classmethod
    def _networks(cls, networks: list[str]) -> list[str]:
        for network in networks:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError as exc:
                raise ValueError(f"{network!r} is not an IP network like 10.0.0.0/8 or fd00::/8: {exc}") from None
        return networks

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IngestSettings:
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must be below chunk_tokens ({self.chunk_tokens})")
        if self.max_chunk_chars < 4 * self.chunk_tokens:
            raise ValueError(
                f"max_chunk_chars ({self.max_chunk_chars}) must be at least 4 characters per token of "
                f"chunk_tokens ({self.chunk_tokens}), or ordinary prose would be cut by length"
            )
        return self


class OutboundSettings(BaseModel):
    """Requests this server sends to addresses its users choose (documents by URL, HTTP tools;
    app/net/outbound.py): how many may be open at once, and how long one waits for its turn before
    it is refused. Each is bounded by its own deadline (RAGCHAT_INGEST__URL_TIMEOUT, a tool's timeout)."""

    # Each open request may hold a body of up to its size limit in memory.
    max_concurrent: int = Field(8, ge=1, le=1000)
    wait_seconds: float = Field(5.0, ge=0, le=600, allow_inf_nan=False)


class RerankSettings(BaseModel):
    """The operator's rerank endpoint (a cross-encoder served over HTTP: Cohere, Jina, vLLM,
    llama.cpp's server speak ``cohere``; Hugging Face TEI speaks ``tei``), and the budget of the
    chat model when it judges instead (app/llm/rerankers/)."""

    url: str | None = None  # the endpoint itself, e.g. http://127.0.0.1:8080/v1/rerank; None: no endpoint
    model: str | None = None  # sent as "model" (cohere wire); TEI serves one model and ignores it
    api_key: SecretStr | None = None  # sent as a bearer token
    protocol: Literal["cohere", "tei"] = "cohere"
    timeout: float = Field(10.0, gt=0, le=600, allow_inf_nan=False)
    # Candidates a reranker sees per question: the fused ranking's first N.
    candidates: int = Field(20, ge=1, le=200)
    # Weight of the reranker's order against the fused order when blending (1: the reranker's alone).
    weight: float = Field(0.7, ge=0.0, le=1.0, allow_inf_nan=False)
    # The chat model as judge: passages it reads (each cut to judge_chars), its timeout.
    judge_candidates: int = Field(8, ge=1, le=50)
    judge_chars: int = Field(600, ge=50, le=8000)
    judge_timeout: float = Field(20.0, gt=0, le=600, allow_inf_nan=False)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value or None


class ExpansionSettings(BaseModel):
    """Multi-query expansion: the chat model proposes alternative phrasings of a question."""

    phrasings: int = Field(3, ge=1, le=5)  # at most this many alternatives are searched
    timeout: float = Field(15.0, gt=0, le=600, allow_inf_nan=False)
    # RRF weight of each alternative's ranking; the original question's rankings weigh 1.
    weight: float = Field(0.5, ge=0.0, le=1.0, allow_inf_nan=False)


class JobSettings(BaseModel):
    """Ingestion jobs (app/services/ingestion/jobs.py): the server's worker and what may wait for it."""

    # Files ingested at once by the server's worker; each one parses in its own process and embeds
    # off the event loop. 1 leaves the second core to chat on a 2-core machine.
    workers: int = Field(1, ge=1, le=64)
    # What may wait in one knowledge base's queue at once (queued or being ingested).
    max_queued_files: int = Field(2000, ge=1, le=1_000_000)
    max_queued_bytes: int = Field(2 * 1024**3, ge=1024, le=1024**4)
    # The same for all knowledge bases of the database together (every server sharing it).
    server_max_queued_files: int = Field(10_000, ge=1, le=10_000_000)
    server_max_queued_bytes: int = Field(10 * 1024**3, ge=1024, le=16 * 1024**4)
    # What the spool may hold: the queued files and the failed or cancelled ones kept for a retry.
    max_spool_bytes: int = Field(20 * 1024**3, ge=1024, le=16 * 1024**4)
    # How long a failed or cancelled upload's file is kept for a retry (seconds); then it is removed.
    spool_retention: float = Field(86_400.0, gt=0, le=366 * 86_400, allow_inf_nan=False)
    # Where uploads wait for the worker; by default "uploads" beside the database file.
    spool_dir: Path | None = None


class ChatSettings(BaseModel):
    max_message_chars: int = Field(8000, ge=1, le=1_000_000)
    history_turns: int = Field(10, ge=0, le=200)
    # Answers written at once per provider (app/services/chat/slots.py): this for a provider that
    # declares no cap of its own (the in-process model: 3 on 2 cores); remote providers declare theirs
    # (openai 32, ollama 4), and ``limits`` overrides either, by "provider" or "provider/model".
    max_concurrent_generations: int = Field(3, ge=1, le=1000)
    limits: dict[str, int] = Field(default_factory=dict)
    # How long a question waits in line for a slot before BusyError (0: refused at once).
    queue_timeout: float = Field(5.0, ge=0, le=600, allow_inf_nan=False)
    # The first token comes after the prompt is read (and, for the local model, after it loads): on a
    # busy 2-core machine a 1,000-token prompt takes SmolLM2 longer than a stalled stream's 30 s.
    first_token_timeout: float = Field(120.0, gt=0, le=3600)
    idle_timeout: float = Field(30.0, gt=0, le=3600)
    total_timeout: float = Field(300.0, gt=0, le=86_400)
    # How long a turn whose client's connection dropped keeps running for the client to re-attach
    # (graphql-ws retries after 1.3-4 s, then 2.3-5 s more); a client that stops cancels at once.
    reattach_grace: float = Field(10.0, ge=0, le=600, allow_inf_nan=False)
    # How long the chat model may take to rewrite a follow-up, or to judge a retrieval pass, before
    # the turn goes on without it (the history-aware query; the model-free verdict).
    rewrite_timeout: float = Field(10.0, gt=0, le=600, allow_inf_nan=False)
    # Streamed tokens that come sooner than this after the last one sent go out together as one
    # event (subscriptions and the OpenAI door): the per-event cost is the server's, paid per batch.
    # The first token never waits; 0 sends each token as the model writes it (docs/BENCHMARKS.md).
    stream_coalesce_ms: float = Field(40.0, ge=0, le=1000, allow_inf_nan=False)

    @field_validator("limits")
    @classmethod
    def _limits(cls, limits: dict[str, int]) -> dict[str, int]:
        for key, cap in limits.items():
            provider, _, model = key.partition("/")
            if not provider or (model == "" and "/" in key) or key != key.strip():
                raise ValueError(f'{key!r} is not "provider" or "provider/model"')
            if not 1 <= cap <= 1000:
                raise ValueError(f"{key}: {cap} is not a cap between 1 and 1000")
        return limits


class ToolSettings(BaseModel):
    """Tools a chat model may call: how many the selection offers, and the secrets HTTP
    tools' headers name (``RAGCHAT_TOOLS__SECRETS__CRM_TOKEN=...`` is the secret ``crm_token``)."""

    # The selection offers a message's top_k allowed tools by similarity (plus its groups' core
    # tools); recall@6 of that stage is in docs/BENCHMARKS.md (tool selection).
    top_k: int = Field(6, ge=1, le=100)
    # A ranked tool below this cosine similarity to the message is not offered; None: no minimum.
    min_score: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)
    secrets: dict[str, SecretStr] = Field(default_factory=dict)
    # Where each secret may be sent: the origins (scheme://host[:port]) of the tools whose headers may
    # carry it (RAGCHAT_TOOLS__SECRET_ORIGINS__CRM_TOKEN='["https://crm.example.com"]'). Every secret
    # needs its list: a secret bound to nowhere stops start-up rather than go to any host.
    secret_origins: dict[str, list[str]] = Field(default_factory=dict)
    # The secrets a knowledge base's tools (defined by its editors, not by the server's operators) may
    # name in their headers, still only to their origins above. None by default: an editor's tool
    # sends no credential of the server's unless an operator lends it here.
    knowledge_base_secrets: list[str] = Field(default_factory=list)
    # HTTP tools reach only public addresses unless the operator allows private ones (all of them,
    # or these networks): a model chooses the arguments, never where a call goes.
    allow_private: bool = False
    allowed_networks: list[str] = Field(default_factory=list)
    max_response_bytes: int = Field(1024 * 1024, ge=1024, le=64 * 1024 * 1024)  # an HTTP tool's answer
    # The tool loop of a chat turn (app/services/tools/loop.py LoopLimits).
    max_calls: int = Field(8, ge=1, le=50)  # tool calls per answer
    max_rounds: int = Field(4, ge=1, le=20)  # model replies that may call tools
    call_timeout: float = Field(20.0, gt=0, le=120, allow_inf_nan=False)  # seconds, a tool's own may be lower
    total_timeout: float = Field(90.0, gt=0, le=600, allow_inf_nan=False)  # seconds for all calls and rounds
    max_output_chars: int = Field(8000, ge=200, le=200_000)  # of one result, as the model reads it
    # How long a side-effecting call's preview may be approved (seconds); later it must be asked again.
    preview_expiry: float = Field(3600.0, gt=0, le=30 * 86_400, allow_inf_nan=False)

    @field_validator("allowed_networks")
    @classmethod
    def _tool_networks(cls, networks: list[str]) -> list[str]:
        return networks_of(networks)

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, secrets: dict[str, SecretStr]) -> dict[str, SecretStr]:
        # Environment names arrive lower-cased; a JSON value may not, so names are compared lower-case.
        lowered = {name.lower(): value for name, value in secrets.items()}
        if bad := [name for name in lowered if not SECRET_NAME.fullmatch(name)]:
            raise ValueError(f"secret names are letters, digits and underscores (at most 64): {bad}")
        return lowered

    @field_validator("knowledge_base_secrets")
    @classmethod
    def _lent_names(cls, names: list[str]) -> list[str]:
        return sorted({name.lower() for name in names})

    @field_validator("secret_origins")
    @classmethod
    def _origins(cls, origins: dict[str, list[str]]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, listed in origins.items():
            normal = [origin_of(origin) for origin in listed]
            bad = [o for o, n in zip(listed, normal, strict=True) if n is None or n != origin_of(n) or _has_path(o)]
            if bad or not listed:
                raise ValueError(
                    f"{name}: origins are scheme://host[:port] with nothing after, like https://crm.example.com; "
                    f"not {bad or listed}"
                )
            out[name.lower()] = sorted({n for n in normal if n is not None})
        return out

    @model_validator(mode="after")
    def _every_secret_bound(self) -> ToolSettings:
        if unbound := sorted(set(self.secrets) - set(self.secret_origins)):
            variables = ", ".join(f"RAGCHAT_TOOLS__SECRET_ORIGINS__{name.upper()}" for name in unbound)
            raise ValueError(
                f"secrets {unbound} may be sent nowhere yet: set {variables} to the origins their tools call, "
                """like '["https://crm.example.com"]' (a secret is only sent to the origins listed for it)"""
            )
        if unknown := sorted(set(self.secret_origins) - set(self.secrets)):
            raise ValueError(f"secret_origins names secrets that are not configured: {unknown}")
        if unknown := sorted(set(self.knowledge_base_secrets) - set(self.secrets)):
            raise ValueError(f"knowledge_base_secrets names secrets that are not configured: {unknown}")
        return self

    def may_send(self, secret: str, origin: str | None) -> bool:
        """Whether the secret named ``secret`` exists and may go to ``origin``."""
        return (
            origin is not None
            and secret.lower() in self.secrets
            and origin in self.secret_origins.get(secret.lower(), [])
        )


def networks_of(networks: list[str]) -> list[str]:
    """A list setting of addresses or CIDR networks, each checked (one bad entry names itself)."""
    for network in networks:
        try:
            ipaddress.ip_network(network.strip(), strict=False)
        except ValueError as exc:
            raise ValueError(f"not an address or network: {network!r} ({exc})") from None
    return [network.strip() for network in networks]


def _has_path(origin: str) -> bool:
    parts = urlsplit(origin.strip())
    return parts.path not in ("", "/") or bool(parts.query or parts.fragment or parts.username or parts.password)


LogLevel = Literal["debug", "info", "warning", "error"]


class LogSettings(BaseModel):
    """Where the log goes: stderr, at ``level``; ``json`` writes one object per line (app/logs.py)."""

    level: LogLevel = "info"
    format: Literal["text", "json"] = "text"


class PeopleSettings(BaseModel):
    """People who sign in (app/services/people/): browser sessions and sign-in limits."""

    # A browser session ends after this long unused, and after session_absolute_hours whatever happens.
    session_idle_minutes: int = Field(8 * 60, ge=5, le=30 * 24 * 60)
    session_absolute_hours: int = Field(7 * 24, ge=1, le=365 * 24)
    # Failed sign-ins allowed per account, and per client address, within sign_in_window_seconds.
    sign_in_attempts_per_account: int = Field(10, ge=1, le=10_000)
    sign_in_attempts_per_address: int = Field(50, ge=1, le=100_000)
    sign_in_window_seconds: int = Field(15 * 60, ge=1, le=24 * 3600)
    # The session cookie's Secure flag: "auto" sets it when the request came over https.
    cookie_secure: Literal["auto", "always", "never"] = "auto"
    # Behind an authenticating proxy (docs/SECURITY.md, "Single sign-on"): the request header that
    # names the signed-in person by email (X-Forwarded-Email), believed only when the connection
    # itself comes from one of trusted_proxies (addresses or networks; never X-Forwarded-For). Off
    # while either is empty.
    trusted_header: str | None = None
    trusted_proxies: list[str] = Field(default_factory=list)
    # Whether a person the proxy names who has no account here gets one (a member, in no knowledge base).
    trusted_header_creates_people: bool = True

    @field_validator("trusted_header")
    @classmethod
    def _header_name(cls, name: str | None) -> str | None:
        if name is not None and not re.fullmatch(r"[A-Za-z0-9-]{1,100}", name.strip()):
            raise ValueError(f"not an HTTP header name: {name!r}")
        return name.strip().lower() if name else None

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, networks: list[str]) -> list[str]:
        return networks_of(networks)


class OidcSettings(BaseModel):
    """Single sign-on with an OpenID Connect provider (app/services/people/oidc.py;
    docs/SECURITY.md, "Single sign-on"). Off while ``issuer`` is not set."""

    # The provider's issuer URL (https://accounts.example.com); its discovery document is read from
    # <issuer>/.well-known/openid-configuration and must name the same issuer.
    issuer: str | None = None
    client_id: str | None = None
    client_secret: SecretStr | None = None  # None: a public client (PKCE alone)
    scopes: list[str] = Field(default_factory=lambda: ["openid", "email", "profile"])
    # Where the provider sends the browser back; None: <this server's scheme and host>/auth/oidc/callback
    # as the request shows them (set it behind a proxy that changes either).
    redirect_url: str | None = None
    # Email domains that may sign in (example.org); empty: any. A domain check needs a verified email.
    allowed_domains: list[str] = Field(default_factory=list)
    # Members of any of these groups (the ID token's groups_claim) are administrators, others are not;
    # empty: single sign-on never changes who is an administrator.
    admin_groups: list[str] = Field(default_factory=list)
    groups_claim: str = "groups"
    # Whether a person with no account here gets one on their first sign-in (a member, in no
    # knowledge base); else only people who already exist (invited, or matched by verified email).
    create_people: bool = True
    # The wall-clock deadline of each request to the provider (discovery, keys, token exchange).
    timeout: float = Field(10.0, gt=0, le=120, allow_inf_nan=False)

    @field_validator("issuer", "redirect_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is not None and origin_of(url) is None:
            raise ValueError(f"not an http(s) URL: {url!r}")
        # Kept as written: an issuer is compared with the ID token's "iss" character for character.
        return url.strip() if url is not None else None

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, domains: list[str]) -> list[str]:
        return [domain.strip().lower().lstrip("@") for domain in domains if domain.strip()]

    @model_validator(mode="after")
    def _client_named(self) -> OidcSettings:
        if self.issuer is not None and not self.client_id:
            raise ValueError("RAGCHAT_OIDC__ISSUER is set but RAGCHAT_OIDC__CLIENT_ID is not")
        if self.issuer is not None and "openid" not in self.scopes:
            raise ValueError("RAGCHAT_OIDC__SCOPES must include openid")
        return self

    @property
    def enabled(self) -> bool:
        return self.issuer is not None


class ApiSettings(BaseModel):
    """The API's perimeter and limits (app/security.py says what each check guards against)."""

    api_keys: list[SecretStr] = Field(default_factory=list)
    # Keys that may also create, change and delete tools (what a chat model may call, and where its
    # secrets go): an operator's, separate from the keys that ask questions. With API keys and no
    # operator key, nobody manages tools through the API; with no key at all, everyone may.
    operator_keys: list[SecretStr] = Field(default_factory=list)
    # `ragchat serve` on an address other than loopback with no api_keys: refused unless this says
    # the open network is meant (a server behind its own authenticating proxy, a demo on a LAN).
    allow_open_network: bool = False
    # Origins (scheme://host[:port]) of a separately served frontend: CORS, and websockets from them.
    cors_origins: list[str] = Field(default_factory=list)
    # Host names the server answers to (ports ignored; "*" for any); any IP address is always
    # accepted, as DNS rebinding needs a name. None: localhost and Settings.host, or, bound to
    # 0.0.0.0 or ::, localhost and this machine's name (and <name>.local).
    allowed_hosts: list[str] | None = None
    max_operations_per_socket: int = Field(16, ge=1, le=10_000)
    # A streamed ChatToken's result built from its subscription's fields worked out once, not by
    # executing the selection set per event (app/graphql/token_events.py); the same bytes either way.
    preresolved_token_events: bool = True
    max_query_depth: int = Field(12, ge=2, le=100)
    max_aliases: int = Field(30, ge=1, le=1000)
    max_tokens: int = Field(2000, ge=50, le=100_000)
    max_page_size: int = Field(100, ge=1, le=10_000)
    # A connection under a list (each document's chunks in a page of documents) pages at most this.
    max_nested_page_size: int = Field(20, ge=1, le=10_000)
    # The objects an operation may return, estimated before it runs from its page sizes, nesting
    # and aliases (app/graphql/cost.py); above it the operation is refused.
    max_query_nodes: int = Field(10_000, ge=100, le=10_000_000)
    max_upload_bytes: int = Field(20 * 1024 * 1024, ge=1024, le=2 * 1024**3)
    # What an archive sent to importKnowledgeBase may expand to once decompressed (the archive itself is
    # an upload: at most max_upload_bytes). It is read into memory, so this bounds what one request can
    # make the server hold; larger archives are imported with `ragchat import-project`.
    max_import_bytes: int = Field(256 * 1024**2, ge=1024 * 1024, le=64 * 1024**3)

    def all_keys(self) -> list[str]:
        """Every key the perimeter accepts: the API keys and the operator keys."""
        return [k.get_secret_value() for k in [*self.api_keys, *self.operator_keys]]


class OpsSettings(BaseModel):
    """What operators watch and how the server stops (app/ops/, docs/OPERATIONS.md)."""

    # Addresses or networks whose requests may read /metrics without a key (JSON list, e.g.
    # ["10.0.0.0/8"]): a Prometheus server that holds no key. Judged by the connection's own peer.
    metrics_allow: list[str] = Field(default_factory=list)
    # Seconds a stopping server gives streaming answers to finish before it cancels them.
    shutdown_grace: float = Field(30.0, ge=0, le=3600)
    # An OTLP/HTTP collector's traces endpoint (e.g. http://127.0.0.1:4318/v1/traces): tracing is off without one.
    otlp_endpoint: str | None = None

    @field_validator("metrics_allow")
    @classmethod
    def _networks(cls, networks: list[str]) -> list[str]:
        return networks_of(networks)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED,
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
    )

    database_url: str = "sqlite:///./data/ragchat.db"
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    # Server processes `ragchat serve` runs on its port (app/serving.py): for remote chat providers,
    # whose streams need more CPU than one event loop has; each process loads its own local models.
    workers: int = Field(1, ge=1, le=64)
    # Deprecated spelling of RAGCHAT_LOG__LEVEL, still read when that is not set.
    log_level: LogLevel | None = None
    frontend_dir: Path | None = None
    # How often a server looks for servers sharing its database that stopped, to recover what they
    # left (an answer being written is marked failed, a file being ingested queued again).
    recovery_seconds: float = Field(5.0, gt=0, le=3600)
    # Development only: a module adding test providers (tests.providers; see app/llm/registry.py).
    test_providers: str | None = None

    rag: RagDefaults = Field(default_factory=RagDefaults)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    llm: ChatModelSettings = Field(default_factory=ChatModelSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    jobs: JobSettings = Field(default_factory=JobSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    expansion: ExpansionSettings = Field(default_factory=ExpansionSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    people: PeopleSettings = Field(default_factory=PeopleSettings)
    oidc: OidcSettings = Field(default_factory=OidcSettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    outbound: OutboundSettings = Field(default_factory=OutboundSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    ops: OpsSettings = Field(default_factory=OpsSettings)

    @field_validator("embedder", "llm")
    @classmethod
    def _production_provider(
        cls, section: EmbedderSettings | ChatModelSettings, info: ValidationInfo
    ) -> EmbedderSettings | ChatModelSettings:
        production = get_args(ProviderName)
        if section.provider not in production and info.data.get("test_providers") is None:
            variable = env_name((str(info.field_name), "provider"))
            raise ValueError(
                f"{variable}={section.provider!r} is not a provider; choose one of {', '.join(production)} "
                "(test providers load only with RAGCHAT_TEST_PROVIDERS, for development)"
            )
        return section

    @field_validator("chat")
    @classmethod
    def _limits_name_providers(cls, chat: ChatSettings, info: ValidationInfo) -> ChatSettings:
        # A misspelt provider would silently cap nothing.
        production = get_args(ProviderName)
        if info.data.get("test_providers") is None:
            for key in chat.limits:
                if key.partition("/")[0] not in production:
                    raise ValueError(
                        f"RAGCHAT_CHAT__LIMITS: {key!r} names no provider; choose one of {', '.join(production)}"
                    )
        return chat

    @model_validator(mode="after")
    def _legacy_log_level(self) -> Settings:
        if self.log_level is not None and "level" not in self.log.model_fields_set:
            self.log = self.log.model_copy(update={"level": self.log_level})
        return self

    @field_validator("database_url")
    @classmethod
    def _supported_database(cls, value: str) -> str:
        if not value.startswith(("sqlite:///", "postgresql+psycopg://")):
            raise ValueError("only sqlite:///PATH (the embedded store) and postgresql+psycopg://... URLs are supported")
        return value


def env_name(loc: tuple[int | str, ...]) -> str:
    """The environment variable that sets the field at ``loc`` (e.g. RAGCHAT_RAG__THRESHOLD)."""
    parts = [str(p) for p in loc if not isinstance(p, int)]
    return ENV_PREFIX + ENV_NESTED.join(p.upper() for p in parts)


# RAGCHAT_ variables that are not settings: set by `ragchat serve` for its workers
# (app/services/chat/shared_slots.py), or read by the project's other programs (examples/quickstart.sh,
# frontend/vite.config.ts, frontend/e2e/harness.mjs).
NOT_SETTINGS = frozenset({"RAGCHAT_WORKER_SLOTS", "RAGCHAT_URL", "RAGCHAT_BACKEND", "RAGCHAT_BIN"})


@dataclass(frozen=True)
class SettingVariables:
    """The variables that set something, derived from a settings model's fields: ``leaves`` set one
    value, ``groups`` a nested group whole (as JSON), and under each of ``open_prefixes`` any name
    is a key of a dict field (RAGCHAT_TOOLS__SECRETS__CRM_TOKEN)."""

    leaves: frozenset[str]
    groups: frozenset[str]
    open_prefixes: frozenset[str]

    @classmethod
    def of(cls, model: type[BaseModel], prefix: str = ENV_PREFIX) -> SettingVariables:
        leaves: set[str] = set()
        groups: set[str] = set()
        open_prefixes: set[str] = set()
        for field_name, field in model.model_fields.items():
            name = prefix + field_name.upper()
            annotation: Any = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                inner = cls.of(annotation, name + ENV_NESTED)
                leaves |= inner.leaves
                groups |= inner.groups | {name}
                open_prefixes |= inner.open_prefixes
            else:
                leaves.add(name)
                if get_origin(annotation) is dict:
                    open_prefixes.add(name + ENV_NESTED)
        return cls(frozenset(leaves), frozenset(groups), frozenset(open_prefixes))

    def sets_something(self, name: str) -> bool:
        return (
            name in self.leaves
            or name in self.groups
            or any(name.startswith(p) and len(name) > len(p) for p in self.open_prefixes)
        )

    def nearest(self, name: str) -> str | None:
        """The valid name nearest ``name``: a single setting if one is near, else a group."""
        for candidates in (self.leaves, self.groups):
            if near := difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6):
                return near[0]
        return None


def unknown_variables(names: Iterable[str]) -> list[str]:
    """Each RAGCHAT_ name in ``names`` that sets nothing, with the nearest valid name if one is near.
    A misspelt setting is otherwise ignored: RAGCHAT_API__KEYS left a server without keys."""
    valid = SettingVariables.of(Settings)
    problems = []
    for name in sorted(set(names)):
        upper = name.upper()  # pydantic-settings reads names in any case
        if not upper.startswith(ENV_PREFIX) or upper in NOT_SETTINGS or valid.sets_something(upper):
            continue
        near = valid.nearest(upper)
        problems.append(f"unknown setting {name}" + (f"; did you mean {near}?" if near else ""))
    return problems


def _check_variables(environ: Mapping[str, str], env_file: object) -> None:
    problems = unknown_variables(environ)
    if isinstance(env_file, str | Path) and Path(env_file).is_file():
        problems += [f"{p} (in {env_file})" for p in unknown_variables(dotenv_values(env_file).keys())]
    if problems:
        raise SettingsError("\n".join(problems))


def load_settings(**overrides: object) -> Settings:
    """Build settings, turning validation failures into one message naming each bad variable, and
    refusing RAGCHAT_ variables (in the environment or the .env file) that set nothing."""
    _check_variables(os.environ, overrides.get("_env_file", Settings.model_config.get("env_file")))
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = [f"{env_name(err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise SettingsError("invalid settings:\n  " + "\n  ".join(problems)) from exc
