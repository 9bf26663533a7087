"""compare-runs takes audit-log's merit rule (issue 29, "the same audit everywhere"), a trace export's findings count
requests, never lines, and a stored comparison reopened from another process (``runs show``) says the findings
compare-runs printed, each system's own included."""

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from fairrag_core.cli import main
from tests.audit.test_label_free_trace import _export

ROOT = Path(__file__).resolve().parents[2]


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def _findings(text: str) -> str:
    return text.split("\nFindings:\n")[1].split("\n\nPer-query")[0]


def test_compare_runs_finds_each_systems_merit_by_the_rule_given_and_a_stored_comparison_says_the_same(tmp_path):
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir(), b_dir.mkdir()
    a, b = _export(a_dir, requests=40), _export(b_dir, requests=30)
    store = str(tmp_path / "runs.duckdb")
    argv = ["compare-runs", str(a), str(b), "--provider-from", "metadata.source", "--seed", "5", "--n-boot", "200",
            "--n-permutations", "500", "--merit-threshold", "0.5", "--store", store]
    code, text = run(argv)
    assert code == 0
    found = _findings(text)
    # each system's own merit findings, by the rule given once, with the requests (not lines) they rest on
    merit = [line for line in found.splitlines() if "is under-exposed for its merit" in line]
    assert len(merit) == 2 and all("(merit = the system's own scores, score ≥ 0.5 meritorious)" in line
                                   for line in merit)
    assert "; 40 queries, 40 requests)" in found and "; 30 queries, 30 requests)" in found
    assert " lines)" not in found
    command = text.split("Reproduce with: ")[1].strip()
    assert command.endswith("--provider-from metadata.source --merit-threshold 0.5")
    code, quartiles = run([*shlex.split(command)[3:-2], "--no-store"])  # the default rule: quartiles
    assert code == 0 and "quartiles per query" in _findings(quartiles) and "score ≥" not in _findings(quartiles)

    # reopened in a new process: the same findings, the systems' own kept in the record
    run_id = text.split("Saved as run ")[1].split()[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shown = subprocess.run([sys.executable, "-m", "fairrag_core", "runs", "show", run_id, "--store", store],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout
    assert _findings(shown) == found
    payload = json.loads(subprocess.run([sys.executable, "-m", "fairrag_core", "runs", "show", run_id, "--store",
                                         store, "--json"], capture_output=True, text=True, env=env, cwd=tmp_path,
                                        check=True).stdout)
    fresh = json.loads(run([*argv[:-2], "--no-store", "--json"])[1])
    assert payload["findings"] == fresh["findings"]
    assert sum("merit" in f["metric"] for f in payload["findings"]) >= 2


def test_a_jsonl_logs_findings_still_count_lines(tmp_path):
    """A RAG log's lines are its served answers: its findings say lines, word for word as before."""
    log, providers = tmp_path / "log.jsonl", tmp_path / "providers.csv"
    with log.open("w") as f:
        for r in range(40):
            f.write(json.dumps({"query_id": f"q{r % 20}", "ranking": [f"a{r}", f"b{r}"], "citations": [f"b{r}"]})
                    + "\n")
    providers.write_text("doc_id,provider\n" + "".join(f"a{r},Acme\nb{r},Brio\n" for r in range(40)))
    code, text = run(["audit-log", str(log), "--provider-map", str(providers), "--seed", "1", "--no-store",
                      "--boot", "200"])
    assert code == 0, text
    found = text.split("\nFindings")[1].split("\nHeadline")[0]
    assert "20 queries, 40 lines)" in found and "requests)" not in found
