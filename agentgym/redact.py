"""Secrets out of specs before they are stored or shown: ``openai:m?api_key=sk-...`` → ``api_key=***``.

An agent spec may carry a key (``?api_key=``), a URL may carry a password (``http://u:pw@host``).
The store records specs in ``runs.name``, ``runs.agent`` and ``runs.config``, and the report, the
export and the viewer show them, so every one of those goes through :func:`redact` first (readers
redact too, for stores written before this). Keys are best kept in the environment
(``OPENAI_API_KEY``, or any variable named by ``?api_key_env=``).

A client also knows its key as a value, wherever it came from: it masks that exact value in the
errors it raises (:func:`scrub_exception`; a provider's 401 may echo the key), and registers it
(:func:`remember_secret`) so that :func:`redact_text` masks it in anything else this process
stores or shows.
"""

from __future__ import annotations

import re
import threading
import traceback
from typing import Any
from urllib.parse import unquote_plus

MASK = "***"
SECRET_NAME = re.compile(
    r"(api[_-]?key|apikey|key|token|secret|password|passwd|pwd|auth|authorization|credentials?)"
    r"$|^(access|auth|bearer|id|refresh|session)[_-]?token$|_key$|_secret$|_token$",
    re.IGNORECASE,
)
"""Option names whose values are secrets (``api_key``, ``token``, ``hf_token``, ``aws_secret``...)."""
_USERINFO = re.compile(r"(?<=://)([^/@:\s]*):([^/@\s]*)@")
_KEY_LIKE = re.compile(r"\b(sk|pk|rk|hf|gsk|xai|ghp|github_pat)[-_][A-Za-z0-9_\-]{12,}")
"""Tokens shaped like provider keys (OpenAI ``sk-``, Hugging Face ``hf_``, GitHub ``ghp_``...)."""
_OPTION_NAME = re.compile(r"(?<=[?&;])([^=&;?#\s]+)=")
"""``name=`` after ``?``, ``&`` or ``;``; its value runs to the next ``&``, as ``parse_qsl`` reads
it (the client takes ``api_key=sekret;TAIL#x y`` whole, so the mask covers it whole)."""


MIN_REMEMBERED = 8
"""Shortest value :func:`remember_secret` keeps: masking a 3-letter word in every stored error
would garble them (a client still masks its own key, whatever its length, in its own errors)."""
PLACEHOLDER_KEYS = frozenset({"EMPTY"})
"""What a client sends when it has no key (a local server): not a secret."""
_remembered: frozenset[str] = frozenset()
_remember_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Mask ``value`` exactly in everything :func:`redact_text` sees from now on, in this process."""
    global _remembered
    if value and len(value) >= MIN_REMEMBERED and value not in PLACEHOLDER_KEYS:
        with _remember_lock:
            _remembered = _remembered | {value}


def mask_value(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` as ``***`` (unchanged for no secret)."""
    if not secret or secret in PLACEHOLDER_KEYS:
        return text
    return text.replace(secret, MASK)


def scrub_exception(exc: BaseException, secret: str | None) -> BaseException:
    """``exc`` with ``secret`` masked in its message, notes and text attributes (``message``,
    ``body``), through its causes and contexts. When the formatted traceback still shows it (an
    exception that builds its text some other way), a ``RuntimeError`` with the masked text."""
    if not secret or secret in PLACEHOLDER_KEYS:
        return exc
    stack, seen = [exc], set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        e.args = tuple(_mask_in(a, secret) for a in e.args)
        for name, value in list(vars(e).items()):
            if isinstance(value, str | list | tuple | dict):
                vars(e)[name] = _mask_in(value, secret)
        stack += [c for c in (e.__cause__, e.__context__) if c is not None]
    shown = "".join(traceback.format_exception(exc))
    if secret in shown:
        return RuntimeError(f"{type(exc).__name__}: {mask_value(str(exc), secret)}")
    return exc


def _mask_in(value: Any, secret: str) -> Any:
    if isinstance(value, str):
        return mask_value(value, secret)
    if isinstance(value, dict):
        return {_mask_in(k, secret): _mask_in(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_in(v, secret) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask_in(v, secret) for v in value)
    return value


def is_secret_name(name: str) -> bool:
    """True for an option or field name that holds a secret (``api_key``, ``hf_token``...)."""
    return bool(SECRET_NAME.search(unquote_plus(name).strip()))


def redact_text(text: str) -> str:
    """``text`` with secret ``?name=value`` options, URL passwords and key-shaped tokens masked."""
    for secret in _remembered:
        text = text.replace(secret, MASK)
    text = _mask_options(text)
    text = _USERINFO.sub(lambda m: f"{m[1]}:{MASK}@", text)
    return _KEY_LIKE.sub(lambda m: f"{m[1]}-{MASK}", text)


def _mask_options(text: str) -> str:
    """Each secret option's value, up to the next ``&`` or the end, as ``***``. Only names are
    matched, so an option inside another's value (``?base_url=http://h/?token=t``) is seen too."""
    out, done = [], 0
    for m in _OPTION_NAME.finditer(text):
        if m.start() < done or not is_secret_name(m[1]):
            continue
        end = text.find("&", m.end())
        end = len(text) if end < 0 else end
        if end > m.end():
            out += [text[done : m.end()], MASK]
            done = end
    return "".join(out) + text[done:]


def redact(value: Any) -> Any:
    """``value`` (text, or dicts and lists of it) with every secret masked: strings by
    :func:`redact_text`, and whole values under secret-named keys (``{"api_key": ...}``)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            k: MASK if isinstance(k, str) and is_secret_name(k) and v else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value
