"""Device choice: ``None``/"auto" → cuda → mps → cpu; anything else is checked, not silently replaced."""

from __future__ import annotations

from ..errors import InvalidParameterError

__all__ = ["resolve_device"]


def resolve_device(device: str | None = None) -> str:
    """Return a torch device string. ``None`` or ``"auto"`` picks the best available accelerator.

    Raises:
        InvalidParameterError: an explicit ``"cuda"``/``"mps"`` that this machine does not have.
    """
    import torch

    wanted = (device or "auto").lower()
    if wanted == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    base = wanted.split(":")[0]
    if base == "cuda" and not torch.cuda.is_available():
        raise InvalidParameterError("device 'cuda' requested but no CUDA GPU is visible; use device='cpu' or 'auto'")
    if base == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise InvalidParameterError("device 'mps' requested but Apple MPS is not available; use 'cpu' or 'auto'")
    if base not in ("cpu", "cuda", "mps"):
        raise InvalidParameterError(f"unknown device {device!r}; use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'")
    return wanted
