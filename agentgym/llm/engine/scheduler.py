"""What runs next: which sequences decode, which prompts prefill (and how much), which wait.

Each step, every running sequence past its prompt decodes one token; prompts then prefill in
chunks within the step's token budget (``max_step_tokens``), the running ones first, then new ones
while a slot is free (``max_seqs``). A new sequence takes over the parked slot of the finished
sequence its prompt continues (an episode's previous turn: only the new turn is computed), else
starts from the longest run of cached prefix blocks its prompt begins with. One whose prompt
shares a block or more with a prompt still prefilling waits for it, so sixteen episodes that
arrive together with one system prompt compute it once. A sequence leaves the batch the step it
stops: its end-of-sequence token, a stop string, its token limit, or its caller giving up; one that
stopped by itself stays parked in its slot (at most ``max_seqs`` of them) until its next turn
comes, or the room is needed.

Memory: the base, the slots and the prefix blocks share one budget (``memory_bytes``). The blocks
that every held sequence (running or parked) starts with, bit for bit, are held once in the cache's
base (a sequence that shares less shrinks it; one that runs alone starts it from its cached
blocks), so a shared system prompt is counted once, not once per episode. A sequence is admitted
only if every running sequence and it can reach their token limits (prompt plus ``max_tokens``, at
most the context) within it: parked slots are given up for it first, least recently parked first;
one that still does not fit waits for a running one to leave, and the slots never grow past the
budget mid-generation. The prefix blocks take what the slots leave, least recently used out first.
A sequence that alone needs more than the whole budget runs alone (the default budget holds one
sequence of the full context).
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgym.llm.engine.kv_cache import PrefixBlocks, SlotCache
from agentgym.llm.engine.model_runner import Chunk
from agentgym.llm.engine.request import Request


@dataclass(eq=False)
class Sequence:
    """One request while it runs: its tokens so far and where its keys and values are."""

    request: Request
    generator: Any = None
    """The request's own ``torch.Generator`` when sampling (None: greedy)."""
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    slot: int = -1
    computed: int = 0
    """Tokens whose keys and values are in the slot."""
    cached: int = 0
    """Of those, the prompt tokens copied from the prefix cache."""
    blocks: list[int] = field(default_factory=list)
    """Keys of the prefix blocks holding this sequence's first tokens."""
    serials: list[int] = field(default_factory=list)
    """Serials of the leading blocks whose keys and values the slot holds bit for bit."""

    @property
    def ids(self) -> list[int]:
        return self.request.prompt_ids + self.tokens

    @property
    def pending(self) -> int:
        """Tokens to feed before the next token can be sampled."""
        return len(self.request.prompt_ids) + len(self.tokens) - self.computed


GROW_BASE_MIN = 64
"""Positions worth moving into the base at once (a move copies every slot)."""


class Scheduler:
    """Waiting and running sequences, and the plan of each step."""

    def __init__(
        self,
        cache: SlotCache,
        prefix: PrefixBlocks | None,
        max_seqs: int,
        max_step_tokens: int,
        memory_bytes: int | None = None,
        max_length: int | None = None,
    ) -> None:
        self.cache = cache
        self.prefix = prefix
        self.max_seqs = max_seqs
        self.max_step_tokens = max_step_tokens
        self.memory_bytes = memory_bytes
        """The slots' and prefix blocks' budget together (None: no bound)."""
        self.max_length = max_length
        """The most positions a sequence can take (the model's context; None: no cap)."""
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    @property
    def parked(self) -> list[Sequence]:
        """Finished sequences whose keys and values stay in their slots."""
        return self.cache.parked  # type: ignore[return-value]

    def schedule(self) -> list[tuple[Sequence, Chunk]]:
        """This step's chunks: decode rows, then prefill chunks within the token budget."""
        budget = self.max_step_tokens
        plan: list[tuple[Sequence, Chunk]] = []
        for seq in [s for s in self.running if s.pending == 1]:
            plan.append((seq, self._chunk(seq, 1)))
            budget -= 1
        for seq in [s for s in self.running if s.pending > 1]:
            if budget <= 0:
                break
            n = min(seq.pending, budget)
            plan.append((seq, self._chunk(seq, n)))
            budget -= n
        while self.waiting and len(self.running) < self.max_seqs and budget > 0:
            seq = self.waiting[0]
            seq.blocks = self._match(seq)
            parked, reused = self._continued(seq)
            if self._shares_with_prefill(seq, reused):
                break  # it will find that prefix cached in a step or two
            if not self._room_for(seq, parked, reused):
                break  # it waits for a running sequence to leave
            self.waiting.popleft()
            self._admit(seq, parked, reused)
            n = min(seq.pending, budget)
            plan.append((seq, self._chunk(seq, n)))
            budget -= n
        return plan

    def finish(self, seq: Sequence, park: bool = False) -> None:
        """Take ``seq`` out of the batch, keeping its blocks for later prompts; ``park``: and its
        slot for its next turn (where there is a prefix cache: reuse is on)."""
        self._store(seq)
        if seq in self.running:
            self.running.remove(seq)
            if park and self.prefix is not None and self.max_seqs > 0:
                self.cache.park(seq)
                while len(self.parked) > self.max_seqs:
                    self.cache.drop(self.parked[0])
            else:
                self.cache.release(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)

    def drop_parked(self) -> None:
        """Give up every parked slot (the weights changed, or the engine gives memory back)."""
        self.cache.drop_parked()

    def shared_prefix(self, plan: list[tuple[Sequence, Chunk]]) -> int:
        """Positions whose keys and values every decode row's slot holds identically (0: none)."""
        if self.prefix is None:
            return 0
        rows = [seq.serials for seq, chunk in plan if len(chunk.ids) == 1]
        if len(rows) < 2:
            return 0
        return len(os.path.commonprefix(rows)) * self.prefix.block_size

    def computed(self, seq: Sequence, n: int) -> None:
        """``n`` more of ``seq``'s tokens are in its slot now."""
        seq.computed += n
        self._store(seq)

    def _chunk(self, seq: Sequence, n: int) -> Chunk:
        return Chunk(seq.slot, seq.computed, seq.ids[seq.computed : seq.computed + n])

    def _need(self, seq: Sequence) -> int:
        """Positions ``seq`` may take by its end: prompt and token limit, within the context."""
        need = len(seq.request.prompt_ids) + seq.request.max_tokens
        return need if self.max_length is None else min(need, self.max_length)

    def _room_for(self, seq: Sequence, parked: Sequence | None, reused: int) -> bool:
        """Whether the slots can take ``seq`` (in ``parked``'s slot if not None) beside the
        running ones, with the base they will share: other parked slots are given up for it,
        least recently parked first, and room made in the prefix blocks; a sequence alone is
        always admitted."""
        bs = self.prefix.block_size if self.prefix is not None else 1
        if parked is not None:
            seq.serials = parked.serials[: reused // bs]
        elif self.prefix is not None:
            seq.serials = self.prefix.serials(seq.blocks)
        need = max([self._need(s) for s in self.running] + [self._need(seq)])
        others = [s for s in self.parked if s is not parked]
        if self.cache.held:
            kept = len(os.path.commonprefix([self.cache.base_serials, seq.serials]))
            offset = kept * bs if self.prefix is not None else 0
            slots = len(self.running) + 1

            def fits(keep: int) -> bool:
                length = max([need] + [s.computed for s in others[len(others) - keep :]])
                return self.cache.fits(slots + keep, length, offset)

            if not fits(0) and self.running:
                return False
            keep = len(others)
            while keep and not fits(keep):
                keep -= 1
            for gone in others[: len(others) - keep]:
                self.cache.drop(gone)
            length = max([need] + [s.computed for s in self.parked])
            slots = len(self.running) + len(self.parked) + (parked is None)
            if self.prefix is not None and kept < len(self.cache.base_serials):
                self.cache.shrink_base(kept, bs, slots, length)
        else:  # alone: the base becomes its cached blocks (see _admit)
            self.cache.set_base(None, [])
            length, slots = need, 1
        if self.memory_bytes is not None and self.prefix is not None:
            shape = self.cache.plan(slots, length)
            planned = self.cache.bytes_for(*shape)
            if shape != (self.cache.kv.shape[2], self.cache.length):
                planned += self.cache.nbytes  # the old tensor lives while it is copied
            self.prefix.evict(self.memory_bytes - planned, keep=seq.blocks)
        self.cache.ensure(slots, length)
        return True

    def _match(self, seq: Sequence) -> list[int]:
        """The cached blocks ``seq``'s prompt starts with (at least its last token computed)."""
        if self.prefix is None:
            return []
        prompt = seq.request.prompt_ids
        return self.prefix.match(prompt, len(prompt) - 1)

    def _continued(self, seq: Sequence) -> tuple[Sequence | None, int]:
        """The parked sequence whose computed tokens ``seq``'s prompt continues furthest, and how
        many of them it reuses: whole blocks, as the prefix cache would give them (so a prompt's
        tokens are the same either way), at most all of the prompt but its last token; (None, 0)
        where none reuses more than the base, or less than the cached blocks give it (as much:
        the slot is taken over, saving a copy and a slot)."""
        if self.prefix is None or not self.parked:
            return None, 0
        prompt = np.asarray(seq.request.prompt_ids)
        bs = self.prefix.block_size
        best, reused = None, max(len(seq.blocks) * bs, self.cache.offset + 1) - 1
        for parked in self.parked:
            n = min(parked.computed, len(prompt) - 1)
            same = np.asarray(parked.ids[:n]) == prompt[:n]
            common = (n if same.all() else int(np.argmin(same))) // bs * bs
            if common > reused:
                best, reused = parked, common
        return (best, reused) if best is not None else (None, 0)

    def _grow_base(self) -> None:
        """Hold once, in the base, the leading blocks that every held slot holds bit for bit
        (their system prompt, say): each slot then keeps only its own positions."""
        held = [*self.running, *self.parked]
        if self.prefix is None or len(held) < 2:
            return
        common = os.path.commonprefix([s.serials for s in held])
        if (len(common) - len(self.cache.base_serials)) * self.prefix.block_size >= GROW_BASE_MIN:
            self.cache.grow_base(list(common), self.prefix.block_size)

    def prefix_room(self) -> int | None:
        """Bytes the prefix blocks may take now: the budget less the slots (None: no bound)."""
        return None if self.memory_bytes is None else self.memory_bytes - self.cache.nbytes

    def _admit(self, seq: Sequence, parked: Sequence | None, reused: int) -> None:
        """Give ``seq`` ``parked``'s slot, whose first ``reused`` positions it continues, else a
        slot holding its cached blocks (``seq.blocks``, from :meth:`schedule`)."""
        if parked is not None:
            self.cache.adopt(parked, seq)
            self.running.append(seq)
            seq.computed = seq.cached = reused
            self._grow_base()
            return
        if self.prefix is None or not seq.blocks:
            self.cache.acquire(seq)
            self.running.append(seq)
            return
        kv = self.prefix.gather(seq.blocks)
        seq.serials = self.prefix.serials(seq.blocks)
        if not self.cache.held:  # alone: its cached blocks become the base others may share
            self.cache.set_base(kv, seq.serials)
        self.cache.acquire(seq)
        self.running.append(seq)
        self.cache.reserve(len(seq.request.prompt_ids))
        self.cache.write(seq.slot, 0, kv)
        seq.computed = seq.cached = kv.shape[3]
        self._grow_base()

    def _store(self, seq: Sequence) -> None:
        if self.prefix is not None and seq.slot >= 0:
            slot, exact = seq.slot, len(seq.serials) == len(seq.blocks)
            fresh = self.prefix.store(
                seq.ids,
                seq.computed,
                seq.blocks,
                lambda a, b: self.cache.read(slot, a, b),
                self.prefix_room(),
            )
            if exact:
                seq.serials += fresh

    def _shares_with_prefill(self, seq: Sequence, reused: int) -> bool:
        """Whether a running prompt, still prefilling, will compute a block more of ``seq``'s
        than its cached blocks (``seq.blocks``) and ``reused`` positions of a parked slot."""
        if self.prefix is None:
            return False
        prompt = np.asarray(seq.request.prompt_ids)
        have = max(len(seq.blocks) * self.prefix.block_size, reused)
        for other in self.running:
            theirs = other.request.prompt_ids
            if other.computed >= len(theirs) - 1:
                continue
            n = min(len(theirs), len(prompt)) - 1
            same = prompt[:n] == np.asarray(theirs[:n])
            common = n if same.all() else int(np.argmin(same))
            if common >= have + self.prefix.block_size and other.computed < common:
                return True
        return False
