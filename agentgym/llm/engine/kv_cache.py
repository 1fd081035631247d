"""Keys and values: a base every held sequence shares, held once; one contiguous slot per
running or parked sequence for the rest; and prefix blocks shared by all.

:class:`SlotCache` holds the sequences' keys and values in one tensor
``[layers, 2, slots, kv_heads, length, head_dim]``; the running sequences occupy slots
``0..used-1`` (a sequence that leaves hands its slot to the last one), so a decode step attends
over one view of the first ``used`` slots. A sequence that finished may stay parked in the slots
after them (``used..held-1``): the next turn of its episode, whose prompt is that sequence's
tokens and more, takes the slot over and computes only what is new, and the parked slot goes
first (least recently parked) when a running sequence needs the room. The leading positions that
every held sequence holds bit for bit (sixteen episodes' one system prompt) live once, in the
base, and each slot starts where the base ends: memory grows with what the sequences do not
share. Slots and length grow by doubling while the tensor stays within half the memory budget
(else to exactly what is asked: the rest of the budget is the prefix blocks'), and
:meth:`SlotCache.reset` gives the tensor back once no sequence runs.

:class:`PrefixBlocks` keeps the keys and values of earlier sequences in blocks of ``block_size``
tokens, each keyed by its tokens and its parent block (vLLM's prefix caching, SGLang's radix tree
cut into fixed blocks): a new sequence copies the longest run of blocks its prompt starts with into
its slot and computes only the rest. Every episode finds there the system prompt another one
computed, and the next turn of an episode whose parked slot was given up finds its previous turn.
Blocks are kept up to a byte budget, least recently used first out (the budget's share the slots
leave free, at most ``max_bytes``); copying them into a slot means eviction never touches a running
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
    """Per-sequence keys and values of the running batch, compacted into the first slots, then
    of the parked sequences, after a base of positions that every held sequence shares and that
    is held once."""

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
        """What the base and the slots may take (None: no bound); the scheduler admits against it."""
        self.owners: list[Slotted] = []
        """The running sequences, ``owners[i].slot == i``."""
        self.parked: list[Slotted] = []
        """Finished sequences whose keys and values stay in slots ``used...``, least recently
        parked first."""
        self.base_serials: list[int] = []
        """Serials of the prefix blocks the base holds (one per ``block_size`` positions)."""
        self.reset()

    @property
    def used(self) -> int:
        return len(self.owners)

    @property
    def held(self) -> int:
        """Slots in use: the running sequences' and the parked ones'."""
        return len(self.owners) + len(self.parked)

    @property
    def offset(self) -> int:
        """Positions held once in the base: slot position ``j`` is the sequence's ``offset + j``."""
        return int(self.base.shape[3])

    @property
    def length(self) -> int:
        """Positions a slot reaches now, the base's included."""
        return self.offset + int(self.kv.shape[4])

    @property
    def nbytes(self) -> int:
        """Bytes the base and the slot tensor hold now."""
        return (self.kv.numel() + self.base.numel()) * self.kv.element_size()

    def bytes_for(self, slots: int, length: int, offset: int | None = None) -> int:
        """Bytes of a base of ``offset`` positions (default: the current one) and a slot tensor
        of ``slots`` sequences reaching ``length`` positions."""
        offset = self.offset if offset is None else offset
        return (slots * max(0, length - offset) + offset) * self.nbytes_per_token()

    def fits(
        self, slots: int, length: int, offset: int | None = None, share: float = 1.0
    ) -> bool:
        """Whether ``slots`` x ``length`` positions (rounded up as allocated) stay within
        ``share`` of :attr:`max_bytes`, with a base of ``offset`` positions (default: the
        current one)."""
        offset = self.offset if offset is None else offset
        own = _rounded(max(0, length - offset))
        return (
            self.max_bytes is None
            or self.bytes_for(slots, offset + own, offset) <= share * self.max_bytes
        )

    def plan(self, slots: int, length: int) -> tuple[int, int]:
        """The shape :meth:`ensure` grows to for ``slots`` x ``length``: room kept and doubled
        while the tensor stays within :data:`SPARE_SHARE` of the budget (a growing load then
        copies the tensor a few times, not at every admission), else what is asked (a slot's own
        positions rounded up to 64; idle slots and unused positions dropped): spare room past
        that would take the prefix blocks' share."""
        have_slots, have = self.kv.shape[2], self.length
        slots, length = max(slots, self.held), self.offset + _rounded(max(0, length - self.offset))
        spare = SPARE_SHARE
        if self.fits(max(slots, have_slots), max(length, have), share=spare):
            slots, length = max(slots, have_slots), max(length, have)
        if slots > have_slots and self.fits(max(2 * have_slots, slots), length, share=spare):
            slots = max(2 * have_slots, slots)
        doubled = self.offset + 2 * (have - self.offset)
        if length > have and self.fits(slots, doubled, share=spare):
            length = max(doubled, length)
        return slots, length

    def ensure(self, slots: int, length: int) -> None:
        """Make room for ``slots`` sequences of ``length`` positions (see :meth:`plan`)."""
        if slots > self.kv.shape[2] or length > self.length:
            self._grow(*self.plan(slots, length))

    def reset(self) -> None:
        """Give back the slot tensor and the base (no sequence may run; parked ones are
        dropped): one small slot tensor remains."""
        assert not self.owners, "reset with sequences still in their slots"
        self.drop_parked()
        layers, heads, dim = self.shape
        self.kv = torch.zeros(layers, 2, 1, heads, 64, dim, dtype=self.dtype, device=self.device)
        self.set_base(None, [])

    def acquire(self, seq: Slotted) -> None:
        """Give ``seq`` the next free slot (growing the slot count if need be); the parked
        sequence there moves past the others."""
        self.ensure(self.held + 1, self.length)
        slot = self.used
        if self.parked:
            self._move(self._parked_at(slot), self.held)
        seq.slot = slot
        self.owners.append(seq)

    def release(self, seq: Slotted) -> None:
        """Free ``seq``'s slot (its keys and values are dropped)."""
        self.park(seq)
        self.drop(seq)

    def park(self, seq: Slotted) -> None:
        """Keep the finished ``seq``'s keys and values in a slot past the running ones."""
        last = self.owners[-1]
        if last is not seq:
            self._swap(seq, last)
            self.owners[last.slot] = last
        self.owners.pop()
        self.parked.append(seq)

    def adopt(self, parked: Slotted, seq: Slotted) -> None:
        """Run ``seq`` in ``parked``'s slot, whose keys and values begin ``seq``'s prompt."""
        slot = self.used
        if parked.slot != slot:
            self._swap(parked, self._parked_at(slot))
        self.parked.remove(parked)
        parked.slot, seq.slot = -1, slot
        self.owners.append(seq)

    def drop(self, parked: Slotted) -> None:
        """Give up a parked slot; the last parked sequence moves into it."""
        last = self._parked_at(self.held - 1)
        if last is not parked:
            self._move(last, parked.slot)
        self.parked.remove(parked)
        parked.slot = -1

    def drop_parked(self) -> None:
        """Give up every parked slot (nothing moves: the slots past the running ones are free)."""
        for seq in self.parked:
            seq.slot = -1
        self.parked = []

    def _parked_at(self, slot: int) -> Slotted:
        return next(s for s in self.parked if s.slot == slot)

    def _own(self, seq: Slotted) -> int:
        """Positions of ``seq``'s slot that hold its keys and values."""
        return min(max(0, seq.computed - self.offset), int(self.kv.shape[4]))

    def _move(self, seq: Slotted, slot: int) -> None:
        n = self._own(seq)
        self.kv[:, :, slot, :, :n] = self.kv[:, :, seq.slot, :, :n]
        seq.slot = slot

    def _swap(self, a: Slotted, b: Slotted) -> None:
        n = max(self._own(a), self._own(b))
        held = self.kv[:, :, a.slot, :, :n].clone()
        self.kv[:, :, a.slot, :, :n] = self.kv[:, :, b.slot, :, :n]
        self.kv[:, :, b.slot, :, :n] = held
        a.slot, b.slot = b.slot, a.slot

    def reserve(self, length: int) -> None:
        """Make room for ``length`` positions per slot."""
        self.ensure(self.kv.shape[2], length)

    def layer(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``i``'s keys and values in the slots, ``[slots, kv_heads, length, head_dim]``
        each, from position :attr:`offset` on."""
        return self.kv[i, 0], self.kv[i, 1]

    def base_layer(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``i``'s keys and values of the base, ``[kv_heads, offset, head_dim]`` each."""
        return self.base[i, 0], self.base[i, 1]

    def read(self, slot: int, start: int, end: int) -> torch.Tensor:
        """A copy of positions ``start:end`` of a slot: ``[layers, 2, kv_heads, n, head_dim]``."""
        p = self.offset
        own = self.kv[:, :, slot, :, max(start, p) - p : max(end, p) - p]
        if start >= p:
            return own.clone()
        return torch.cat([self.base[:, :, :, start : min(end, p)], own], dim=3)

    def write(self, slot: int, start: int, kv: torch.Tensor) -> None:
        """Put ``kv`` at positions ``start...`` of a slot (what falls in the base is the base's
        already: a slot is only given what it shares with the base)."""
        skip = max(0, self.offset - start)
        start += skip - self.offset
        self.kv[:, :, slot, :, start : start + kv.shape[3] - skip] = kv[:, :, :, skip:]

    def nbytes_per_token(self) -> int:
        layers, heads, dim = self.shape
        return 2 * layers * heads * dim * self.kv.element_size()

    def set_base(self, kv: torch.Tensor | None, serials: list[int]) -> None:
        """Hold ``kv`` (``[layers, 2, kv_heads, n, head_dim]``, the blocks ``serials``, a tensor
        the caller gives up, as :meth:`PrefixBlocks.gather` makes one; None: nothing) as the base;
        only while no sequence holds a slot."""
        assert not self.held, "a new base with sequences in their slots"
        layers, heads, dim = self.shape
        self.base = self.kv.new_zeros(layers, 2, heads, 0, dim) if kv is None else kv
        self.base_serials = list(serials)

    def shrink_base(self, blocks: int, block_size: int, slots: int, length: int) -> None:
        """Keep the first ``blocks`` blocks in the base; the rest goes back into every held
        slot, in a tensor of ``slots`` x ``length`` positions (at least what the held sequences
        hold): what the budget was asked for, not the old tensor's spare room moved along."""
        keep, p = blocks * block_size, self.offset
        if keep >= p:
            return
        gone, held = p - keep, self.held
        own = max([self._own(s) for s in (*self.owners, *self.parked)], default=0)
        layers, heads, dim = self.shape
        size = _rounded(max(length - keep, own + gone))
        kv = self.kv.new_zeros(layers, 2, max(slots, held), heads, size, dim)
        kv[:, :, :held, :, gone : gone + own] = self.kv[:, :, :held, :, :own]
        kv[:, :, :held, :, :gone] = self.base[:, :, None, :, keep:p]
        self.kv, self.base = kv, self.base[:, :, :, :keep].clone()
        del self.base_serials[blocks:]

    def grow_base(self, serials: list[int], block_size: int) -> None:
        """Move the blocks ``serials`` past the base, which every held slot holds bit for bit,
        into the base (read from slot 0); the slots keep what follows them."""
        more = (len(serials) - len(self.base_serials)) * block_size
        if more <= 0 or not self.held:
            return
        p, own = self.offset, int(self.kv.shape[4])
        base = torch.cat([self.base, self.kv[:, :, 0, :, :more]], dim=3)
        kv = self.kv.new_zeros(*self.kv.shape[:4], _rounded(max(own - more, 1)), self.kv.shape[5])
        kv[:, :, :, :, : own - more] = self.kv[:, :, :, :, more:]
        self.kv, self.base, self.base_serials = kv, base, list(serials)
        assert self.offset == p + more

    def _grow(self, slots: int, length: int) -> None:
        own = length - self.offset
        kv = torch.zeros(
            *self.kv.shape[:2], slots, self.kv.shape[3], own, self.kv.shape[5],
            dtype=self.dtype, device=self.device,
        )  # fmt: skip
        kept = min(slots, self.kv.shape[2])  # at least the slots held
        n = min(own, int(self.kv.shape[4]))  # at least every held sequence's positions
        kv[:, :, :kept, :, :n] = self.kv[:, :, :kept, :, :n]
        self.kv = kv


SPARE_SHARE = 0.5
"""Room past what is asked (kept slots, doubled length) only while the slot tensor stays within
this share of the budget."""


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

    def evict(self, limit: int | None = None, keep: list[int] | None = None) -> None:
        """Drop least recently used blocks until they take at most ``limit`` bytes (None, or
        more than :attr:`max_bytes`: :attr:`max_bytes`), except the blocks ``keep`` (a prompt
        about to be given them)."""
        bound = self.max_bytes if limit is None else max(0, min(limit, self.max_bytes))
        kept = set(keep or ())
        while self.nbytes > bound and len(self._blocks) > len(kept):
            key, block = self._blocks.popitem(last=False)
            if key in kept:
                self._blocks[key] = block  # to the recent end: the next oldest goes instead
                continue
            self.nbytes -= block.kv.numel() * block.kv.element_size()

    def clear(self) -> None:
        self._blocks.clear()
        self.nbytes = 0
