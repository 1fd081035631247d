"""Prefix KV cache: reuse the keys and values of earlier sequences a new prompt starts with.

An agent's prompt at turn t is its prompt at turn t-1, the completion it generated, and the new
observation. Without reuse every turn prefills the whole conversation again: with SmolLM2-135M on
two CPU cores a 1,000-token prompt costs seconds of prefill while its one-line action costs ten
decode steps. :class:`PrefixCache` keeps, per finished sequence, the model's keys and values of its
prompt and completion; the next request whose token ids start with one of them computes only the
new tail.

Matching is by token ids (longest common prefix), so a completion that re-tokenises differently
inside the next prompt still reuses everything up to the first differing token, and every episode's
first turn reuses the system prompt another episode already computed. Entries live in memory up to
a byte budget, least recently used first out, except the entries the running batch uses (``pinned``:
evicting one would make the batch prefill that prompt again); an entry a request continued (same
conversation, one turn later) is dropped as soon as the request's own entry replaces it.

:func:`batch_cache` lays a batch out for ``generate`` as ``[pad | cached prefix | pad | new tail]``
per row (pads masked out; positions come from the attention mask, so each row's positions are those
of its unpadded sequence) and :func:`row_kv` takes one row's keys and values back out.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

KV = list[tuple[Any, Any]]
"""Per layer, (keys, values) of one sequence: tensors of shape [heads, length, head_dim]."""


@dataclass
class _Entry:
    ids: np.ndarray
    prompt_len: int
    kv: KV
    nbytes: int


@dataclass(frozen=True)
class Hit:
    """A prompt's longest cached prefix: the entry's key and how many of its tokens match."""

    key: int
    length: int


class PrefixCache:
    """Keys and values of finished sequences, looked up by longest common token prefix."""

    def __init__(self, max_bytes: int, min_tokens: int = 8) -> None:
        self.max_bytes = max_bytes
        self.min_tokens = min_tokens
        """Shorter matches are not worth the copy: the prompt is computed whole."""
        self.nbytes = 0
        self.pinned: set[int] = set()
        """Keys never evicted (the running batch's entries); the budget is exceeded meanwhile."""
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next_key = 0

    def __len__(self) -> int:
        return len(self._entries)

    def match(self, prompt: list[int]) -> Hit | None:
        """The entry sharing the longest prefix with ``prompt``, at most all but its last token."""
        ids = np.asarray(prompt, dtype=np.int64)
        best: Hit | None = None
        for key, entry in self._entries.items():
            n = min(len(entry.ids), len(ids) - 1)
            same = entry.ids[:n] == ids[:n]
            length = n if same.all() else int(np.argmin(same))
            if length >= self.min_tokens and (best is None or length > best.length):
                best = Hit(key, length)
        return best

    def kv(self, hit: Hit) -> KV:
        """The matched entry's keys and values (whole; use the first ``hit.length`` positions)."""
        self._entries.move_to_end(hit.key)
        return self._entries[hit.key].kv

    def continued(self, hit: Hit) -> bool:
        """Whether the prompt extends the entry's whole prompt (the same conversation, later on)."""
        return hit.key in self._entries and hit.length >= self._entries[hit.key].prompt_len

    def drop(self, key: int) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.nbytes -= entry.nbytes

    def put(self, ids: list[int], prompt_len: int, kv: KV, pin: bool = False) -> None:
        """Keep ``kv`` (positions for ``ids``, ``pin``: pinned) and evict over budget."""
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        if nbytes > self.max_bytes:
            return
        key = self._next_key
        self._entries[key] = _Entry(np.asarray(ids, np.int64), prompt_len, kv, nbytes)
        self._next_key += 1
        self.nbytes += nbytes
        if pin:
            self.pinned.add(key)
        self.evict()

    def evict(self) -> None:
        """Drop the least recently used unpinned entries until within budget."""
        for key in [k for k in self._entries if k not in self.pinned]:
            if self.nbytes <= self.max_bytes:
                return
            self.drop(key)

    def clear(self) -> None:
        self._entries.clear()
        self.pinned.clear()
        self.nbytes = 0


class Layout:
    """A batch's input rows: ``[pad | cached prefix | pad | prompt tail]``, pads masked out.

    ``group`` holds requests (``prompt_ids``), ``cached`` how many of each prompt's tokens come
    from the cache.

    The cached prefixes end together at column ``cached`` and the tails at ``width``; the model
    sees each row's positions counted over its mask, as for plain left padding.
    """

    def __init__(self, group: list[Any], cached: list[int], pad: int) -> None:
        self.cached = max(cached)
        tails = [len(r.prompt_ids) - c for r, c in zip(group, cached, strict=True)]
        self.width = self.cached + max(tails)
        self.ids: list[list[int]] = []
        self.mask: list[list[int]] = []
        for r, c, t in zip(group, cached, tails, strict=True):
            gap, head = self.width - self.cached - t, self.cached - c
            self.ids.append([pad] * head + r.prompt_ids[:c] + [pad] * gap + r.prompt_ids[c:])
            self.mask.append([0] * head + [1] * c + [0] * gap + [1] * t)


def batch_cache(rows: list[tuple[KV, int]], width: int, template: KV) -> KV:
    """Per layer, batched [rows, heads, width, dim] keys and values, each row's prefix right-aligned.

    ``rows`` holds each row's cached (kv, length), or ``([], 0)`` for a row with no hit;
    ``template`` is any row's kv (for shapes, dtype and device). Positions before a row's prefix
    are zeros, and the caller masks them out.
    """
    torch = _torch()
    out: KV = []
    for layer, (k0, v0) in enumerate(template):
        heads, _, dim = k0.shape
        keys = torch.zeros(len(rows), heads, width, dim, dtype=k0.dtype, device=k0.device)
        values = torch.zeros(
            len(rows), v0.shape[0], width, v0.shape[2], dtype=v0.dtype, device=v0.device
        )
        for i, (kv, length) in enumerate(rows):
            if length:
                keys[i, :, width - length :] = kv[layer][0][:, :length]
                values[i, :, width - length :] = kv[layer][1][:, :length]
        out.append((keys, values))
    return out


def row_kv(batched: KV, row: int, positions: Any) -> KV:
    """One row's keys and values at ``positions`` (a 1-D index tensor), as new tensors."""
    return [
        (k[row].index_select(1, positions), v[row].index_select(1, positions)) for k, v in batched
    ]


def _torch() -> Any:
    import torch

    return torch
