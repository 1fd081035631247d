"""Data-parallel training on torch.distributed: the trainer's view of its process group.

``torchrun --nproc-per-node N -m agentgym.cli train CONFIG`` (or ``agentgym train CONFIG
--nproc N``) starts N copies of the same run; torchrun's environment (``WORLD_SIZE``, ``RANK``,
``LOCAL_RANK``) makes each one a rank here, on gloo (CPU) or NCCL (CUDA). The update equals the
one-process update on the same global batch:

- every rank draws the step's jobs alike (seeds per job, never per rank) and rolls out its
  contiguous share (:meth:`DataParallel.shard`);
- the episodes are gathered in job order (:meth:`DataParallel.gather`) before credit, so GRPO's
  and GiGPO's groups and GiGPO's step anchors are exactly those of one process;
- the loss weights are fixed over the global batch (:mod:`agentgym.train.batch`), each rank trains
  a share of its rows, and the gradients are summed (:meth:`DataParallel.sum_grads`): the sum of
  the shares' gradients is the whole batch's gradient;
- rank 0 alone logs and writes checkpoints; a checkpoint holds nothing per rank, so it resumes
  on any number of ranks.

With one process every method is the identity, so the loop has no branch for it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

T = TypeVar("T")


def ranks_from_env() -> int:
    """How many ranks torchrun started (1 outside torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def check_policy(policy: str | None, ranks: int) -> None:
    """Refuse a per-turn adapter policy on several ranks: its picks are sampled per rollout
    batch, so ranks rolling out shares would not sample the episodes of one process."""
    if ranks > 1 and policy is not None:
        raise ValueError(
            f"model.policy {policy!r} samples its adapter picks per rollout batch, so ranks "
            "would not sample one process's episodes: train it in one process"
        )


@dataclass(frozen=True)
class DataParallel:
    """This process's rank among ``size`` ranks (size 1: no process group)."""

    rank: int = 0
    size: int = 1
    owns_group: bool = False
    """This object started the process group, so :meth:`close` ends it."""

    @classmethod
    def from_env(cls, device: str) -> DataParallel:
        """The ranks torchrun started (one process: none); joins their group if not joined yet."""
        size = ranks_from_env()
        if size <= 1:
            return cls()
        owns = not dist.is_initialized()
        if owns:
            dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
        return cls(dist.get_rank(), dist.get_world_size(), owns)

    @property
    def main(self) -> bool:
        """The rank that logs, stores and writes checkpoints."""
        return self.rank == 0

    def device(self, device: str) -> str:
        """This rank's device: plain ``cuda`` becomes its own GPU (``cuda:LOCAL_RANK``)."""
        if self.size == 1 or device != "cuda":
            return device
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return f"cuda:{local}"

    def shard(self, items: Sequence[T]) -> list[T]:
        """This rank's contiguous share of ``items`` (sizes differ by at most one)."""
        base, extra = divmod(len(items), self.size)
        start = self.rank * base + min(self.rank, extra)
        return list(items[start : start + base + (self.rank < extra)])

    def gather(self, mine: Sequence[T]) -> list[T]:
        """Every rank's share, concatenated in rank order (the order :meth:`shard` split)."""
        if self.size == 1:
            return list(mine)
        parts: list[Any] = [None] * self.size
        dist.all_gather_object(parts, list(mine))
        return [item for part in parts for item in part]

    def rows(self, count: int) -> list[int]:
        """This rank's rows of a batch of ``count`` (strided: length-sorted rows spread evenly)."""
        return list(range(self.rank, count, self.size))

    def sum_grads(self, params: Sequence[torch.Tensor]) -> None:
        """Sum every parameter's gradient over the ranks, in one flat all-reduce.

        A parameter no rank gave a gradient keeps none (as in one process, AdamW skips it); one
        some rank did gets zeros where it had none, then the sum.
        """
        if self.size == 1 or not params:
            return
        device = params[0].device
        has = torch.tensor([p.grad is not None for p in params], dtype=torch.uint8, device=device)
        dist.all_reduce(has, op=dist.ReduceOp.MAX)
        live = [p for p, h in zip(params, has.tolist(), strict=True) if h]
        for p in live:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if not live:
            return
        flat = torch.cat([p.grad.reshape(-1) for p in live])
        dist.all_reduce(flat)
        offset = 0
        for p in live:
            n = p.grad.numel()
            p.grad.copy_(flat[offset : offset + n].view_as(p.grad))
            offset += n

    def sum_metrics(self, mine: dict[str, float]) -> dict[str, float]:
        """Per-key sums of the ranks' shares of a batch's metrics (a key any rank has)."""
        if self.size == 1:
            return mine
        total: dict[str, float] = {}
        for part in self.gather([mine]):
            for key, value in part.items():
                total[key] = total.get(key, 0.0) + value
        return total

    def broadcast(self, tensors: Sequence[torch.Tensor]) -> None:
        """Rank 0's values in every rank's ``tensors`` (the ranks start from one set of weights)."""
        if self.size == 1:
            return
        for t in tensors:
            dist.broadcast(t.data, src=0)

    def barrier(self) -> None:
        """Wait for every rank (after rank 0 writes what the others may read)."""
        if self.size > 1:
            dist.barrier()

    def close(self) -> None:
        """End the process group if this object started it."""
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()
