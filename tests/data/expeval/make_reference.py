"""Build the test runs and qrels in this folder and record expeval's own output on them (reference.json).

CI cannot fetch expeval, so its numbers are committed. To regenerate (needs a checkout of github.com/diazf/expeval,
commit 69ab070f9e3fb186910412c1c0d98ec35cb933bc, and Python 3):

    git clone https://github.com/diazf/expeval /tmp/expeval
    python tests/data/expeval/make_reference.py --expeval /tmp/expeval

For every case the script runs expeval's command line unchanged (``stdout``: its printed values, 6 decimals) and
once more with its ``Metric.string`` printing ``repr`` instead of ``%f`` (``stdout_full``: the same values at full
precision; nothing else is patched). Both commands are stored with the case, with PYTHONHASHSEED=0 since
expeval sums over Python sets.

The inputs cover: graded grades 0–3, unjudged (−1) lines, 3-field qrels lines (group −1), documents in several
groups (``1|2``), a query with a single relevant grade, a query without any relevant document, a query in the
qrels but not in the run, a query in the run but not in the qrels, a query whose judged documents are never
ranked, unjudged documents in rankings, samples of different lengths, equal scores (ties broken by the rank
column), lines in shuffled order, and a plain one-sample TREC run (``Q0``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
EXPEVAL_COMMIT = "69ab070f9e3fb186910412c1c0d98ec35cb933bc"
FULL_PRECISION = ("import sys; sys.path.insert(0, {path!r}); import metrics; "
                  "metrics.Metric.string = lambda self, normalized=False: repr(self.float(normalized)); "
                  "sys.argv = ['expeval.py'] + sys.argv[1:]; import expeval; expeval.main()")


def _qrels(rng: np.random.Generator) -> tuple[str, str]:
    lines = []
    # q1: graded 0–3 and -1, groups 1..3, some documents in two groups, a few 3-field lines (group -1)
    for i in range(14):
        grade = [3, 2, 2, 1, 1, 1, 0, 0, 0, -1, 1, 0, 2, -1][i]
        group = ["1", "2", "1|2", "3", "2", "1", "3", "2|3", "1", "2", "3", "1", "2", "3"][i]
        lines.append(f"q1 {group} d{i:02d} {grade}" if i % 5 else f"q1 d{i:02d} {grade}")
    # q2: binary grades
    lines += [f"q2 {1 + i % 2} e{i:02d} {int(i % 3 == 0)}" for i in range(12)]
    # q3: one relevant grade (2) and non-relevant documents
    lines += [f"q3 {1 + i % 3} f{i:02d} {2 if i < 4 else 0}" for i in range(10)]
    # q4: no relevant document (0 and -1 only): skipped unless judgments are complete
    lines += [f"q4 1 g{i:02d} {0 if i % 2 else -1}" for i in range(6)]
    # q5: judged, never ranked by any run
    lines += [f"q5 {1 + i % 2} h{i:02d} {int(i < 3)}" for i in range(5)]
    # q6: judged documents that the run never retrieves
    lines += [f"q6 {1 + i % 2} k{i:02d} {1 + i % 2}" for i in range(4)]
    graded = "\n".join(lines) + "\n"
    binary = "\n".join(" ".join(p[:-1] + [str(int(int(p[-1]) > 0) if p[-1] != "-1" else -1)])
                       for p in (line.split() for line in lines)) + "\n"
    return graded, binary


def _pool(qid: str) -> list[str]:
    judged = {"q1": [f"d{i:02d}" for i in range(14)], "q2": [f"e{i:02d}" for i in range(12)],
              "q3": [f"f{i:02d}" for i in range(10)], "q4": [f"g{i:02d}" for i in range(6)],
              "q6": [], "q7": []}[qid]
    return judged + [f"{qid}-u{i}" for i in range(6)]  # unjudged documents too


def _run(rng: np.random.Generator, name: str, n_samples: int, sharpness: float) -> str:
    lines = []
    for qid in ("q1", "q2", "q3", "q4", "q6", "q7"):
        pool = _pool(qid)
        base = rng.normal(size=len(pool)) * sharpness
        for s in range(1, n_samples + 1):
            order = np.argsort(-(base + rng.gumbel(size=len(pool))))
            depth = int(rng.integers(5, 11))  # samples of different lengths
            tie = s % 4 == 0  # every 4th sample: all scores equal, the rank column decides
            for rank, i in enumerate(order[:depth], start=1):
                score = 1.0 if tie else round(float(10 - rank + rng.uniform(0, 0.5)), 4)
                lines.append(f"{qid} s{s:03d} {pool[i]} {rank} {score} {name}")
    order = rng.permutation(len(lines))  # lines in any order
    return "\n".join(lines[i] for i in order) + "\n"


def _plain(rng: np.random.Generator) -> str:
    lines = []
    for qid in ("q1", "q2", "q3", "q6"):
        pool = _pool(qid)
        for rank, i in enumerate(rng.permutation(len(pool))[:9], start=1):
            lines.append(f"{qid} Q0 {pool[i]} {rank} {20 - rank} plain")
    return "\n".join(lines) + "\n"


def write_inputs() -> dict[str, Path]:
    rng = np.random.default_rng(20201019)
    graded, binary = _qrels(rng)
    files = {"qrels_graded.txt": graded, "qrels_binary.txt": binary,
             "run_a.txt": _run(rng, "sysA", 30, 1.5), "run_b.txt": _run(rng, "sysB", 30, 0.3),
             "run_plain.txt": _plain(rng)}
    for name, text in files.items():
        (HERE / name).write_text(text, encoding="utf-8")
    return {name: HERE / name for name in files}


def cases() -> list[dict]:
    """Every (qrels, run, flags) case recorded; the flags are expeval's."""
    out = []
    for run, qrels in (("run_a.txt", "qrels_graded.txt"), ("run_plain.txt", "qrels_graded.txt"),
                       ("run_a.txt", "qrels_binary.txt"), ("run_b.txt", "qrels_graded.txt")):
        for model, unnorm, binarize, complete, groups in itertools.product(("gerr", "rbp"), (False, True),
                                                                           (False, True), (False, True),
                                                                           (False, True)):
            if groups and run != "run_a.txt":
                continue
            flags = ["-u", model] + ["-U"] * unnorm + ["-B"] * binarize + ["-C"] * complete + ["-G"] * groups
            out.append({"run": run, "qrels": qrels, "flags": flags})
    extra = (["-u", "gerr", "-p", "0.8", "-r", "0.3"], ["-u", "gerr", "-p", "0.3", "-r", "0.9", "-C"],
             ["-u", "rbp", "-p", "0.9"], ["-u", "rbp", "-p", "0.9", "-C"],
             ["-u", "gerr", "-p", "0.8", "-r", "0.3", "-U", "-C"], ["-u", "gerr", "-p", "0.8", "-r", "0.3", "-G"],
             ["-u", "gerr", "-p", "0.8", "-r", "0.3", "-G", "-C"], ["-u", "rbp", "-p", "0.7", "-G", "-U"])
    out.extend({"run": "run_a.txt", "qrels": "qrels_graded.txt", "flags": flags} for flags in extra)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--expeval", required=True, help="folder holding expeval.py")
    args = parser.parse_args()
    expeval = Path(args.expeval).resolve()
    write_inputs()
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    recorded = {"expeval_commit": EXPEVAL_COMMIT, "python": sys.version.split()[0], "cases": []}
    for case in cases():
        files = [case["qrels"], case["run"]]
        stock = ["python3", str(expeval / "expeval.py"), *case["flags"], *files]
        full = ["python3", "-c", FULL_PRECISION.format(path=str(expeval)), *case["flags"], *files]
        outputs = [subprocess.run(cmd, cwd=HERE, env=env, capture_output=True, text=True, check=True).stdout
                   for cmd in (stock, full)]
        recorded["cases"].append({**case, "command": "PYTHONHASHSEED=0 python3 expeval/expeval.py "
                                                     + " ".join(case["flags"] + files),
                                  "stdout": outputs[0], "stdout_full": outputs[1]})
    (HERE / "reference.json").write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")
    print(f"recorded {len(recorded['cases'])} cases in {HERE / 'reference.json'}")


if __name__ == "__main__":
    main()
