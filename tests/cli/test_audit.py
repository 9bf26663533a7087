import io
import json
import re
from pathlib import Path

import pytest

from fairrag_core.cli import main

EXPEVAL = Path(__file__).resolve().parents[1] / "data" / "expeval"
REFERENCE = json.loads((EXPEVAL / "reference.json").read_text(encoding="utf-8"))
QRELS, RUN_A, RUN_B = (str(EXPEVAL / n) for n in ("qrels_graded.txt", "run_a.txt", "run_b.txt"))


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def _reference(flags, run_name="run_a.txt", qrels="qrels_graded.txt"):
    return next(c for c in REFERENCE["cases"] if c["flags"] == flags and c["run"] == run_name and c["qrels"] == qrels)


@pytest.mark.parametrize("flags", [["-u", "gerr"], ["-u", "rbp", "-U", "-C"], ["-u", "gerr", "-B", "-G"],
                                   ["-u", "gerr", "-p", "0.8", "-r", "0.3"]])
def test_tsv_prints_what_expeval_prints(flags, capsys):
    code, text = run(["evaluate-run", QRELS, RUN_A, "--trec-eval", *flags])  # expeval's own output, asked for
    assert code == 0
    lines = text.splitlines()
    per_query = [line for line in lines if "\tall\t" not in line]
    assert "\n".join(per_query) + "\n" == _reference(flags)["stdout"]  # byte for byte, expeval's %f lines
    assert [line.split("\t")[0] for line in lines if "\tall\t" in line] == ["disparity", "relevance", "difference"]
    assert "note:" in capsys.readouterr().err  # q5 is missing from the run, q4/q7 are skipped


def test_long_flags_are_the_short_ones():
    short = run(["evaluate-run", QRELS, RUN_A, "-u", "rbp", "-p", "0.9", "-C", "--seed", "1"])
    long = run(["evaluate-run", QRELS, RUN_A, "--user-model", "rbp", "--patience", "0.9", "--complete", "--seed", "1"])
    assert short == long


def test_json_and_awrf():
    code, text = run(["evaluate-run", QRELS, RUN_A, "--json", "--seed", "3", "--awrf", "10"])
    assert code == 0
    payload = json.loads(text)
    # the package's user model everywhere: step, reading the run's longest ranking (k = 10 here)
    assert payload["run"]["run_id"] == "sysA" and payload["settings"]["user_model"] == "step"
    assert payload["settings"]["k"] == 10
    assert [q["query_id"] for q in payload["queries"]] == ["q1", "q2", "q3", "q5", "q6"]
    assert {m["metric"] for m in payload["mean"]} == {"disparity", "relevance", "difference"}
    assert all(m["low"] <= m["estimate"] <= m["high"] for m in payload["mean"])
    assert sorted(payload["skipped_queries"]) == ["q4", "q7"] and payload["awrf"][0]["nDCG@10"] >= 0
    assert "--seed 3" in payload["command"] and "--awrf 10" in payload["command"]


def test_ci_report_prints_estimates_inside_their_intervals():
    code, text = run(["evaluate-run", QRELS, RUN_A, "--ci", "--seed", "1", "--n-boot", "200", "-u", "rbp"])
    assert code == 0
    assert "percentile bootstrap interval over 5 queries" in text and "bias-corrected" in text
    assert "Reproduce: python -m fairrag_core evaluate-run" in text and "--ci" in text
    rows = [line for line in text.splitlines() if line.startswith("  q")]
    cells = [re.findall(r"(disparity|relevance|difference) ([-\d.]+) \[([-\d.]+), ([-\d.]+)\]", row) for row in rows]
    # q2, q3, q5 have one relevance level: every ranking gets expeval's stand-in relevance, so it is shown as "—"
    undefined = [row.split()[0] for row in rows if "relevance —" in row]
    assert undefined == ["q2", "q3", "q5"] and "relevance is undefined for 3 queries (q2, q3, q5)" in text
    # q5 is not in the run: its values are expeval's defaults, with no interval ("[—]")
    expected = {"q5": 0}
    assert len(rows) == 5 and all(len(c) == expected.get(row.split()[0], 2 if row.split()[0] in undefined else 3)
                                  for row, c in zip(rows, cells))
    assert "disparity 1.0000 [—]" in next(row for row in rows if row.split()[0] == "q5")
    for _, value, low, high in (cell for row in cells for cell in row):
        assert float(low) <= float(value) <= float(high)


def test_step_model_and_corrected_bounds():
    code, text = run(["evaluate-run", QRELS, RUN_A, "--trec-eval", "-u", "step", "-k", "5", "--bounds", "corrected"])
    assert code == 0 and text.count("\n") == 18
    # without -k the step user reads the longest ranking; the default output is the report
    code, text = run(["evaluate-run", QRELS, RUN_A, "-u", "step", "--seed", "1", "--n-boot", "100"])
    assert code == 0 and "User model step (k=10)" in text and "Mean over queries" in text


def test_compare_runs_readable_and_json():
    code, text = run(["compare-runs", QRELS, RUN_A, RUN_B, "--seed", "0", "-U"])
    assert code == 0
    assert "Run A sysA vs run B sysB on 5 judged queries" in text and "paired randomization" in text
    assert "exact over all 2^n sign vectors" in text
    code, text = run(["compare-runs", QRELS, RUN_A, RUN_B, "--seed", "0", "--json"])
    payload = json.loads(text)
    assert [m["metric"] for m in payload["metrics"]] == ["disparity", "relevance", "difference"]
    assert all(m["low"] <= m["difference"] <= m["high"] and 0 < m["p_value"] <= 1 for m in payload["metrics"])


def test_errors_name_the_file_line_and_fix(tmp_path, capsys):
    bad = tmp_path / "run.txt"
    bad.write_text("q1 s1 d1 1 1.0 r\nq1 s1 d2 1 0.5 r\n", encoding="utf-8")
    code, _ = run(["evaluate-run", QRELS, str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "run.txt, line 2: rank 1 appears twice" in err
    code, _ = run(["evaluate-run", RUN_A, QRELS])  # swapped arguments
    assert code == 2 and "looks like qrels" in capsys.readouterr().err
