"""Typed settings, read from the environment (prefix ``RAGCHAT_``) and an optional ``.env`` file.

Nested groups use ``__``: ``RAGCHAT_RAG__THRESHOLD=0.3``, ``RAGCHAT_OPENAI__API_KEY=...``.
Nothing is read at import time: build ``Settings()`` (or call :func:`load_settings`) where needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.errors import SettingsError

ENV_PREFIX = "RAGCHAT_"
ENV_NESTED = "__"

ProviderName = Literal["local", "openai", "ollama", "scripted", "fake"]


class RagDefaults(BaseModel):
    """RAG settings a new chat session gets when the client does not choose them."""

    enable_rag: bool = True
    top_k: int = Field(5, ge=1, le=50)
    # Cosine similarity in [0, 1]; calibrated on SciFact for the default embedder (docs/BENCHMARKS.md).
    # Calibrated on SciFact train with the default embedder: 0.37 keeps 95% of relevant documents
    # among the candidates and drops 55% of the others (docs/BENCHMARKS.md).
    threshold: float = Field(0.37, ge=0.0, le=1.0, allow_inf_nan=False)
    include_citations: bool = True
    mode: Literal["vector", "keyword", "hybrid"] = "hybrid"
    rrf_k: int = Field(60, ge=1, le=1000)
    vector_weight: float = Field(1.0, ge=0.0, le=10.0)
    keyword_weight: float = Field(1.0, ge=0.0, le=10.0)


class EmbedderSettings(BaseModel):
    provider: ProviderName = "local"
    model: str = "all-MiniLM-L6-v2-int8"
    # Only for providers whose models accept a dimension (OpenAI text-embedding-3-*).
    dimensions: int | None = Field(None, ge=1, le=8192)
    batch_size: int = Field(32, ge=1, le=1024)
    threads: int = Field(0, ge=0, le=256, description="0 lets the runtime choose")


class ChatModelSettings(BaseModel):
    provider: ProviderName = "local"
    model: str = "SmolLM2-135M-Instruct"
    threads: int = Field(0, ge=0, le=256, description="0 lets the runtime choose")
    context_window: int = Field(2048, ge=256, le=1_048_576)
    max_answer_tokens: int = Field(384, ge=16, le=32_768)
    temperature: float = Field(0.2, ge=0.0, le=2.0, allow_inf_nan=False)
    # End-to-end tests and UI demos: a JSON list of scripted answers enables the "scripted" provider.
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

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IngestSettings:
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must be below chunk_tokens ({self.chunk_tokens})")
        return self


class ChatSettings(BaseModel):
    max_message_chars: int = Field(8000, ge=1, le=1_000_000)
    history_turns: int = Field(10, ge=0, le=200)
    max_concurrent_generations: int = Field(3, ge=1, le=1000)
    idle_timeout: float = Field(30.0, gt=0, le=3600)
    total_timeout: float = Field(300.0, gt=0, le=86_400)


class ApiSettings(BaseModel):
    api_keys: list[SecretStr] = Field(default_factory=list)
    cors_origins: list[str] = Field(default_factory=list)
    max_query_depth: int = Field(12, ge=2, le=100)
    max_aliases: int = Field(30, ge=1, le=1000)
    max_tokens: int = Field(2000, ge=50, le=100_000)
    max_page_size: int = Field(100, ge=1, le=10_000)
    max_upload_bytes: int = Field(20 * 1024 * 1024, ge=1024, le=2 * 1024**3)


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
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    frontend_dir: Path | None = None

    rag: RagDefaults = Field(default_factory=RagDefaults)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    llm: ChatModelSettings = Field(default_factory=ChatModelSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)

    @field_validator("database_url")
    @classmethod
    def _sqlite_only(cls, value: str) -> str:
        if not value.startswith("sqlite:///"):
            raise ValueError("only sqlite:///PATH URLs are supported (the embedded store)")
        return value


def env_name(loc: tuple[int | str, ...]) -> str:
    """The environment variable that sets the field at ``loc`` (e.g. RAGCHAT_RAG__THRESHOLD)."""
    parts = [str(p) for p in loc if not isinstance(p, int)]
    return ENV_PREFIX + ENV_NESTED.join(p.upper() for p in parts)


def load_settings(**overrides: object) -> Settings:
    """Build settings, turning validation failures into one message naming each bad variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = [f"{env_name(err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise SettingsError("invalid settings:\n  " + "\n  ".join(problems)) from exc
