"""RichRAG's generative list-wise ranker, the torch half: the pointer network, batching, decoding, safetensors I/O
(the SFT and DPO loops: :mod:`.listwise_training`).

Wang et al., "RichRAG", §3.4 (Eq. 5–7, 10, 12). The paper fine-tunes a FiD-style Flan-T5: every candidate is encoded
as ``[D_i] q [Q] s_1 [E] … s_n [S] d_i`` in parallel, the docid position is pooled into e_i, and a decoder emits k
docids through an LM head whose matrix is F = [e_1 … e_M] (Eq. 7: p^t = Softmax(M(h^t F / τ)), M masks the ids
already emitted). Ours, sized for a 2-core CPU and 45 training queries:

* **Encoder (frozen).** The FiD strings are encoded by the offline MiniLM (mean pooling, the pooling it was
  trained with, instead of a docid token) *outside* this module, once, and cached (``fairrag_core.richrag``):
  fine-tuning 22 M parameters on 45 queries would overfit and cost the CPU budget many times over, while the
  cached vectors make an epoch take a fraction of a second. Everything below is trained from scratch.
* **Coverage head.** φ̂_ij = σ(MLP(pair_ij ; doc features_i)) predicts φ(d_i, a_j) from cos(Enc(d), Enc(q ∘ s_j)),
  cos(e_i, Enc(q ∘ s_j)), 1[j ∈ s(d_i)], 1 / rank, |s(d)|/n and log length (``bilinear`` adds f_i·W·a_j). With
  ``detach_coverage`` it learns from the auxiliary MSE(φ̂, φ) only (the NTP gradient, much larger, otherwise bends it
  into a feature for the pointer and it stops predicting coverage).
* **Candidate tokens.** f_i = MLP([e_i ; doc features]) + Σ_j φ̂_ij z_j: the predicted coverage profile written into
  fixed orthonormal *aspect slots* z_j. Aspect tokens are MLP(Enc(q ∘ s_j)) + z_j. Training shuffles the aspect
  order, so no slot means anything on its own. ``input_dropout`` drops frozen-vector entries in training.
* **Decoder.** ``layers`` transformer decoder layers read [BOS, t_{y_1}, …, t_{y_{t−1}}] (causal) and attend to the
  memory [aspect tokens ; candidate tokens]. The pointer head is Eq. 7 with unit vectors plus a coverage bias:
  p^t(i) = Softmax_i(M((ρ·cos(W h^t, t_i) + γ·Σ_j w_j^t φ̂_ij) / τ)), τ = 0.1 as the paper, w^t = Eq. 9 on the
  predicted coverage of the picks so far (a coverage vector, as in See et al. 2017's pointer-generator); ρ and γ
  are learned (``coverage_bias=False`` keeps Eq. 7 alone). Padded candidates and picked ids get −∞.
* **Losses** (:mod:`.listwise_training`). SFT: next-token prediction on the greedy silver list (Eq. 10) plus
  ``aux_weight`` × MSE(φ̂, φ). DPO (Eq. 12 with the usual minus sign):
  −log σ(β[(log π_θ(y_w) − log π_f(y_w)) − (log π_θ(y_l) − log π_f(y_l))]), π_f the frozen SFT model.

Why the coverage bias: with 45 training queries the pure pointer (Eq. 7 alone) overfits the frozen vectors of the
training documents; in 4-fold cross-validation on the training queries it stayed below per-aspect round robin
(NCOM@5 ≈ 0.90 vs 0.93), while greedy decoding on a learned φ̂ generalises (docs/richrag-ranker.md).

Torch is imported inside functions only (the network class is built on first use), so importing this module costs
nothing. Instances are duck-typed: anything with ``doc_vectors`` (M, D), ``doc_extra`` (M, F), ``aspect_vectors``
(n, D), ``pair`` (M, n, P) and, for training, ``target`` (silver list) and ``phi`` (M, n)
(:class:`fairrag_core.richrag.ranker.RankerFeatures` is one).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidParameterError
from ..settings import Settings

__all__ = ["Architecture", "deterministic_torch", "describe", "clone", "build_network", "network_from_state",
           "state_dict_arrays", "decode", "list_log_probs", "first_step_scores", "save_weights", "load_weights"]


@dataclass(frozen=True, kw_only=True)
class Architecture(Settings):
    """Shape of the pointer network (saved with the weights)."""

    input_dim: int = 384  # MiniLM vectors
    doc_features: int = 2
    pair_features: int = 4
    hidden: int = 128
    heads: int = 4
    layers: int = 2
    feedforward: int = 256
    dropout: float = 0.1
    input_dropout: float = 0.2  # on the frozen vectors e_i and Enc(q ∘ s_j), in training only
    coverage_bias: bool = True  # add γ · (Eq. 8's gain on φ̂) to the pointer logits; False = Eq. 7 alone
    coverage_init: float = 5.0  # γ at initialisation (learned)
    bilinear: bool = False  # add f_i·W·a_j (learned embeddings) to the pair logits
    pointer_init: float = 1.0  # learned scale of the pointer term cos(W h^t, t_i) at initialisation
    detach_coverage: bool = False  # train φ̂ by the auxiliary loss only (no NTP gradient through φ̂)
    max_aspects: int = 8
    max_steps: int = 16
    tau: float = 0.1
    slot_seed: int = 0


@functools.cache
def _network_class():
    import torch
    from torch import nn

    class PointerRanker(nn.Module):
        """FiD-pooled candidates → aspect-slot tokens → transformer decoder → pointer over candidates (Eq. 7)."""

        def __init__(self, arch: Architecture) -> None:
            super().__init__()
            h = arch.hidden
            self.arch = arch
            self.input_dropout = nn.Dropout(arch.input_dropout)
            self.doc_proj = nn.Sequential(nn.Linear(arch.input_dim + arch.doc_features, h), nn.GELU(), nn.Linear(h, h))
            self.aspect_proj = nn.Sequential(nn.Linear(arch.input_dim, h), nn.GELU(), nn.Linear(h, h))
            self.pair_mlp = nn.Sequential(nn.Linear(arch.pair_features + arch.doc_features, 32), nn.GELU(),
                                          nn.Linear(32, 1))
            self.bilinear = nn.Linear(h, h, bias=False) if arch.bilinear else None
            gen = torch.Generator().manual_seed(arch.slot_seed)
            slots, _ = torch.linalg.qr(torch.randn(h, arch.max_aspects, generator=gen))
            self.register_buffer("slots", slots.T.contiguous())  # (max_aspects, h), orthonormal rows
            self.type_embedding = nn.Embedding(2, h)
            self.step_embedding = nn.Embedding(arch.max_steps, h)
            self.bos = nn.Parameter(torch.zeros(h))
            layer = nn.TransformerDecoderLayer(h, arch.heads, arch.feedforward, arch.dropout, batch_first=True,
                                               norm_first=True)
            self.decoder = nn.TransformerDecoder(layer, arch.layers)
            self.norm = nn.LayerNorm(h)
            self.query_head = nn.Linear(h, h)
            self.pointer_scale = nn.Parameter(torch.tensor(float(arch.pointer_init)))
            gamma = torch.tensor(float(arch.coverage_init))
            if arch.coverage_bias:
                self.coverage_gain = nn.Parameter(gamma)
            else:
                self.register_buffer("coverage_gain", torch.zeros(()))

        def encode(self, batch) -> dict:
            """Candidate tokens t_i (B, M, h), the memory and its padding mask, pair logits A and φ̂ = σ(A) (B, M, n)."""
            f = self.doc_proj(torch.cat([self.input_dropout(batch["docs"]), batch["doc_extra"]], dim=-1))
            a = self.aspect_proj(self.input_dropout(batch["aspects"]))
            n = a.shape[1]
            extra = batch["doc_extra"][:, :, None, :].expand(-1, -1, n, -1)
            pair = self.pair_mlp(torch.cat([batch["pair"], extra], dim=-1)).squeeze(-1)
            if self.bilinear is not None:
                pair = pair + torch.einsum("bmh,bnh->bmn", self.bilinear(f), a) / math.sqrt(f.shape[-1])
            aspect_mask = batch["aspect_mask"]
            phi_hat = torch.sigmoid(pair) * aspect_mask[:, None, :]
            if self.arch.detach_coverage:  # φ̂ learns from the auxiliary loss only; NTP trains the rest
                phi_hat = phi_hat.detach()
            slots = self.slots[:n]
            tokens = f + phi_hat @ slots
            aspects = a + slots[None] + self.type_embedding.weight[0]
            memory = torch.cat([aspects, tokens + self.type_embedding.weight[1]], dim=1)
            pad = torch.cat([~aspect_mask, ~batch["doc_mask"]], dim=1)
            return {"tokens": tokens, "memory": memory, "pad": pad, "pair": pair, "phi_hat": phi_hat,
                    "aspect_mask": aspect_mask}

        def coverage_gains(self, state, prefix):
            """Σ_j w_j^t φ̂_ij for every step (B, T, M): Eq. 8–9 on the predicted coverage of the picks so far."""
            phi_hat, mask = state["phi_hat"], state["aspect_mask"].to(state["phi_hat"].dtype)
            b, n = phi_hat.shape[0], phi_hat.shape[2]
            covered = torch.zeros((b, prefix.shape[1] + 1, n), dtype=phi_hat.dtype, device=phi_hat.device)
            if prefix.shape[1]:
                rows = torch.gather(phi_hat, 1, prefix.clamp(min=0)[..., None].expand(-1, -1, n))
                rows = rows * (prefix >= 0)[..., None]
                covered[:, 1:] = torch.cummax(rows, dim=1).values
            gap = (1.0 - covered).clamp(min=0) * mask[:, None, :]
            total = gap.sum(dim=-1, keepdim=True)
            uniform = mask[:, None, :] / mask.sum(dim=-1, keepdim=True)[:, None, :].clamp(min=1)
            weights = torch.where(total > 1e-6, gap / total.clamp(min=1e-6), uniform)
            return torch.einsum("btn,bmn->btm", weights, phi_hat)

        def step_logits(self, state, prefix):
            """Pointer logits (B, T, M) for every step given the picks ``prefix`` (B, T−1) (teacher forcing)."""
            tokens = state["tokens"]
            b, steps = prefix.shape[0], prefix.shape[1] + 1
            picked = torch.gather(tokens, 1, prefix.clamp(min=0)[..., None].expand(-1, -1, tokens.shape[-1]))
            inputs = torch.cat([self.bos.expand(b, 1, -1), picked], dim=1)
            inputs = inputs + self.step_embedding.weight[:steps]
            causal = torch.triu(torch.ones(steps, steps, dtype=torch.bool, device=inputs.device), diagonal=1)
            hidden = self.decoder(inputs, state["memory"], tgt_mask=causal, memory_key_padding_mask=state["pad"])
            query = nn.functional.normalize(self.query_head(self.norm(hidden)), dim=-1)
            keys = nn.functional.normalize(tokens, dim=-1)
            pointer = self.pointer_scale * torch.einsum("bth,bmh->btm", query, keys)
            return (pointer + self.coverage_gain * self.coverage_gains(state, prefix)) / self.arch.tau

    return PointerRanker


def _torch():
    import torch

    return torch


@contextlib.contextmanager
def deterministic_torch(threads: int = 1):
    """Deterministic kernels and a fixed thread count while training (restored afterwards): the same seed gives
    the same weights, bit for bit, on the same machine. The network is small; one thread is enough."""
    torch = _torch()
    old_threads, old_flag = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_flag)


def _deterministic(fn):
    """Run ``fn`` inside :func:`deterministic_torch`: small networks are faster on one thread (and on a shared
    2-core machine several threads can be 50× slower), and results do not depend on the thread count."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with deterministic_torch():
            return fn(*args, **kwargs)

    return wrapper


def describe(net) -> dict:
    """Trainable parameter count and the torch version (for the model card)."""
    torch = _torch()
    return {"parameters": sum(int(p.numel()) for p in net.parameters()), "torch": torch.__version__}


def clone(net):
    """An independent copy of a network (e.g. the SFT model kept before DPO changes it)."""
    import copy

    return copy.deepcopy(net).eval()


def build_network(arch: Architecture, *, seed: int):
    """A freshly initialised network (torch's RNG seeded with ``seed``)."""
    torch = _torch()
    torch.manual_seed(seed)
    return _network_class()(arch)


# -- batching ----------------------------------------------------------------------------------------------------
def _pad(arrays: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros((len(arrays), *shape), dtype=np.float32)
    for i, arr in enumerate(arrays):
        out[(i, *tuple(slice(0, s) for s in arr.shape))] = arr
    return out


def _batch(instances: Sequence, device: str, *, lists: Sequence[Sequence[int]] | None = None) -> dict:
    """Pad a list of instances into tensors. ``lists`` (default: each instance's ``target``) are padded with −1."""
    torch = _torch()
    m = max(len(x.doc_vectors) for x in instances)
    n = max(len(x.aspect_vectors) for x in instances)
    dim = instances[0].doc_vectors.shape[1]
    batch = {
        "docs": _pad([x.doc_vectors for x in instances], (m, dim)),
        "doc_extra": _pad([x.doc_extra for x in instances], (m, instances[0].doc_extra.shape[1])),
        "aspects": _pad([x.aspect_vectors for x in instances], (n, dim)),
        "pair": _pad([x.pair for x in instances], (m, n, instances[0].pair.shape[2])),
    }
    out = {key: torch.from_numpy(value).to(device) for key, value in batch.items()}
    out["doc_mask"] = torch.from_numpy(_pad([np.ones(len(x.doc_vectors)) for x in instances], (m,)) > 0).to(device)
    out["aspect_mask"] = torch.from_numpy(
        _pad([np.ones(len(x.aspect_vectors)) for x in instances], (n,)) > 0).to(device)
    if lists is None and getattr(instances[0], "target", None) is not None:
        lists = [x.target for x in instances]
    if lists is not None:
        k = max(len(y) for y in lists)
        arr = np.full((len(lists), k), -1, dtype=np.int64)
        for i, y in enumerate(lists):
            arr[i, : len(y)] = y
        out["lists"] = torch.from_numpy(arr).to(device)
    phi = getattr(instances[0], "phi", None)
    if phi is not None:
        out["phi"] = torch.from_numpy(_pad([x.phi for x in instances], (m, n))).to(device)
    return out


def _masked_logits(logits, doc_mask, lists):
    """Eq. 7's M(): −∞ on padding and on every id picked at an earlier step."""
    torch = _torch()
    steps = logits.shape[1]
    blocked = ~doc_mask[:, None, :].expand(-1, steps, -1).clone()
    for t in range(1, steps):
        prev = lists[:, :t]
        hit = torch.zeros_like(blocked[:, t]).scatter_(1, prev.clamp(min=0), prev >= 0)
        blocked[:, t] |= hit
    return logits.masked_fill(blocked, float("-inf"))


def _sequence_log_probs(net, batch):
    """log π(y | x) of ``batch["lists"]`` (B,), summed over the list's steps (padding −1 ignored), and pair logits."""
    torch = _torch()
    lists = batch["lists"]
    state = net.encode(batch)
    logits = _masked_logits(net.step_logits(state, lists[:, :-1]), batch["doc_mask"], lists)
    logp = torch.log_softmax(logits, dim=-1)
    chosen = torch.gather(logp, 2, lists.clamp(min=0)[..., None]).squeeze(-1)
    return torch.where(lists >= 0, chosen, torch.zeros_like(chosen)).sum(dim=1), state["pair"]


# -- inference ----------------------------------------------------------------------------------------------------
@_deterministic
def decode(net, instances: Sequence, k: int, *, device: str = "cpu", sample: bool = False, seed: int | None = None,
           batch_size: int = 256) -> list[list[int]]:
    """Emit k candidate positions per instance: greedy (argmax, Eq. 7 at inference) or sampled from p^t.

    Ties go to the lower position. ``sample=True`` draws every step from p^t (the US³ sampled lists).
    """
    torch = _torch()
    net.to(device).eval()
    gen = torch.Generator(device=device).manual_seed(0 if seed is None else seed)
    out: list[list[int]] = []
    with torch.no_grad():
        for start in range(0, len(instances), batch_size):
            chunk = instances[start: start + batch_size]
            batch = _batch(chunk, device, lists=[[] for _ in chunk])
            state = net.encode(batch)
            sizes = batch["doc_mask"].sum(dim=1)
            steps = min(k, int(sizes.min()))
            picks = torch.zeros((len(chunk), 0), dtype=torch.long, device=device)
            for _ in range(steps):
                logits = net.step_logits(state, picks)[:, -1]
                blocked = ~batch["doc_mask"].clone()
                if picks.shape[1]:
                    blocked.scatter_(1, picks, True)
                logits = logits.masked_fill(blocked, float("-inf"))
                if sample:
                    nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)
                else:
                    nxt = logits.argmax(dim=-1, keepdim=True)
                picks = torch.cat([picks, nxt], dim=1)
            out.extend(picks.cpu().tolist())
    return out


@_deterministic
def list_log_probs(net, instances: Sequence, lists: Sequence[Sequence[int]], *, device: str = "cpu") -> np.ndarray:
    """log π(y | x) of the given lists under the network (no gradient)."""
    torch = _torch()
    net.to(device).eval()
    with torch.no_grad():
        logp, _ = _sequence_log_probs(net, _batch(list(instances), device, lists=lists))
    return logp.cpu().numpy().astype(np.float64)


@_deterministic
def first_step_scores(net, instances: Sequence, *, device: str = "cpu") -> list[np.ndarray]:
    """Pointer logits h^1·F/τ of the first step, one score per candidate: the ranker's scores for Plackett-Luce."""
    torch = _torch()
    net.to(device).eval()
    with torch.no_grad():
        batch = _batch(list(instances), device, lists=[[] for _ in instances])
        empty = torch.zeros((len(instances), 0), dtype=torch.long, device=device)
        logits = net.step_logits(net.encode(batch), empty)[:, 0].cpu().numpy().astype(np.float64)
    return [logits[i, : len(x.doc_vectors)] for i, x in enumerate(instances)]


# -- weights ----------------------------------------------------------------------------------------------------
def state_dict_arrays(net) -> dict[str, np.ndarray]:
    """The network's tensors as contiguous float32 numpy arrays, keys sorted (what :func:`save_weights` writes)."""
    return {key: value.detach().cpu().contiguous().numpy() for key, value in sorted(net.state_dict().items())}


def save_weights(net, path: str | Path, *, metadata: dict[str, str] | None = None) -> Path:
    """Write the weights as safetensors (never pickle). The header carries one metadata entry, ``fairrag``: a
    key-sorted JSON object with the architecture and ``metadata`` (one entry because safetensors writes several in
    no fixed order, and the file's sha256 must not change between identical runs)."""
    from safetensors.numpy import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {**(metadata or {}), "architecture": net.arch.to_dict()}
    save_file(state_dict_arrays(net), str(path), metadata={"fairrag": json.dumps(meta, sort_keys=True)})
    return path


def network_from_state(arch: Architecture, arrays: dict[str, np.ndarray]):
    """A network with the given tensors loaded (strict: every key must match)."""
    torch = _torch()
    net = _network_class()(arch)
    net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in arrays.items()}, strict=True)
    return net.eval()


def load_weights(path: str | Path):
    """Load a safetensors file written by :func:`save_weights` (the caller verifies its sha256 first).

    Returns the network (eval mode) and the metadata dict (with ``architecture``)."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    with safe_open(str(path), framework="numpy") as handle:
        header = handle.metadata() or {}
    meta = json.loads(header["fairrag"]) if "fairrag" in header else {}
    if "architecture" not in meta:
        raise InvalidParameterError(f"{path} has no 'architecture' metadata; write it with save_weights()")
    arch = Architecture.from_dict(meta["architecture"])
    return network_from_state(arch, load_file(str(path))), meta
