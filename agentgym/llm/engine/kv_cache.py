"""Keys and values: one contiguous slot per running sequence, and prefix blocks shared by all.

:class:`SlotCache` holds the running sequences' keys and values in one tensor
``[layers, 2, slots, kv_heads, length, head_dim]``; the running sequences occupy slots
``0..used-1`` (a sequence that leaves hands its slot to the last one), so a decode step attends
over one view of the first ``used`` slots. Slots and length grow by doubling where the memory
budget allows (else to exactly what is asked), and :meth:`SlotCache.reset` gives the tensor back
once no sequence runs.

:class:`PrefixBlocks` keeps the keys and values of earlier sequences in blocks of ``block_size``
tokens, each keyed by its tokens and its parent block (vLLM's prefix caching, SGLang's radix tree
cut into fixed blocks): a new sequence copies the longest run of blocks its prompt starts with into
its slot and computes only the rest. The next turn of an episode finds its previous turn there, and
every episode finds the system prompt another one computed. Blocks are kept up to a byte budget,
least recently used first out (the budget's share the slots leave free, at most ``max_bytes``);
copying them into a slot means eviction never touches a running sequence. Each block has a serial number: two slots whose first blocks have the same serials hold
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

    def __init__(
        self,
        layers: int,
        kv_heads: int,
        head_dim: int,
        dtype: Any,
        device: Any,
        max_bytes: int | None = None,
    ) -> None:
        self.shape = (layers, kv_heads, head_dim)
        self.dtype, self.device = dtype, device
        self.max_bytes = max_bytes
        """What the slots may take (None: no bound); the scheduler admits against it."""
        self.owners: list[Slotted] = []
        self.reset()

    @property
    def used(self) -> int:
        return len(self.owners)

    @property
    def length(self) -> int:
        return int(self.kv.shape[4])

    @property
    def nbytes(self) -> int:
        """Bytes the slot tensor holds now."""
        return self.kv.numel() * self.kv.element_size()

    def bytes_for(self, slots: int, length: int) -> int:
        """Bytes of a slot tensor of ``slots`` x ``length`` positions."""
        return slots * length * self.nbytes_per_token()

    def fits(self, slots: int, length: int) -> bool:
        """Whether ``slots`` x ``length`` positions (rounded up as allocated) stay within
        :attr:`max_bytes`."""
        return self.max_bytes is None or self.bytes_for(slots, _rounded(length)) <= self.max_bytes

    def plan(self, slots: int, length: int) -> tuple[int, int]:
        """The shape :meth:`ensure` grows to for ``slots`` x ``length``: doubling where it fits
        (a growing load then copies the tensor a few times, not at every admission), else what
        is asked (``length`` rounded up to 64; idle slots and unused positions dropped)."""
        have_slots, have_length = self.kv.shape[2], self.length
        slots, length = max(slots, self.used), _rounded(length)
        if self.fits(max(slots, have_slots), max(length, have_length)):
            slots, length = max(slots, have_slots), max(length, have_length)
        if slots > have_slots and self.fits(max(2 * have_slots, slots), length):
            slots = max(2 * have_slots, slots)
        if length > have_length and self.fits(slots, 2 * have_length):
            length = max(2 * have_length, length)
        return slots, length

    def ensure(self, slots: int, length: int) -> None:
        """Make room for ``slots`` sequences of ``length`` positions (see :meth:`plan`)."""
        if slots > self.kv.shape[2] or length > self.length:
            self._grow(*self.plan(slots, length))

    def reset(self) -> None:
        """Give back the slot tensor (no sequence may hold a slot): one small one remains."""
        assert not self.owners, "reset with sequences still in their slots"
        layers, heads, dim = self.shape
        self.kv = torch.zeros(layers, 2, 1, heads, 64, dim, dtype=self.dtype, device=self.device)

    def acquire(self, seq: Slotted) -> None:
        """Give ``seq`` the next free slot (growing the slot count if need be)."""
        self.ensure(self.used + 1, self.length)
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
        self.ensure(self.kv.shape[2], length)

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
        kept = min(slots, self.kv.shape[2])  # at least the slots in use
        n = min(length, self.length)  # at least every running sequence's positions
        kv[:, :, :kept, :, :n] = self.kv[:, :, :kept, :, :n]
        self.kv = kv


def _rounded(length: int) -> int:
    """Positions allocated for ``length``: a multiple of 64."""
    return -(-length // 64) * 64


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
        """The most the blocks may take; :meth:`evict` may be asked for less (what the slots
        leave of the engine's budget)."""
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

    def store(
        self, ids: list[int], computed: int, keys: list[int], read: Any, limit: int | None = None
    ) -> list[int]:
        """Add the full blocks of ``ids[:computed]`` past ``keys`` (appended to ``keys``), then
        evict down to ``limit`` bytes (None: :attr:`max_bytes`).

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
        self.evict(limit)
        return fresh

    def evict(self, limit: int | None = None) -> None:
        """Drop least recently used blocks until they take at most ``limit`` bytes (None, or
        more than :attr:`max_bytes`: :attr:`max_bytes`)."""
        bound = self.max_bytes if limit is None else max(0, min(limit, self.max_bytes))
        while self.nbytes > bound and self._blocks:
            _, block = self._blocks.popitem(last=False)
            self.nbytes -= block.kv.numel() * block.kv.element_size()

    def clear(self) -> None:
        self._blocks.clear()
        self.nbytes = 0
