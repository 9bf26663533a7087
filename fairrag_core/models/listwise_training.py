"""RichRAG's list-wise ranker, training: stage 1 SFT (Eq. 10, + the coverage MSE) and stage 2 DPO (Eq. 12).

Wang et al., "RichRAG", §3.4.1–3.4.2. The network, its batching and inference live in :mod:`.listwise_ranker`;
the data (silver lists, augmentation, US³ pairs) in :mod:`fairrag_core.richrag.train`. Both loops run on one thread
with torch's deterministic kernels (:func:`~.listwise_ranker.deterministic_torch`): the same seed gives the same
weights, bit for bit, on the same machine. Torch is imported inside the functions only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameterError
from ..settings import Settings
from . import listwise_ranker as lr

__all__ = ["Optimisation", "train_sft", "train_dpo", "dpo_loss"]


@dataclass(frozen=True, kw_only=True)
class Optimisation(Settings):
    """One training stage's optimiser settings."""

    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    aux_weight: float = 1.0  # SFT only: weight of the pair-coverage MSE (0 = the paper's pure NTP loss)
    beta: float = 0.1  # DPO only
    head_lr_scale: float = 10.0
    clip: float = 1.0


def _aux_loss(pair, batch):
    import torch
    mask = batch["doc_mask"][:, :, None] & batch["aspect_mask"][:, None, :]
    err = (torch.sigmoid(pair) - batch["phi"]) ** 2
    return (err * mask).sum() / mask.sum().clamp(min=1)


def _optimiser(net, opt: Optimisation):
    """AdamW; the pair head (a 6-feature MLP) and the two logit scales learn ``head_lr_scale`` × faster: with a few
    hundred steps per run they would otherwise stay near their initial values."""
    import torch
    fast = [p for name, p in net.named_parameters()
            if name.startswith("pair_mlp.") or name in ("coverage_gain", "pointer_scale")]
    ids = {id(p) for p in fast}
    slow = [p for p in net.parameters() if id(p) not in ids]
    return torch.optim.AdamW([{"params": slow}, {"params": fast, "lr": opt.lr * opt.head_lr_scale}], lr=opt.lr,
                             weight_decay=opt.weight_decay)


@lr._deterministic
def train_sft(net, instances: Sequence | Callable[[int], Sequence], opt: Optimisation, *, seed: int,
              device: str = "cpu", log: Callable[[dict], None] | None = None) -> list[dict]:
    """Stage 1 (Eq. 10): NTP on each instance's ``target`` silver list (+ ``aux_weight`` × pair MSE against φ).

    ``instances`` is a list, or a function ``epoch → list`` (fresh augmentations every epoch). Returns one row per
    epoch: mean NTP loss per list, mean auxiliary loss.
    """
    import torch

    torch.manual_seed(seed)
    net.to(device).train()
    optimiser = _optimiser(net, opt)
    history = []
    for epoch in range(opt.epochs):
        data = instances(epoch) if callable(instances) else instances
        order = np.random.default_rng([seed, epoch]).permutation(len(data))
        ntp_sum = aux_sum = 0.0
        for start in range(0, len(data), opt.batch_size):
            batch = lr._batch([data[i] for i in order[start: start + opt.batch_size]], device)
            logp, pair = lr._sequence_log_probs(net, batch)
            ntp = -logp.mean()
            aux = _aux_loss(pair, batch) if opt.aux_weight > 0 else torch.zeros(())
            loss = ntp + opt.aux_weight * aux
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), opt.clip)
            optimiser.step()
            size = batch["lists"].shape[0]
            ntp_sum += float(ntp.detach()) * size
            aux_sum += float(aux.detach()) * size
        row = {"stage": "sft", "epoch": epoch + 1, "ntp_loss": ntp_sum / len(data), "aux_loss": aux_sum / len(data)}
        history.append(row)
        if log:
            log(row)
    net.eval()
    return history


def dpo_loss(policy_w, policy_l, ref_w, ref_l, beta: float):
    """Eq. 12 as a loss to minimise: −log σ(β[(log π_θ(y_w) − log π_f(y_w)) − (log π_θ(y_l) − log π_f(y_l))])."""
    import torch
    margin = (policy_w - ref_w) - (policy_l - ref_l)
    return -torch.nn.functional.logsigmoid(beta * margin)


@lr._deterministic
def train_dpo(net, pairs: Sequence[tuple[object, Sequence[int], Sequence[int]]], opt: Optimisation, *, seed: int,
              device: str = "cpu", log: Callable[[dict], None] | None = None) -> list[dict]:
    """Stage 2 (Eq. 12): DPO on (instance, winner list, loser list) triples; π_f = a frozen copy of ``net``.

    Returns one row per epoch: mean DPO loss, and the share of pairs whose winner the policy now prefers.
    """
    import copy

    import torch
    if not pairs:
        raise InvalidParameterError("DPO needs at least one (winner, loser) pair; lower mu or sample more lists")
    net.to(device).eval()
    reference = copy.deepcopy(net).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    # the reference log-probabilities never change: compute them once (dropout off)
    ref = {}
    with torch.no_grad():
        for start in range(0, len(pairs), 256):
            chunk = pairs[start: start + 256]
            for j, which in enumerate(("w", "l")):
                batch = lr._batch([x for x, _, _ in chunk], device, lists=[pair[1 + j] for pair in chunk])
                ref[(start, which)] = lr._sequence_log_probs(reference, batch)[0]
    ref_w = torch.cat([ref[(s, "w")] for s in range(0, len(pairs), 256)])
    ref_l = torch.cat([ref[(s, "l")] for s in range(0, len(pairs), 256)])
    torch.manual_seed(seed)
    net.train()
    optimiser = _optimiser(net, opt)
    history = []
    for epoch in range(opt.epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(pairs))
        loss_sum = won = 0.0
        for start in range(0, len(pairs), opt.batch_size):
            idx = order[start: start + opt.batch_size]
            chunk = [pairs[i] for i in idx]
            batch_w = lr._batch([x for x, _, _ in chunk], device, lists=[p[1] for p in chunk])
            batch_l = lr._batch([x for x, _, _ in chunk], device, lists=[p[2] for p in chunk])
            logp_w, _ = lr._sequence_log_probs(net, batch_w)
            logp_l, _ = lr._sequence_log_probs(net, batch_l)
            index = torch.as_tensor(idx, device=ref_w.device)
            losses = dpo_loss(logp_w, logp_l, ref_w[index], ref_l[index], opt.beta)
            loss = losses.mean()
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), opt.clip)
            optimiser.step()
            loss_sum += float(losses.detach().sum())
            won += float((logp_w > logp_l).sum())
        row = {"stage": "dpo", "epoch": epoch + 1, "dpo_loss": loss_sum / len(pairs),
               "prefers_winner": won / len(pairs)}
        history.append(row)
        if log:
            log(row)
    net.eval()
    return history
