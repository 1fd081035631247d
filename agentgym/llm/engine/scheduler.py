"""What runs next: which sequences decode, which prompts prefill (and how much), which wait.

Each step, every running sequence past its prompt decodes one token; prompts then prefill in
chunks within the step's token budget (``max_step_tokens``), the running ones first, then new ones
while a slot is free (``max_seqs``). A new sequence starts from the longest run of cached prefix
blocks its prompt begins with. One whose prompt shares a block or more with a prompt still
prefilling waits for it, so sixteen episodes that arrive together with one system prompt compute
it once. A sequence leaves the batch the step it stops: its end-of-sequence token, a stop string,
its token limit, or its caller giving up.

Memory: the base, the slots and the prefix blocks share one budget (``memory_bytes``). The blocks
that every running sequence starts with, bit for bit, are held once in the cache's base (a sequence
that shares less shrinks it; one that runs alone starts it from its cached blocks), so a shared
system prompt is counted once, not once per episode. A sequence is admitted only if every running
sequence and it can reach their token limits (prompt plus ``max_tokens``, at most the context)
within it: one that does not fit waits for a running one to leave, and the slots never grow past
the budget mid-generation. The prefix blocks take what
the slots leave, least recently used out first. A sequence that alone needs more than the whole
budget runs alone (the default budget holds one sequence of the full context).
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
            if self._shares_with_prefill(seq):
                break  # it will find that prefix cached in a step or two
            if not self._room_for(seq):
                break  # it waits for a running sequence to leave
            self.waiting.popleft()
            self._admit(seq)
            n = min(seq.pending, budget)
            plan.append((seq, self._chunk(seq, n)))
            budget -= n
        return plan

    def finish(self, seq: Sequence) -> None:
        """Take ``seq`` out of the batch, keeping its blocks for later prompts."""
        self._store(seq)
        if seq in self.running:
            self.running.remove(seq)
            self.cache.release(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)

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

    def _room_for(self, seq: Sequence) -> bool:
        """Whether the slots can take ``seq`` beside the running ones, with the base they will
        share (room made in the prefix blocks if so); a sequence alone is always admitted."""
        length = max([self._need(s) for s in self.running] + [self._need(seq)])
        slots = len(self.running) + 1
        seq.blocks = self._match(seq)
        if self.running:
            kept = self._base_kept(seq)
            offset = kept * self.prefix.block_size if self.prefix is not None else 0
            if not self.cache.fits(slots, length, offset):
                return False
            if self.prefix is not None and kept < len(self.cache.base_serials):
                self.cache.shrink_base(kept, self.prefix.block_size)
        else:  # alone: the base becomes its cached blocks (see _admit)
            self.cache.set_base(None, [])
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

    def _base_kept(self, seq: Sequence) -> int:
        """Blocks of the base that ``seq`` shares: it starts with them in the prefix cache."""
        if self.prefix is None or not self.cache.base_serials:
            return 0
        serials = self.prefix.serials(seq.blocks)
        return len(os.path.commonprefix([self.cache.base_serials, serials]))

    def _grow_base(self) -> None:
        """Hold once, in the base, the leading blocks that every running slot holds bit for bit
        (their system prompt, say): each slot then keeps only its own positions."""
        if self.prefix is None or len(self.running) < 2:
            return
        common = os.path.commonprefix([s.serials for s in self.running])
        if (len(common) - len(self.cache.base_serials)) * self.prefix.block_size >= GROW_BASE_MIN:
            self.cache.grow_base(list(common), self.prefix.block_size)

    def prefix_room(self) -> int | None:
        """Bytes the prefix blocks may take now: the budget less the slots (None: no bound)."""
        return None if self.memory_bytes is None else self.memory_bytes - self.cache.nbytes

    def _admit(self, seq: Sequence) -> None:
        """Give ``seq`` a slot holding its cached blocks (``seq.blocks``, from :meth:`_room_for`)."""
        if self.prefix is None or not seq.blocks:
            self.cache.acquire(seq)
            self.running.append(seq)
            return
        kv = self.prefix.gather(seq.blocks)
        seq.serials = self.prefix.serials(seq.blocks)
        if not self.running:  # alone: its cached blocks become the base others may share
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

    def _shares_with_prefill(self, seq: Sequence) -> bool:
        """Whether a running prompt, still prefilling, will compute a block more of ``seq``'s."""
        if self.prefix is None:
            return False
        prompt = np.asarray(seq.request.prompt_ids)
        have = len(self.prefix.match(seq.request.prompt_ids, len(prompt) - 1))
        have *= self.prefix.block_size
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
