"""Chat model clients (OpenAI, LiteLLM, local transformers) behind one small interface.

``make_client("openai:gpt-4o-mini")`` and friends return a :class:`ChatClient`; agents and user
simulators talk to every backend through ``complete(ChatRequest) -> ChatResponse``.
"""

from agentgym.llm.base import ChatClient, ChatRequest, ChatResponse, Choice

__all__ = ["ChatClient", "ChatRequest", "ChatResponse", "Choice"]
