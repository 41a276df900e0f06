"""The OpenAI-compatible door: /v1/models and /v1/chat/completions over ragchat's chat turns."""
