"""evaluate_run against expeval's own output (tests/data/expeval/reference.json, made by make_reference.py)."""

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairrag_core import (
    InvalidParameterError,
    ServedRankings,
    awrf,
    bootstrap_run,
    compare_runs,
    ee_disparity,
    ee_relevance,
    evaluate_run,
    evaluate_run_awrf,
    expected_exposure,
    load_collection,
    load_judgments,
    load_run,
    ndcg,
    sample_rankings,
    summarise_run,
)
from fairrag_core.audit.served import unjudged_queries
from fairrag_core.audit.served_stats import evaluate_served
from fairrag_core.data.judgments import parse_judgments
from fairrag_core.metrics.expeval import ExposureSettings

EXPEVAL = Path(__file__).resolve().parents[1] / "data" / "expeval"
REFERENCE = json.loads((EXPEVAL / "reference.json").read_text(encoding="utf-8"))
METRICS = ("disparity", "relevance", "difference")
RBP_RAW = ExposureSettings(user_model="rbp", normalize=False)


def _kwargs(flags: list[str]) -> dict:
    options, words = {"user_model": "gerr"}, iter(flags)  # expeval's own default user model
    for flag in words:
        if flag in ("-u", "-p", "-r"):
            name, value = {"-u": ("user_model", str), "-p": ("patience", float), "-r": ("utility", float)}[flag]
            options[name] = value(next(words))
        else:
            options[{"-U": "normalize", "-B": "binarize", "-C": "complete", "-G": "groups"}[flag]] = flag != "-U"
    return options


def _parse(stdout: str) -> dict[tuple[str, str], float]:
    return {(qid, metric): float(value) for metric, qid, value in (line.split("\t") for line in stdout.splitlines())}


@pytest.fixture(scope="module")
def inputs():
    return ({name: load_run(EXPEVAL / name) for name in ("run_a.txt", "run_b.txt", "run_plain.txt")},
            {name: load_judgments(EXPEVAL / name) for name in ("qrels_graded.txt", "qrels_binary.txt")})


def _case_id(case):
    return f"{case['run']}-{case['qrels']}-{''.join(case['flags'])}"


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=_case_id)
def test_agrees_with_expeval_per_query(case, inputs):
    runs, qrels = inputs
    table = evaluate_run(qrels=qrels[case["qrels"]], run=runs[case["run"]], **_kwargs(case["flags"]))
    full, printed = _parse(case["stdout_full"]), _parse(case["stdout"])
    ours = {(qid, m): table.loc[qid, m] for qid in table.index for m in METRICS}
    assert list(dict.fromkeys(q for q, _ in full)) == list(table.index)  # same queries, same order
    for key, expected in full.items():
        if math.isinf(expected):
            assert ours[key] == expected, key
        else:
            assert ours[key] == pytest.approx(expected, abs=1e-9), key  # expeval at full precision
            assert abs(ours[key] - printed[key]) <= 1e-6, key  # expeval's printed (%f) output


def test_reference_covers_what_the_issue_asks():
    flags = [set(c["flags"]) for c in REFERENCE["cases"]]
    for model in ("gerr", "rbp"):
        for extra in ({"-U"}, {"-B"}, {"-C"}, {"-G"}, set()):
            assert any({model, *extra} <= f for f in flags)
    assert REFERENCE["expeval_commit"].startswith("69ab070")


def test_missing_and_unjudged_queries(inputs):
    runs, qrels = inputs
    table = evaluate_run(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"], user_model="gerr")
    assert table.index.tolist() == ["q1", "q2", "q3", "q5", "q6"]  # q4: no relevant document; q7: not judged
    assert not table.loc["q5", "in_run"] and table.loc["q5", "n_samples"] == 0
    assert table.loc["q5", "relevance"] == 1.0 and table.loc["q5", "difference"] == 0.0  # expeval's defaults
    assert sorted(unjudged_queries(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"])) == ["q4", "q7"]
    assert unjudged_queries(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"],
                            settings=ExposureSettings(complete=True)) == ["q7"]
    corrected = evaluate_run(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"], bounds="corrected",
                             user_model="gerr")
    assert corrected.loc["q5", "difference"] > 0  # showing nothing is not a perfect difference
    assert corrected.loc["q2", "relevance"] < 1  # single level: no longer the constant 1
    assert table.loc["q2", "relevance_levels"] == 1


def test_inputs_as_paths_objects_dicts_and_collections(inputs):
    runs, qrels = inputs
    by_path = evaluate_run(qrels=str(EXPEVAL / "qrels_graded.txt"), run=EXPEVAL / "run_plain.txt", user_model="rbp")
    by_object = evaluate_run(qrels=qrels["qrels_graded.txt"], run=runs["run_plain.txt"], user_model="rbp")
    lists = {q: runs["run_plain.txt"][q].samples() for q in runs["run_plain.txt"].query_ids}
    by_dict = evaluate_run(qrels=qrels["qrels_graded.txt"], run=lists, user_model="rbp")
    pd.testing.assert_frame_equal(by_path, by_object)
    pd.testing.assert_frame_equal(by_path, by_dict)
    shoes = load_collection("running-shoes")
    qid = next(iter(shoes.qrels))
    docs = list(shoes.qrels[qid])
    from_collection = evaluate_run(qrels=shoes, run={qid: [docs[:5], docs[1:6]]}, groups=True)
    from_name = evaluate_run(qrels="running-shoes", run={qid: [docs[:5], docs[1:6]]}, groups=True)
    pd.testing.assert_frame_equal(from_collection, from_name)
    assert from_collection.loc[qid, "n_groups"] >= 1


@pytest.mark.parametrize("threshold", [0.6, 0.8])  # m = 4 > k and m = 2 ≤ k
def test_step_model_matches_fair_rag_metrics(threshold):
    scores = np.linspace(0, 1, 10)
    labels = (scores > threshold).astype(int)
    rankings = sample_rankings(scores, alpha=2, n_samples=50, k=3, seed=0)
    names = [f"d{i}" for i in range(10)]
    qrels = parse_judgments("".join(f"q 0 d{i} {g}\n" for i, g in enumerate(labels)))
    run = ServedRankings.from_lists({"q": [[names[i] for i in row] for row in rankings]})
    eps = expected_exposure(rankings, 10)
    raw = evaluate_run(qrels=qrels, run=run, settings=ExposureSettings(k=3, complete=True, normalize=False))
    m, n, k = labels.sum(), 10, 3
    assert raw.loc["q", "disparity"] / k == pytest.approx(ee_disparity(eps, k))
    normaliser = k * k / m if m > k else m + (k - m) ** 2 / (n - m)  # ‖ε*‖², Kim & Diaz 2025, App. C
    assert raw.loc["q", "relevance"] / normaliser == pytest.approx(ee_relevance(eps, labels, k))
    # incomplete: lower bound 0, upper k
    normalised = evaluate_run(qrels=qrels, run=run, settings=ExposureSettings(k=3))
    assert normalised.loc["q", "disparity"] == pytest.approx(ee_disparity(eps, k))


def test_bootstrap_run_intervals_contain_their_estimates(inputs):
    runs, qrels = inputs
    table = evaluate_run(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"], user_model="rbp")
    boot = bootstrap_run(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"], user_model="rbp", n_boot=300, seed=0)
    assert set(boot.index.get_level_values("metric")) == set(METRICS)
    sampled = boot.dropna(subset=["low"])
    assert np.all(sampled["low"] <= sampled["estimate"] + 1e-12)
    assert np.all(sampled["estimate"] <= sampled["high"] + 1e-12)
    for qid in table.index:
        for metric in METRICS:
            assert boot.loc[(qid, metric), "plug_in"] == pytest.approx(table.loc[qid, metric])
    # not in the run: no interval (it was a zero-width one around expeval's default)
    assert boot.loc["q5", "low"].isna().all() and "not in the run" in boot.loc[("q5", "disparity"), "method"]
    assert len(sampled) == len(boot) - 3
    assert "bias-corrected" in boot.loc[("q1", "disparity"), "method"]
    assert "percentile" in boot.loc[("q1", "relevance"), "method"]
    plain = bootstrap_run(qrels=qrels["qrels_graded.txt"], run=runs["run_plain.txt"], n_boot=50, seed=0)
    assert plain["low"].isna().all() and plain["high"].isna().all()  # one sample: nothing to resample
    assert (plain["method"] == "no interval: one sampled ranking").sum() > 0


def test_bootstrap_run_estimates_are_unbiased_and_the_same_for_every_seed():
    # rbp, p = 0.5: exposures 1, .5, .25 by rank. Samples (a, b, c) and (b, a, c): Σ_{i≠j} ⟨x_i, x_j⟩ = 2 (.5 + .5 +
    # .0625) over N(N − 1) = 2 → disparity 1.0625 (plug-in 1.1875); difference 1.0625 − 2·1.125 + ‖ε*‖² (1.125) =
    # −0.0625, floored at its least value 0 (plug-in 0.0625)
    qrels = parse_judgments("q1 0 a 1\nq1 0 b 1\nq1 0 c 0\n")
    run = {"q1": [["a", "b", "c"], ["b", "a", "c"]]}
    tables = [bootstrap_run(qrels=qrels, run=run, settings=RBP_RAW, n_boot=200, seed=s) for s in (0, 1)]
    for table in tables:
        assert table.loc[("q1", "disparity"), ["plug_in", "estimate"]].tolist() == pytest.approx([1.1875, 1.0625])
        assert table.loc[("q1", "difference"), ["plug_in", "estimate"]].tolist() == pytest.approx([0.0625, 0.0])
        assert table.loc[("q1", "relevance"), "estimate"] == pytest.approx(1.125)


def test_bootstrap_over_samples_covers_the_policy_value():
    # uniform policy over 30 documents, rbp: the exact ε_d = (Σ_{i<5} p^i)/30 for every d
    docs = [f"d{i}" for i in range(30)]
    qrels = parse_judgments("".join(f"q 0 {d} {int(i < 3)}\n" for i, d in enumerate(docs)))
    exact = 30 * ((1 - 0.5 ** 5) / 0.5 / 30) ** 2
    hits = 0
    for seed in range(40):
        order = np.random.default_rng(seed).permuted(np.tile(np.arange(30), (40, 1)), axis=1)[:, :5]
        run = ServedRankings.from_lists({"q": [[docs[i] for i in row] for row in order]})
        boot = bootstrap_run(qrels=qrels, run=run, settings=RBP_RAW, n_boot=300, seed=seed)
        row = boot.loc[("q", "disparity")]
        hits += row.low <= exact <= row.high
        assert row.plug_in > exact  # the plug-in is biased upward …
    assert hits >= 32  # … while the bias-corrected basic interval covers the exact value (nominal 95%)


def test_summary_and_paired_comparison(inputs):
    runs, qrels = inputs
    table = evaluate_run(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"], normalize=False, user_model="gerr")
    summary = summarise_run(table, n_boot=500, seed=0)
    assert summary.loc["disparity", "estimate"] == pytest.approx(table["disparity"].mean())
    assert np.all(summary["low"] <= summary["estimate"]) and np.all(summary["estimate"] <= summary["high"])
    same = compare_runs(qrels=qrels["qrels_graded.txt"], run_a=runs["run_a.txt"], run_b=runs["run_a.txt"], seed=0,
                        user_model="gerr")
    assert np.all(same["difference"] == 0) and np.all(same["p_value"] == 1.0)
    diff = compare_runs(qrels=qrels["qrels_graded.txt"], run_a=runs["run_a.txt"], run_b=runs["run_b.txt"],
                        settings=ExposureSettings(user_model="gerr", normalize=False), seed=0)
    b = evaluate_run(qrels=qrels["qrels_graded.txt"], run=runs["run_b.txt"], normalize=False, user_model="gerr")
    assert diff.loc["disparity", "difference"] == pytest.approx((table["disparity"] - b["disparity"]).mean())
    assert diff.loc["disparity", "mean_a"] > diff.loc["disparity", "mean_b"]  # A is sharper (less fair) than B
    assert np.all(diff["low"] <= diff["difference"]) and np.all(diff["difference"] <= diff["high"])
    assert diff["n_queries"].iloc[0] == 5 and "randomization" in diff["test"].iloc[0]


def test_awrf_and_ndcg_match_the_single_ranking_functions(inputs):
    runs, qrels = inputs
    run, judged = runs["run_a.txt"], qrels["qrels_graded.txt"]
    table = evaluate_run_awrf(qrels=judged, run=run, cutoff=5)
    assert list(table.columns[:4]) == ["nDCG@5", "TF22-nDCG@5", "AWRF@5", "TF22-nDCG*AWRF@5"]
    for qid in ("q2", "q3"):  # one group per document: compare with group_fairness.awrf / ndcg sample by sample
        grades = judged.relevance[qid]
        target = {}
        for d, g in grades.items():
            if g > 0:
                target[judged.groups[qid][d][0]] = target.get(judged.groups[qid][d][0], 0) + 1
        ours_awrf, ours_ndcg = [], []
        for sample in run[qid].samples():
            ours_awrf.append(awrf([judged.group_of(qid, d)[0] for d in sample], target, cutoff=5))
            ours_ndcg.append(ndcg([max(grades.get(d, 0), 0) for d in sample],
                                  [max(g, 0) for g in grades.values()], cutoff=5))
        assert table.loc[qid, "AWRF@5"] == pytest.approx(np.mean(ours_awrf))
        assert table.loc[qid, "TF22-nDCG@5"] == pytest.approx(np.mean(ours_ndcg))  # TREC Fair 2022's discount
    assert np.isnan(table.loc["q5", "AWRF@5"]) and table.loc["q5", "nDCG@5"] == table.loc["q5", "TF22-nDCG@5"] == 0.0


def test_each_ndcg_gives_its_reference_tool_s_number():
    """``nDCG@20`` is ir_measures' (trec_eval's 1/log2(r + 1)); TREC Fair 2022's 1/log2(max(r, 2)) variant is named
    ``TF22-nDCG@20``. On a 500-topic run they differ by up to a few hundredths."""
    ir_measures = pytest.importorskip("ir_measures")
    from fairrag_core.data.judgments import Judgments
    from fairrag_core.data.served import ServedRankings

    rng = np.random.default_rng(5)
    relevance, groups, rankings, qrels_rows, run_rows = {}, {}, {}, [], []
    for t in range(500):
        qid = f"t{t}"
        docs = [f"{qid}-d{i}" for i in range(40)]
        grades = {d: int(g) for d, g in zip(docs, rng.choice([0, 0, 0, 1, 2, 3], size=40)) if rng.random() < 0.6}
        grades[docs[0]] = max(grades.get(docs[0], 0), 1)  # at least one relevant document
        relevance[qid], groups[qid] = grades, dict.fromkeys(grades, ("g",))
        ranking = list(rng.permutation(docs)[:25])
        rankings[qid] = [ranking]
        qrels_rows += [ir_measures.Qrel(qid, d, g) for d, g in grades.items()]
        run_rows += [ir_measures.ScoredDoc(qid, d, float(100 - r)) for r, d in enumerate(ranking)]
    table = evaluate_run_awrf(qrels=Judgments(relevance, groups), run=ServedRankings.from_lists(rankings), cutoff=20)
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 20], qrels_rows, run_rows)}
    ours = table["nDCG@20"].to_dict()
    assert ours.keys() == theirs.keys()
    assert max(abs(ours[q] - theirs[q]) for q in ours) < 1e-9
    gap = (table["TF22-nDCG@20"] - table["nDCG@20"]).abs()
    assert 0.01 < gap.max() < 0.1  # the two discounts are different measures


def test_bad_arguments():
    qrels = parse_judgments("q 0 a 1\n")
    # the step user reads the run's longest ranking unless k says otherwise
    run = {"q": [["a", "b"], ["a"]]}
    assert evaluate_run(qrels=qrels, run=run).loc["q", "disparity"] == pytest.approx(
        evaluate_run(qrels=qrels, run=run, settings=ExposureSettings(k=2)).loc["q", "disparity"])
    with pytest.raises(InvalidParameterError, match=r"unknown option\(s\) \['alpha'\]"):
        bootstrap_run(qrels=qrels, run={"q": [["a"]]}, alpha=2)
    with pytest.raises(InvalidParameterError, match="run must be a path"):
        evaluate_run(qrels=qrels, run=42)
    with pytest.raises(InvalidParameterError, match="qrels must be a path"):
        evaluate_run(qrels=42, run={"q": [["a"]]})
    with pytest.raises(InvalidParameterError, match="bounds='loose' is not one of"):
        evaluate_run(qrels=qrels, run={"q": [["a"]]}, bounds="loose")
    with pytest.raises(InvalidParameterError, match="settings must be an ExposureSettings"):
        evaluate_run(qrels=qrels, run=run, settings={"user_model": "rbp"})


def test_inputs_are_taken_by_name_in_the_cli_order_and_a_swap_names_the_python_call():
    qrels, run = EXPEVAL / "qrels_graded.txt", EXPEVAL / "run_a.txt"
    with pytest.raises(InvalidParameterError, match=r"^evaluate_run takes its inputs by name, in the CLI's order "
                                                    r"\(qrels first\): evaluate_run\(qrels=…, run=…\)$"):
        evaluate_run(run, qrels)  # the old Python order
    with pytest.raises(InvalidParameterError, match=r"^evaluate_run needs qrels=: evaluate_run\(qrels=…, run=…\)$"):
        evaluate_run(run=run)
    swapped = rf"^qrels={run} is a run and run={qrels} is qrels: swap them, {{}}$"
    with pytest.raises(InvalidParameterError, match=swapped.format(r"evaluate_run\(qrels=…, run=…\)")):
        evaluate_run(qrels=run, run=qrels)
    with pytest.raises(InvalidParameterError, match=swapped.format(r"bootstrap_run\(qrels=…, run=…\)")):
        bootstrap_run(qrels=run, run=qrels, n_boot=10)
    with pytest.raises(InvalidParameterError, match=swapped.format(r"evaluate_run_awrf\(qrels=…, run=…\)")):
        evaluate_run_awrf(qrels=run, run=qrels)
    with pytest.raises(InvalidParameterError, match=rf"^run_b={qrels} is qrels, not a run: give the run as run_b=, "
                                                    r"compare_runs\(qrels=…, run_a=…, run_b=…\)$"):
        compare_runs(qrels=qrels, run_a=run, run_b=qrels)
    with pytest.raises(InvalidParameterError, match="the run is a Judgments, which judges runs: pass it as qrels="):
        evaluate_run(qrels=load_run(run), run=load_judgments(qrels))
    with pytest.raises(Exception, match="file not found"):  # a plain load error stays as it is
        evaluate_run(qrels=qrels, run=EXPEVAL / "missing.txt")


def test_a_seed_for_the_plug_in_table_names_the_call_that_takes_it():
    """Issue 30: the CLI's ``evaluate-run --seed S`` seeds its headline's bootstraps; evaluate_run's plug-in table
    draws nothing, so a seed given to it is refused with the call that uses one (not "unknown option")."""
    qrels, run = EXPEVAL / "qrels_graded.txt", EXPEVAL / "run_a.txt"
    with pytest.raises(InvalidParameterError, match=r"^evaluate_run's plug-in values draw nothing, so it takes no "
                                                    r"seed; .*fr\.evaluate_served\(qrels=…, run=…, seed=S\)\.mean$"):
        evaluate_run(qrels=qrels, run=run, seed=3)


def test_settings_object_and_keyword_overrides_are_the_same_evaluation(inputs):
    runs, qrels = inputs
    run, judged = runs["run_a.txt"], qrels["qrels_graded.txt"]
    gerr = ExposureSettings(user_model="gerr", patience=0.8, complete=True)
    by_object = evaluate_run(qrels=judged, run=run, settings=gerr)
    pd.testing.assert_frame_equal(by_object, evaluate_run(qrels=judged, run=run, user_model="gerr", patience=0.8,
                                                          complete=True))
    # an override replaces that one field of the settings object
    pd.testing.assert_frame_equal(by_object, evaluate_run(qrels=judged, run=run, settings=replace(gerr, patience=0.3),
                                                          patience=0.8))
    assert not by_object.equals(evaluate_run(qrels=judged, run=run, settings=gerr, patience=0.3))


def test_evaluate_served_gives_the_bias_corrected_headline_not_the_plug_in_mean(inputs):
    runs, qrels = inputs
    result = evaluate_served(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"], n_boot=200, seed=1)
    assert result.seed == 1 and result.settings.k == 10  # the step user read the longest ranking
    estimates = result.queries["disparity"]
    assert result.mean.loc["disparity", "estimate"] == pytest.approx(estimates.mean())
    assert (estimates <= result.queries["disparity_plug_in"]).all()  # the plug-in is biased upward …
    plug_in = summarise_run(result.table, n_boot=200, seed=1).loc["disparity", "estimate"]
    assert plug_in == pytest.approx(result.table["disparity"].mean())
    assert plug_in - result.mean.loc["disparity", "estimate"] > 0.005  # … so its mean is not the headline
    # relevance: the plug-in, without the queries where it is only expeval's stand-in (q2, q3, q5)
    assert result.queries["relevance"].notna().tolist() == [True, False, False, False, True]
    assert result.mean.loc["relevance", "n_queries"] == 2
    assert sorted(result.skipped_queries) == ["q4", "q7"]
    again = evaluate_served(qrels=EXPEVAL / "qrels_graded.txt", run=EXPEVAL / "run_a.txt", n_boot=200,
                            seed=result.seed)
    pd.testing.assert_frame_equal(again.mean, result.mean)  # the recorded seed reruns it
    drawn = evaluate_served(qrels=qrels["qrels_graded.txt"], run=runs["run_a.txt"], n_boot=20)
    assert isinstance(drawn.seed, int)
