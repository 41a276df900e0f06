"""Chat models behind :class:`app.llm.base.ChatModel`, and the registry that picks one.

- :class:`LocalChatModel`: a GGUF model in-process (llama-cpp-python), offline.
- :class:`OpenAIChatModel`: OpenAI or any OpenAI-compatible server.
- :class:`OllamaChatModel`: a model served by Ollama.
- :func:`chat_registry`: the built-in providers (and test ones) in :class:`app.llm.registry.ProviderRegistry`,
  which validates ``(provider, model)`` and shares one instance of each.
"""

from app.llm.chat.local import LocalChatModel, shipped_models
from app.llm.chat.ollama import OllamaChatModel
from app.llm.chat.openai import OpenAIChatModel
from app.llm.chat.registry import chat_registry

__all__ = [
    "LocalChatModel",
    "OllamaChatModel",
    "OpenAIChatModel",
    "chat_registry",
    "shipped_models",
]
