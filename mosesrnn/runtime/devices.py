"""Choosing where the model runs."""
from __future__ import annotations

__all__ = ["resolve_device"]


def resolve_device(device: str) -> str:
    """``auto`` is ``cuda`` if a GPU is available, else ``cpu``; ``cuda`` without a GPU raises ValueError."""
    import torch  # here, so that choosing options does not load torch
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda, but torch sees no GPU")
    return device
