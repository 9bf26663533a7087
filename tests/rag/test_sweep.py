from dataclasses import replace

import pandas as pd
from fakes import FirstDocumentModel, SubstringAttributor

from fairrag_core.rag.generation import Generator
from fairrag_core.rag.sweep import RagSweep, RagSweepConfig, rag_sweep


def test_step_wise_sweep_resumes_and_matches_the_one_shot_sweep(shoes, shoes_bm25):
    config = RagSweepConfig(alphas=(0.0, 4.0), n_samples=8, k=3, seed=11, candidates=10, usefulness="relevance",
                            query_ids=("rs-q01", "rs-q02"))
    whole = rag_sweep(shoes, shoes_bm25, Generator(FirstDocumentModel()), SubstringAttributor(), config).table
    sweep = RagSweep(shoes, shoes_bm25, Generator(FirstDocumentModel()), SubstringAttributor(), config)
    assert len(sweep.tasks) == 2 * 3  # two α values and the deterministic baseline, per query
    first = [sweep.run(t) for t in sweep.tasks[:2]]  # "stopped" after two tasks...
    partial = sweep.collect(first)
    assert partial.record.complete is False and len(partial.table) == 2
    rest = [sweep.run(t) for t in reversed(sweep.tasks[2:])]  # ...resumed, in any order
    finished = sweep.collect(first + rest)
    assert finished.record.complete is True
    table = finished.table
    cols = ["query_id", "system", "alpha", "ee_d", "eu", "ear", "eae_d", "seed"]
    pd.testing.assert_frame_equal(table[cols], whole[cols])
    docs = finished.documents
    per_run = docs.groupby(["query_id", "alpha"])
    assert per_run["exposure"].sum().round(9).eq(3.0).all()
    assert (per_run["attributed_exposure"].sum() <= 3.0 + 1e-9).all()
def test_sweep_without_the_oracle_makes_no_oracle_generations(shoes, shoes_bm25):
    config = RagSweepConfig(alphas=(0.0, 4.0), n_samples=8, k=3, seed=11, candidates=10, usefulness="relevance",
                            query_ids=("rs-q01", "rs-q02"))
    calls = {}
    for oracle in (True, False):
        generator = Generator(FirstDocumentModel())
        run = rag_sweep(shoes, shoes_bm25, generator, SubstringAttributor(), replace(config, oracle=oracle))
        table = run.table
        calls[oracle] = run.record.generator_calls
        assert run.record.config.oracle is oracle
        assert table["oracle_eu"].notna().all() == oracle and table["oracle_eu"].isna().all() != oracle
        assert table["eu_normalised"].dropna().between(0, 1).all()
        # where no answer scored above 0, EU / max utility is 0/0: undefined (NaN), never a made-up 0
        assert (table.loc[table["eu_normalised"].isna(), "eu"] == 0).all()
    # without the oracle, generations are exactly the distinct sampled lists (the deterministic list recurs at α = 4)
    assert calls[False] < calls[True]
    assert calls[False] <= table["distinct_lists"].sum()


def test_a_sweep_stores_its_citation_rule_and_the_judge_prompt_digest(shoes, shoes_bm25, tmp_path):
    """Every stored run says how citations were decided: τ, δ, per-claim, skip-degenerate and the judge prompt."""
    from fakes import FirstDocumentModel as JudgeModel

    from fairrag_core.audit.store import RunStore
    from fairrag_core.rag.attribution import LLMJudgeAttributor
    from fairrag_core.rag.presets import PRESETS

    policy = PRESETS["fast"].citation
    config = RagSweepConfig(alphas=(0.0,), n_samples=4, k=3, seed=5, candidates=10, oracle=False,
                            usefulness="relevance", query_ids=("rs-q01",),
                            **policy.citation_fields())
    judge = LLMJudgeAttributor(JudgeModel("fake-judge"))
    run = rag_sweep(shoes, shoes_bm25, Generator(FirstDocumentModel()), judge, config)
    record = run.record
    assert record.attributor_prompt == judge.prompt_version and record.attributor_prompt.startswith("judge-prompt-")
    assert record.config.citation_policy == policy
    with RunStore(tmp_path / "runs.duckdb") as store:
        loaded = store.load(store.save(run)).record
    # saving adds what the inputs were (names and sha256); the rest reads back as it was
    assert loaded.extra == {**record.extra, "inputs": loaded.extra["inputs"]}
    assert replace(loaded, extra=record.extra) == record and loaded.config.citation_policy == policy
    assert loaded.to_dict()["attributor_prompt"] == judge.prompt_version
    command = loaded.command()
    for word in ("--per-claim" if policy.per_claim else "--no-per-claim", "--skip-degenerate"):
        assert word in command
    for flag, value in (("--entail-threshold", policy.entail_threshold), ("--control-margin", policy.control_margin),
                        ("--min-support", policy.min_support)):
        assert f"{flag} {'none' if value is None else f'{value:g}'}" in command
