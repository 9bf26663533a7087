"""``--backend local|ray`` and ``--ray-address`` for the long commands, and the specs a Ray worker rebuilds from the
command's options (issue 14, item 1; docs/ray.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

__all__ = ["add_backend", "on_backend", "inputs_spec", "models_spec"]

R = TypeVar("R")


def add_backend(parser: argparse.ArgumentParser, *, unit: str) -> None:
    """Add ``--backend`` and ``--ray-address``; ``unit`` says what one task is (for the help text)."""
    from ..backends.executor import BACKENDS

    parser.add_argument("--backend", choices=list(BACKENDS), default="local",
                        help=f"where the work runs: here (local, default) or on Ray actors, one task per {unit}; "
                             "same results for the same --seed (docs/ray.md)")
    parser.add_argument("--ray-address", default=None,
                        help="with --backend ray: leave out to start a local Ray runtime, 'auto' to join the cluster "
                             "this machine is part of (ray start), or ray://<head>:10001")


def on_backend(args, local: Callable[[], R], remote: Callable[[object], R]) -> R:
    """``local()`` for ``--backend local`` (the command's own code, unchanged); otherwise ``remote(backend)`` on the
    chosen backend, released afterwards (a local Ray runtime started here is shut down)."""
    from ..backends.factory import make_backend

    if args.backend == "local" and args.ray_address is None:
        return local()
    with make_backend(args.backend, address=args.ray_address) as backend:
        return remote(backend)


def inputs_spec(args):
    """The collection and retriever of the common options, as a Ray worker loads them."""
    from ..backends.workloads import InputsSpec

    return InputsSpec(args.collection, retriever=args.retriever, model=args.model, device=args.device)


def models_spec(args):
    """The generator and NLI attributor of the options, by name, as a Ray worker loads them."""
    from ..backends.workloads import CatalogModels

    return CatalogModels(generator_name=getattr(args, "generator", None),
                         prompt_style=getattr(args, "prompt_style", None), nli=getattr(args, "nli", None),
                         device=args.device)
