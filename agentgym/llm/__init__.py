"""Chat model clients (OpenAI, LiteLLM, local transformers) behind one small interface.

``make_client("openai:gpt-4o-mini")`` and friends return a :class:`ChatClient`; agents and user
simulators talk to every backend through ``complete(ChatRequest) -> ChatResponse``.
"""

from agentgym.llm.base import ChatClient, ChatRequest, ChatResponse, Choice
from agentgym.llm.clients import ClientOptions
from agentgym.llm.factory import make_client

__all__ = ["ChatClient", "ChatRequest", "ChatResponse", "Choice", "ClientOptions", "make_client"]
