"""A backend by the name a command gives it (``--backend local|ray``, ``--ray-address``)."""

from __future__ import annotations

from ..errors import InvalidParameterError
from .executor import BACKENDS, Backend, LocalBackend
from .ray_backend import RayBackend

__all__ = ["make_backend"]


def make_backend(name: str = "local", *, address: str | None = None, num_cpus: int | None = None) -> Backend:
    """The backend called ``name`` (``local`` or ``ray``).

    ``address`` (Ray only): ``None`` starts a local Ray runtime with ``num_cpus`` CPUs (default: all), ``auto``
    joins the cluster this machine belongs to (``ray start``), ``ray://host:10001`` joins one through Ray Client.
    """
    if name == "local":
        if address is not None:
            raise InvalidParameterError("--ray-address needs --backend ray")
        return LocalBackend()
    if name == "ray":
        return RayBackend(address, num_cpus=num_cpus)
    raise InvalidParameterError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
