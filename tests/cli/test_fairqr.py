import io
import json

from fairrag_core.cli import main


def run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_fair_qr_prints_every_iteration_and_the_baselines():
    code, text = run(["fair-qr", "--query", "jazz pianists", "--category", "region"])
    assert code == 0
    assert "0. jazz pianists" in text and "Δ = " in text and "stopped:" in text
    for system in ("BM25", "MMR", "FA*IR", "FAIR-QR [no re-rank]", "FAIR-QR"):
        assert system in text


def test_fair_qr_json_trace_is_complete():
    code, text = run(["fair-qr", "--query", "jazz pianists", "--category", "gender,region", "--json"])
    assert code == 0
    payload = json.loads(text)
    assert payload["categories"] == ["gender", "region"]
    assert any(" × " in g for g in payload["target"])  # intersectional groups
    first = payload["iterations"][0]
    assert set(first) >= {"query", "added_keywords", "retrieved", "distribution", "delta", "under_represented"}
    assert len(first["retrieved"]) == 20 and len(payload["reranked"]) == 20
    assert {s["system"] for s in payload["systems"]} >= {"BM25", "FAIR-QR"}


def test_fair_qr_eval_table_tests_and_iteration_statistics(tmp_path):
    out_csv = tmp_path / "fqr.csv"
    code, text = run(["fair-qr-eval", "--queries", "ppl-q01,ppl-q02,ppl-q03,ppl-q04", "--output", str(out_csv)])
    assert code == 0
    assert "Table 1 layout — people, 4 queries" in text and "p-values" in text and "Refinements kept" in text
    assert "better / the same / worse than BM25" in text
    assert out_csv.read_text().startswith("query_id,category,system,ndcg,awrf,ndcg_x_awrf")


def test_fair_qr_errors_name_the_fix(capsys):
    code, _ = run(["fair-qr", "--query", "jazz", "--category", "colour"])
    assert code == 2 and "colour" in capsys.readouterr().err
    code, _ = run(["fair-qr", "--collection", "running-shoes", "--query", "trail shoes", "--category", "gender"])
    assert code == 2 and "gender" in capsys.readouterr().err
    assert run(["fair-qr", "--query", "jazz", "--top-k", "0"])[0] == 2
