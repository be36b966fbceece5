"""Choosing where the model runs, and the batch size that suits it."""
from __future__ import annotations

from ..errors import MosesRNNError

__all__ = ["BATCH_TOKENS", "resolve_device", "default_batch_tokens"]

#: ``--batch-tokens``' default by device type: target tokens (rows x longest length) per decoder batch. A GPU
#: needs wider batches than a CPU to keep its cores busy (issue 41); the values do not depend on it (fp32: 1e-5).
BATCH_TOKENS = {"cpu": 4096, "cuda": 32768}


def resolve_device(device: str) -> str:
    """``auto`` is ``cuda`` if a GPU is available, else ``cpu``; ``cuda`` without a GPU raises MosesRNNError."""
    import torch  # here, so that choosing options does not load torch
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise MosesRNNError("--device cuda, but torch sees no GPU")
    return device


def default_batch_tokens(device: str) -> int:
    """``--batch-tokens``' default on a resolved ``device`` (``cpu``, ``cuda``, ``cuda:1``): :data:`BATCH_TOKENS`."""
    return BATCH_TOKENS[device.split(":")[0]]
