"""The three backends: ``openai:MODEL``, ``litellm:PROVIDER/MODEL``, ``hf:PATH``.

Every client shares the same wrapper (:class:`BaseClient`): cache lookup, rate limit, retries with
backoff, usage and cost accounting. Backends only implement ``_call``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, Field

from agentgym.episode import Usage
from agentgym.llm.base import ChatRequest, ChatResponse, Choice, Message
from agentgym.llm.cache import LLMCache, cache_key
from agentgym.llm.engine import Dtype, EngineName
from agentgym.llm.ratelimit import RateLimiter
from agentgym.llm.retry import RetryPolicy, call_with_retries
from agentgym.llm.sampling import SamplingSpec
from agentgym.redact import remember_secret, scrub_exception
from agentgym.safetext import clean
from agentgym.textscan import remove_spans, tag_spans


class ClientOptions(BaseModel):
    """Options every backend understands (``--agent openai:gpt-4o?base_url=...&rpm=60``)."""

    base_url: str | None = None
    """OpenAI-compatible endpoint (vLLM, SGLang, Ollama, ``agentgym serve``)."""
    api_key: str | None = None
    """Defaults to the backend's own environment variable (``OPENAI_API_KEY``...). Prefer the
    environment: a key in a spec is masked wherever the spec is stored or shown, but it still
    passes through shell history and process lists."""
    api_key_env: str | None = None
    """Name of an environment variable holding the key (``?api_key_env=TOGETHER_API_KEY``)."""

    def key(self, default_env: str | None = None) -> str | None:
        """The API key: ``api_key``, else the variable ``api_key_env`` names, else ``default_env``."""
        if self.api_key:
            return self.api_key
        if self.api_key_env:
            if not os.environ.get(self.api_key_env):
                raise ValueError(f"api_key_env={self.api_key_env}: that variable is not set")
            return os.environ[self.api_key_env]
        return os.environ.get(default_env) if default_env else None

    timeout_s: float = 60.0
    rpm: float | None = None
    """Requests per minute for this client (all episodes of a run share it)."""
    tpm: float | None = None
    """Tokens per minute (prompt + completion, estimated before the call)."""
    cache: str | None = None
    """SQLite file for the LLM call cache; None disables it."""
    retry: RetryPolicy = RetryPolicy()
    max_batch_size: int = 32
    """``hf:`` only: largest generation batch."""
    engine: EngineName = "local"
    """``hf:`` only: generate with transformers (``local``) or vLLM (``vllm``, the vllm extra)."""
    dtype: Dtype | None = None
    """``hf:`` only: the engine's precision; None is the engine's default (``local``: float32,
    as the trainer computes; ``vllm``: float32 on a CPU, bfloat16 on a GPU). bfloat16 plays a
    Household turn about 1.7x faster on a CPU with avx512_bf16; its greedy choices can differ."""
    kv_cache_gb: float | None = Field(default=None, gt=0)
    """``hf:`` only: GiB for the engine's keys and values, running requests and prefix cache
    together (a request that does not fit waits); None: the engine's default budget."""


class BaseClient:
    """Cache → rate limit → retries → backend call, with counters for reports and tests."""

    backend = "base"

    def __init__(self, model: str, options: ClientOptions | None = None) -> None:
        self.model = model
        self.options = options or ClientOptions()
        self.limiter = RateLimiter(self.options.rpm, self.options.tpm)
        self.cache = LLMCache(self.options.cache) if self.options.cache else None
        self.calls = self.retries = 0
        self.secret: str | None = None
        """The key this client sends, masked in every error it raises (set by backends)."""

    def _know_secret(self, key: str | None) -> None:
        self.secret = key
        remember_secret(key)

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request`` from the cache, or from the backend with retries."""
        request = sendable(request.model_copy(update={"model": request.model or self.model}))
        key = cache_key(f"{self.backend}:{self.options.base_url or ''}", request)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit
        self.limiter.acquire(_estimate_tokens(request))
        start = time.perf_counter()
        try:
            response = call_with_retries(
                lambda: self._call(request), self.options.retry, on_retry=self._count_retry
            )
        except Exception as e:  # a provider's 401 may echo the key: it never leaves unmasked
            self._raise_scrubbed(e)
        self.calls += 1
        response = response.model_copy(update={"latency_s": time.perf_counter() - start})
        if self.cache is not None:
            self.cache.put(key, response)
        return response

    def _raise_scrubbed(self, exc: Exception) -> NoReturn:
        """Raise ``exc`` with this client's key masked (or a plain copy, when it cannot be)."""
        scrubbed = scrub_exception(exc, self.secret)
        if scrubbed is exc:
            raise exc
        raise scrubbed from None

    def _count_retry(self, exc: BaseException) -> None:
        self.retries += 1

    def _call(self, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError


class OpenAIClient(BaseClient):
    """The official OpenAI SDK (sync; ``acomplete`` uses ``AsyncOpenAI``), any ``base_url``."""

    backend = "openai"

    def __init__(self, model: str, options: ClientOptions | None = None) -> None:
        super().__init__(model, options)
        import openai

        key = self.options.key("OPENAI_API_KEY")
        self._know_secret(key)
        if not key and not self.options.base_url:
            raise ValueError(
                f"openai:{model} needs an API key: set OPENAI_API_KEY (or name another variable"
                " with ?api_key_env=NAME), or point it at a local server with"
                " ?base_url=http://HOST:PORT/v1"
            )
        kwargs: dict[str, Any] = {
            "base_url": self.options.base_url,
            "api_key": key or "EMPTY",
            "timeout": self.options.timeout_s,
            "max_retries": 0,  # our retry loop owns backoff, jitter and counting
        }
        self._sdk = openai.OpenAI(**kwargs)
        self._async_kwargs = kwargs

    def _call(self, request: ChatRequest) -> ChatResponse:
        raw = self._sdk.chat.completions.create(**_openai_params(request))
        return _from_openai(raw.model_dump(), request.model)

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        """Async face of the same call (no cache or rate limit: for simple async scripts)."""
        import openai

        request = sendable(request)
        try:
            async with openai.AsyncOpenAI(**self._async_kwargs) as sdk:
                raw = await sdk.chat.completions.create(**_openai_params(request))
        except Exception as e:
            self._raise_scrubbed(e)
        return _from_openai(raw.model_dump(), request.model)


class LiteLLMClient(BaseClient):
    """LiteLLM's 100+ providers, imported with its local cost map (no network at import)."""

    backend = "litellm"

    def __init__(self, model: str, options: ClientOptions | None = None) -> None:
        super().__init__(model, options)
        self._litellm = import_litellm()
        self._know_secret(self.options.key())

    def _call(self, request: ChatRequest) -> ChatResponse:
        raw = self._litellm.completion(
            **_openai_params(request),
            api_base=self.options.base_url,
            api_key=self.options.key(),  # None: LiteLLM reads the provider's own variable
            timeout=self.options.timeout_s,
            num_retries=0,
        )
        return _from_openai(raw.model_dump(), request.model)


class HFClient(BaseClient):
    """A local transformers checkpoint; concurrent callers share one batched engine."""

    backend = "hf"

    def __init__(self, model: str, options: ClientOptions | None = None) -> None:
        super().__init__(model, options)
        from agentgym.llm.engine import load_engine
        from agentgym.llm.models import KNOWN_MODELS, resolve_model_path

        path = resolve_model_path(model)
        if not any((Path(path) / f).is_file() for f in ("config.json", "adapter_config.json")):
            raise FileNotFoundError(  # a model checkpoint, or a LoRA adapter saved by training
                f"hf:{model}: no checkpoint directory there, with a config.json or an "
                "adapter_config.json (make one with `agentgym model init DIR`, or use a known "
                f"model: {', '.join(f'hf:{n}' for n in KNOWN_MODELS)})"
            )
        self.engine = load_engine(
            self.options.engine,
            path,
            self.options.max_batch_size,
            self.options.dtype,
            kv_cache_gb=self.options.kv_cache_gb,
        )
        self.max_context_tokens: int | None = self.engine.max_context_tokens
        """The model's context window: agents cut longer histories to fit it."""

    def count_tokens(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> int:
        """Prompt tokens of a chat, rendered exactly as a request would be."""
        return len(self.engine.render(messages, tools))

    def _call(self, request: ChatRequest) -> ChatResponse:
        prompt = self.engine.render(request.messages, request.tools)
        sampling = SamplingSpec(
            max_tokens=request.max_tokens,
            stop=tuple(request.stop or ()),
            temperature=request.temperature,
            top_p=1.0 if request.top_p is None else request.top_p,
        )
        futures = [
            self.engine.submit(
                prompt,
                sampling,
                seed=None if request.seed is None else request.seed + i,
            )
            for i in range(request.n)
        ]
        gens = [f.result() for f in futures]
        choices = [
            Choice(
                message=parse_tool_calls(g.text),
                finish_reason=g.finish_reason,
                token_ids=g.token_ids,
                logprobs=g.logprobs if request.logprobs else None,
            )
            for g in gens
        ]
        usage = Usage(
            prompt_tokens=len(prompt), completion_tokens=sum(len(g.token_ids) for g in gens)
        )
        return ChatResponse(choices=choices, usage=usage, model=request.model)


def sendable(request: ChatRequest) -> ChatRequest:
    """``request`` with text no UTF-8 encoder takes (a lone surrogate a model replied with, now in
    the history) as ``\\uXXXX`` escapes: the cache key, the SDK and the provider all encode it.
    The same object when nothing needed escaping, so ordinary requests keep their cache keys."""
    escaped: list[str] = []
    data = clean(request.model_dump(), "request", escaped)
    return ChatRequest.model_validate(data) if escaped else request


def parse_tool_calls(text: str) -> dict[str, Any]:
    """An assistant message from generated text; ``<tool_call>{json}</tool_call>`` become tool calls.

    Each closing tag pairs with the last opening tag before it (linear time, see
    ``agentgym.textscan``); a block whose body is not a JSON object with a ``name`` stays in the
    content."""
    calls, spans = [], []
    opening, closing = "<tool_call>", "</tool_call>"
    for outer, end in tag_spans(text, opening, closing):
        start = text.rfind(opening, outer, end - len(closing))
        body = text[start + len(opening) : end - len(closing)].strip()
        if not body.startswith("{"):
            continue
        try:
            call = json.loads(body)
            name, args = call["name"], call.get("arguments", {})
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            continue
        spans.append((start, end))
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": str(name), "arguments": json.dumps(args)},
            }
        )
    if not calls:
        return {"role": "assistant", "content": text}
    return {
        "role": "assistant",
        "content": remove_spans(text, spans).strip() or None,
        "tool_calls": calls,
    }


def import_litellm() -> Any:
    """Import litellm without the network: its cost map comes from the package, not the internet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True  # it prints a provider list on every unpriced model
    return litellm


def cost_of(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """US dollars from LiteLLM's (local) price table; 0 for models it does not price."""
    try:
        prompt_cost, completion_cost = import_litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # unknown or self-hosted model: no price, not an error
        return 0.0
    return float(prompt_cost + completion_cost)


def _openai_params(request: ChatRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "messages": request.messages,
        "temperature": request.temperature,
        "n": request.n,
    }
    optional = {
        "max_tokens": request.max_tokens,
        "top_p": request.top_p,
        "stop": request.stop,
        "tools": request.tools,
        "seed": request.seed,
        "logprobs": request.logprobs or None,
    }
    return params | {k: v for k, v in optional.items() if v is not None}


def _from_openai(raw: dict[str, Any], model: str) -> ChatResponse:
    """Our response from an OpenAI-format completion dict."""
    choices = []
    for c in raw.get("choices") or []:
        message = {k: v for k, v in (c.get("message") or {}).items() if v is not None}
        content = (c.get("logprobs") or {}).get("content") or []
        choices.append(
            Choice(
                message=message,
                finish_reason=c.get("finish_reason") or "stop",
                logprobs=[t["logprob"] for t in content] or None,
            )
        )
    if not choices:
        raise ValueError(f"the server answered without choices: {json.dumps(raw)[:200]}")
    u = raw.get("usage") or {}
    prompt, completion = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
    usage = Usage(
        prompt_tokens=prompt, completion_tokens=completion, cost=cost_of(model, prompt, completion)
    )
    return ChatResponse(choices=choices, usage=usage, model=raw.get("model") or model)


def _estimate_tokens(request: ChatRequest) -> int:
    """Rough prompt + completion tokens before the call (4 characters a token)."""
    chars = sum(len(str(m.get("content") or "")) for m in request.messages)
    return chars // 4 + (request.max_tokens or 0)
