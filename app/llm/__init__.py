"""Model providers behind small Protocols: embedders and chat models (local, OpenAI, Ollama)."""
