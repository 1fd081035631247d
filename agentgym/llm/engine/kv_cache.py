"""Keys and values: one contiguous slot per running sequence, and prefix blocks shared by all.

:class:`SlotCache` holds the running sequences' keys and values in one tensor
``[layers, 2, slots, kv_heads, length, head_dim]``; the running sequences occupy slots
``0..used-1`` (a sequence that leaves hands its slot to the last one), so a decode step attends
over one view of the first ``used`` slots. Slots and length grow by doubling as needed.

:class:`PrefixBlocks` keeps the keys and values of earlier sequences in blocks of ``block_size``
tokens, each keyed by its tokens and its parent block (vLLM's prefix caching, SGLang's radix tree
cut into fixed blocks): a new sequence copies the longest run of blocks its prompt starts with into
its slot and computes only the rest. The next turn of an episode finds its previous turn there, and
every episode finds the system prompt another one computed. Blocks are kept up to a byte budget,
least recently used first out; copying them into a slot means eviction never touches a running
sequence. Each block has a serial number: two slots whose first blocks have the same serials hold
the same keys and values there, bit for bit (both copied from, or read into, one block), so a
decode step can attend that shared prefix once for all of them.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch


class Slotted(Protocol):
    slot: int
    computed: int


class SlotCache:
    """Per-sequence keys and values of the running batch, compacted into the first slots."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, dtype: Any, device: Any) -> None:
        self.shape = (layers, kv_heads, head_dim)
        self.dtype, self.device = dtype, device
        self.kv = torch.zeros(layers, 2, 1, kv_heads, 64, head_dim, dtype=dtype, device=device)
        self.owners: list[Slotted] = []

    @property
    def used(self) -> int:
        return len(self.owners)

    @property
    def length(self) -> int:
        return int(self.kv.shape[4])

    def acquire(self, seq: Slotted) -> None:
        """Give ``seq`` the next free slot (growing the slot count if need be)."""
        if self.used == self.kv.shape[2]:
            self._grow(self.used * 2, self.length)
        seq.slot = self.used
        self.owners.append(seq)

    def release(self, seq: Slotted) -> None:
        """Free ``seq``'s slot; the last slot's sequence moves into it."""
        last = self.owners.pop()
        if last is not seq:
            n = last.computed
            self.kv[:, :, seq.slot, :, :n] = self.kv[:, :, last.slot, :, :n]
            last.slot = seq.slot
            self.owners[seq.slot] = last
        seq.slot = -1

    def reserve(self, length: int) -> None:
        """Make room for ``length`` positions per slot."""
        if length > self.length:
            self._grow(self.kv.shape[2], max(length, 2 * self.length))

    def layer(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``i``'s keys and values, ``[slots, kv_heads, length, head_dim]`` each."""
        return self.kv[i, 0], self.kv[i, 1]

    def read(self, slot: int, start: int, end: int) -> torch.Tensor:
        """A copy of positions ``start:end`` of a slot: ``[layers, 2, kv_heads, n, head_dim]``."""
        return self.kv[:, :, slot, :, start:end].clone()

    def write(self, slot: int, start: int, kv: torch.Tensor) -> None:
        self.kv[:, :, slot, :, start : start + kv.shape[3]] = kv

    def nbytes_per_token(self) -> int:
        layers, heads, dim = self.shape
        return 2 * layers * heads * dim * self.kv.element_size()

    def _grow(self, slots: int, length: int) -> None:
        kv = torch.zeros(
            *self.kv.shape[:2], slots, self.kv.shape[3], length, self.kv.shape[5],
            dtype=self.dtype, device=self.device,
        )  # fmt: skip
        kv[:, :, : self.kv.shape[2], :, : self.length] = self.kv
        self.kv = kv


_SERIALS = itertools.count()


@dataclass
class _Block:
    tokens: tuple[int, ...]
    parent: int | None
    kv: torch.Tensor
    serial: int = field(default_factory=lambda: next(_SERIALS))


class PrefixBlocks:
    """Keys and values of token blocks, found by the chain of blocks a prompt starts with."""

    def __init__(self, max_bytes: int, block_size: int = 16) -> None:
        self.max_bytes = max_bytes
        self.block_size = block_size
        self.nbytes = 0
        self._blocks: OrderedDict[int, _Block] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def match(self, ids: list[int], limit: int) -> list[int]:
        """Keys of the cached blocks ``ids`` starts with, covering at most ``limit`` tokens."""
        keys: list[int] = []
        bs, parent = self.block_size, None
        for start in range(0, limit - bs + 1, bs):
            tokens = tuple(ids[start : start + bs])
            key = hash((parent, tokens))
            block = self._blocks.get(key)
            if block is None or block.tokens != tokens or block.parent != parent:
                break
            self._blocks.move_to_end(key)
            keys.append(key)
            parent = key
        return keys

    def serials(self, keys: list[int]) -> list[int]:
        """The blocks' serial numbers (which copy of their keys and values a slot holds)."""
        return [self._blocks[k].serial for k in keys]

    def gather(self, keys: list[int]) -> torch.Tensor:
        """The blocks' keys and values end to end: ``[layers, 2, kv_heads, n, head_dim]``."""
        return torch.cat([self._blocks[k].kv for k in keys], dim=3)

    def store(self, ids: list[int], computed: int, keys: list[int], read: Any) -> list[int]:
        """Add the full blocks of ``ids[:computed]`` past ``keys`` (appended to ``keys``).

        ``read(start, end)`` returns those positions' keys and values. Returns the serials of the
        blocks read from them, up to the first block that was already stored (a slot that
        computed that block itself may hold other bits than the stored copy).
        """
        bs = self.block_size
        fresh: list[int] = []
        exact = True
        while (len(keys) + 1) * bs <= computed:
            start, parent = len(keys) * bs, keys[-1] if keys else None
            tokens = tuple(ids[start : start + bs])
            key = hash((parent, tokens))
            block = self._blocks.get(key)
            if block is None:
                kv = read(start, start + bs)
                self._blocks[key] = block = _Block(tokens, parent, kv)
                self.nbytes += kv.numel() * kv.element_size()
                if exact:
                    fresh.append(block.serial)
            elif block.tokens != tokens or block.parent != parent:
                break  # a hash collision: keep the older block, stop extending this chain
            else:
                exact = False
            self._blocks.move_to_end(key)
            keys.append(key)
        self.evict()
        return fresh

    def evict(self) -> None:
        """Drop least recently used blocks until within budget."""
        while self.nbytes > self.max_bytes and self._blocks:
            _, block = self._blocks.popitem(last=False)
            self.nbytes -= block.kv.numel() * block.kv.element_size()

    def clear(self) -> None:
        self._blocks.clear()
        self.nbytes = 0
