"""The pointer network of RichRAG's list-wise ranker on tiny synthetic pools: shapes, masking, Eq. 7's
probabilities, the SFT and DPO losses, and bit-for-bit reproducibility."""

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fairrag_core.errors import InvalidParameterError  # noqa: E402
from fairrag_core.models import listwise_ranker as lr  # noqa: E402
from fairrag_core.models import listwise_training as lt  # noqa: E402
from fairrag_core.richrag.coverage import greedy_coverage  # noqa: E402

TINY = lr.Architecture(input_dim=8, hidden=16, heads=2, layers=1, feedforward=32, dropout=0.0, max_steps=8)


@dataclass(frozen=True)
class Instance:
    doc_vectors: np.ndarray
    doc_extra: np.ndarray
    aspect_vectors: np.ndarray
    pair: np.ndarray
    target: tuple | None = None
    phi: np.ndarray | None = None


def synthetic(rng, m=6, n=3, k=3):
    """A pool whose pair features reveal φ: the silver list is learnable from the input."""
    phi = rng.uniform(0, 1, size=(m, n)) ** 2
    pair = np.stack([phi, phi + rng.normal(0, 0.05, phi.shape), phi > 0.3, phi], axis=-1).astype(np.float32)
    return Instance(rng.normal(size=(m, 8)).astype(np.float32), rng.uniform(size=(m, 2)).astype(np.float32),
                    rng.normal(size=(n, 8)).astype(np.float32), pair, tuple(greedy_coverage(phi, k)),
                    phi.astype(np.float32))


def weights_hash(net) -> str:
    digest = hashlib.sha256()
    for key, value in lr.state_dict_arrays(net).items():
        digest.update(key.encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def test_decode_gives_distinct_valid_positions_and_skips_padding():
    rng = np.random.default_rng(0)
    pools = [synthetic(rng, m=m) for m in (4, 7, 5)]  # padded to 7 in one batch
    net = lr.build_network(TINY, seed=0)
    for sample in (False, True):
        lists = lr.decode(net, pools, 4, sample=sample, seed=1)
        for x, y in zip(pools, lists):
            assert len(y) == 4 and len(set(y)) == 4
            assert all(0 <= i < len(x.doc_vectors) for i in y)


def test_decode_stops_at_the_smallest_pool():
    rng = np.random.default_rng(1)
    lists = lr.decode(lr.build_network(TINY, seed=0), [synthetic(rng, m=3)], 5)
    assert sorted(lists[0]) == [0, 1, 2]


def test_pointer_probabilities_sum_to_one_and_picked_ids_get_none():
    rng = np.random.default_rng(2)
    pools = [synthetic(rng, m=5), synthetic(rng, m=6)]
    net = lr.build_network(TINY, seed=0).eval()
    batch = lr._batch(pools, "cpu", lists=[[2, 0, 4], [5, 1, 3]])
    with torch.no_grad():
        logits = lr._masked_logits(net.step_logits(net.encode(batch), batch["lists"][:, :-1]), batch["doc_mask"],
                                   batch["lists"])
        probs = torch.softmax(logits, dim=-1)
    assert torch.allclose(probs.sum(-1), torch.ones(2, 3))
    assert probs[0, :, 5].max() == 0  # the first pool has 5 candidates: position 5 is padding
    assert probs[0, 1, 2] == 0 and probs[0, 2, 2] == 0 and probs[0, 2, 0] == 0  # picked earlier
    assert probs[1, 2, 5] == 0 and probs[1, 2, 1] == 0
    assert probs[0, 0, 2] > 0


def test_temperature_sharpens_the_pointer():
    rng = np.random.default_rng(3)
    x = [synthetic(rng)]
    entropies = []
    for tau in (1.0, 0.1):
        net = lr.build_network(lr.Architecture(**{**TINY.to_dict(), "tau": tau}), seed=0).eval()
        probs = np.exp(lr.first_step_scores(net, x)[0] - lr.first_step_scores(net, x)[0].max())
        probs /= probs.sum()
        entropies.append(-(probs * np.log(probs)).sum())
    assert entropies[1] < entropies[0]


def test_sft_loss_decreases_on_a_tiny_problem():
    rng = np.random.default_rng(4)
    data = [synthetic(rng) for _ in range(64)]
    net = lr.build_network(TINY, seed=0)
    history = lt.train_sft(net, data, lt.Optimisation(epochs=15, batch_size=16, lr=3e-3, aux_weight=0.0), seed=0)
    assert history[-1]["ntp_loss"] < 0.6 * history[0]["ntp_loss"]
    hits = np.mean([y == list(x.target) for x, y in zip(data, lr.decode(net, data, 3))])
    assert hits > 0.3  # exact silver lists of 3 out of 6 (chance: 1/120)


def test_dpo_loss_sign_and_direction():
    beta = 0.5
    same = lt.dpo_loss(torch.tensor(-2.0), torch.tensor(-3.0), torch.tensor(-2.0), torch.tensor(-3.0), beta)
    assert math.isclose(float(same), math.log(2), rel_tol=1e-6)  # policy = reference: log 2
    better = lt.dpo_loss(torch.tensor(-1.0), torch.tensor(-4.0), torch.tensor(-2.0), torch.tensor(-3.0), beta)
    worse = lt.dpo_loss(torch.tensor(-3.0), torch.tensor(-2.0), torch.tensor(-2.0), torch.tensor(-3.0), beta)
    assert float(better) < math.log(2) < float(worse)


def test_dpo_moves_probability_from_loser_to_winner():
    rng = np.random.default_rng(5)
    x = synthetic(rng)
    net = lr.build_network(TINY, seed=0)
    winner, loser = [4, 1, 0], [0, 1, 4]
    before = lr.list_log_probs(net, [x, x], [winner, loser])
    history = lt.train_dpo(net, [(x, winner, loser)] * 8, lt.Optimisation(epochs=10, batch_size=8, lr=1e-2,
                                                                          beta=0.5), seed=0)
    after = lr.list_log_probs(net, [x, x], [winner, loser])
    assert after[0] - after[1] > before[0] - before[1]
    assert history[-1]["dpo_loss"] < history[0]["dpo_loss"]
    assert history[-1]["prefers_winner"] == 1.0


def test_dpo_needs_pairs():
    with pytest.raises(InvalidParameterError, match="at least one"):
        lt.train_dpo(lr.build_network(TINY, seed=0), [], lt.Optimisation(), seed=0)


def test_same_seed_same_weights_other_seed_other_weights():
    rng = np.random.default_rng(6)
    data = [synthetic(rng) for _ in range(32)]

    def run(seed):
        with lr.deterministic_torch():
            net = lr.build_network(TINY, seed=seed)
            lt.train_sft(net, data, lt.Optimisation(epochs=3, batch_size=8), seed=seed)
            lt.train_dpo(net, [(data[0], [0, 1, 2], [2, 1, 0])] * 4, lt.Optimisation(epochs=2, batch_size=4),
                         seed=seed)
        return weights_hash(net)

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_safetensors_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    x = [synthetic(rng)]
    net = lr.build_network(TINY, seed=0).eval()
    path = lr.save_weights(net, tmp_path / "w.safetensors", metadata={"note": "test"})
    assert path.read_bytes()[:8] != b"\x80\x04\x95"  # not a pickle
    loaded, meta = lr.load_weights(path)
    assert meta["note"] == "test" and loaded.arch == TINY
    assert np.allclose(lr.first_step_scores(net, x)[0], lr.first_step_scores(loaded, x)[0])


def test_weights_without_architecture_are_refused(tmp_path):
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(2, dtype=np.float32)}, str(tmp_path / "bare.safetensors"))
    with pytest.raises(InvalidParameterError, match="architecture"):
        lr.load_weights(tmp_path / "bare.safetensors")
