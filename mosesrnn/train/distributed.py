"""Training on several processes: torchrun's environment, DistributedDataParallel, one writer.

Under ``torchrun --nproc-per-node N -m mosesrnn train ...`` every process (rank) runs the same
command. Each rank holds the training data and the model; the loop draws one global minibatch of
N x ``--batch-size`` examples from the seeded permutation that every rank computes alike, and rank
r trains on its share (every N-th example from the r-th). DistributedDataParallel averages the
gradients, so an update equals a single process's update on the whole global batch (the mean of
the ranks' mean losses). Rank 0 validates, writes the model files, the state, the log and the plot;
the others follow its decisions (when to stop, what was best). The ranks compare a fingerprint of
their data first and stop with one line when they differ. Backend: NCCL on GPUs (one per rank,
``LOCAL_RANK``), gloo on CPUs.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

from ..errors import MosesRNNError

__all__ = ["Ranks", "PeerLost", "ranks_from_environment", "start", "same_data", "broadcast", "any_rank",
           "peers_alive", "finish"]


@dataclass(frozen=True)
class Ranks:
    """This process' place among the training processes (one process: rank 0 of 1)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Whether this process writes files and logs."""
        return self.rank == 0

    def share(self, index: np.ndarray) -> np.ndarray:
        """This rank's part of a global minibatch: every ``world``-th index from the ``rank``-th."""
        return index[self.rank::self.world]


def ranks_from_environment() -> Ranks:
    """The ranks torchrun describes in ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (one process without them)."""
    if "WORLD_SIZE" not in os.environ:
        return Ranks()
    return Ranks(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0)))


_joined = False  # whether start() made the process group (a caller's own group is the caller's to leave)


#: The DistributedDataParallel of each finished run, never freed (see :func:`finish`).
_KEPT: list = []


def start(ranks: Ranks, device: str) -> str:
    """Join the process group (gloo on CPU, NCCL on GPU); returns this rank's device."""
    if ranks.world == 1 or dist.is_initialized():
        return device
    if device.startswith("cuda"):
        torch.cuda.set_device(ranks.local_rank)
        device = f"cuda:{ranks.local_rank}"
    global _joined
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    _joined = True
    return device


def finish(ranks: Ranks, network=None) -> None:
    """Leave the process group that :func:`start` joined, after the run's last collective and on success only
    (a rank whose peer failed could wait on it). A process that exits with gloo's threads still running can
    abort with "terminate called without an active exception" (pytorch/pytorch#190489).

    ``network``, the run's DistributedDataParallel, is kept for the life of the process: its reducer holds the
    gloo process group, and freeing it afterwards once deadlocked a rank in ``~ProcessGroupGloo`` (a mutex never
    released, the other rank gone). A torchrun process ends by ``os._exit`` (:func:`mosesrnn.cli.run`), so it is
    never freed."""
    global _joined
    if ranks.world > 1 and _joined and dist.is_initialized():
        dist.destroy_process_group()
        _joined = False
    if ranks.world > 1 and network is not None:
        _KEPT.append(network)


def same_data(ranks: Ranks, fingerprint: str) -> None:
    """Raise MosesRNNError (on every rank) unless every rank read the same data."""
    if ranks.world == 1:
        return
    everyone: list = [None] * ranks.world
    dist.all_gather_object(everyone, fingerprint)
    differing = [rank for rank, theirs in enumerate(everyone) if theirs != everyone[0]]
    if differing:
        raise MosesRNNError(f"the training processes read different data: rank 0 has {everyone[0]}, rank "
                            f"{differing[0]} has {everyone[differing[0]]}; give every rank the same files and options")


def broadcast(ranks: Ranks, value):
    """Rank 0's ``value`` on every rank (any picklable value)."""
    if ranks.world == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def any_rank(ranks: Ranks, flag: bool, device: str | torch.device = "cpu") -> bool:
    """Whether ``flag`` is true on some rank (a stop request reaches one rank, all stop together)."""
    if ranks.world == 1:
        return flag
    value = torch.tensor([int(flag)], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


class PeerLost(MosesRNNError):
    """Another process of a torchrun run stopped, so this one cannot go on; the message says how to continue."""


_LOST = ("connection", "closed", "reset", "broken pipe", "gloo", "nccl", "timed out", "timeout")


@contextlib.contextmanager
def peers_alive(ranks: Ranks, output_dir: str):
    """Turn a collective that failed because another rank died (killed, out of memory) into one
    :class:`PeerLost` line instead of a traceback through the loop."""
    try:
        yield
    except RuntimeError as error:
        lost = isinstance(error, getattr(dist, "DistBackendError", ())) or any(
            word in str(error).lower() for word in _LOST)
        if ranks.world == 1 or not lost:
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PeerLost(f"rank {ranks.rank}: another process of this torchrun run stopped ({first[:160]}); what was "
                       f"saved at the last validation is in {output_dir}, and the same command continues from "
                       f"there") from None
