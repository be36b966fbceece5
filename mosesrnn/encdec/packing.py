"""The bookkeeping of the fast scoring order, done on the host so that a GPU never waits for it.

The scoring order (:meth:`mosesrnn.encdec.decoder.C14Decoder.sequence_log_prob`) sorts a batch's rows by
decreasing length and runs step t of the recurrence on the n_t rows still going; the output layer then reads the
real (row, step) positions alone. Which rows and steps those are depends on the lengths only, and the lengths
come from numpy arrays (:mod:`mosesrnn.text.id_arrays`): computed here from the host's copy, the order, the
n_t and the positions cost no wait for the device. Read back from a GPU tensor (``.tolist()``), they would
stop the host once per batch until the device has finished everything queued before.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

__all__ = ["Packing", "host_lengths", "packing", "to_device"]


@dataclass(frozen=True)
class Packing:
    """The scoring order of one batch.

    Attributes:
        order: the rows sorted by decreasing length (stable), their input positions, shape (B,), on the device.
        active: n_t, the rows still going at each step t (non-increasing, all > 0), on the host.
        rows: each real position's row in the sorted batch, step-major, shape (N,), on the device.
        steps: each real position's step, shape (N,), on the device.
    """

    order: Tensor
    active: list[int]
    rows: Tensor
    steps: Tensor


def to_device(array: np.ndarray, device: torch.device | str) -> Tensor:
    """``array`` as a tensor on ``device``: itself on a CPU; else copied from pinned memory without waiting."""
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type == "cpu":
        return tensor
    return tensor.pin_memory().to(device, non_blocking=True)


def host_lengths(given: np.ndarray | Tensor | None, lengths: Tensor) -> np.ndarray:
    """The host's copy of ``lengths``: ``given`` where the caller has it (the scorer does), else read back
    from ``lengths`` (on a GPU, a wait: training and analysis pay it once per batch, as before)."""
    if given is None:
        given = lengths
    if isinstance(given, Tensor):
        given = given.detach().cpu().numpy()
    return np.asarray(given, dtype=np.int64)


def packing(lengths: np.ndarray, device: torch.device | str) -> Packing:
    """The scoring order of rows of ``lengths`` (host, (B,)), its index tensors on ``device``; rows of length
    0 have no position (RCTM II's m = 0)."""
    order = np.argsort(-lengths, kind="stable")  # as torch.argsort(descending=True, stable=True)
    longest = int(lengths.max(initial=0))
    active = np.bincount(lengths.clip(0, None), minlength=longest + 1)[::-1].cumsum()[::-1][1:]  # n_t, t < longest
    starts = np.cumsum(active) - active  # where each step's positions begin
    steps = np.repeat(np.arange(longest, dtype=np.int64), active)
    rows = np.arange(int(active.sum()), dtype=np.int64) - np.repeat(starts, active)
    return Packing(to_device(order, device), active.tolist(), to_device(rows, device), to_device(steps, device))
