"""``index list``, ``index build`` and ``index clear`` on a store in a temporary folder."""

import io
import json

import pytest

from fairrag_core.cli import main
from fairrag_core.retrieval.index_store import INDEX_ENV


def run(*argv):
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


@pytest.fixture
def index_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(INDEX_ENV, str(tmp_path / "indexes"))
    return tmp_path / "indexes"


def test_build_list_clear(index_dir):
    code, text = run("index", "list")
    assert code == 0 and text == f"no indexes in {index_dir}\n"
    code, text = run("index", "build", "--collection", "running-shoes")
    assert code == 0 and text.startswith("bm25 index of running-shoes (92 documents): ")
    code, text = run("index", "build", "--collection", "running-shoes", "--json")
    built = json.loads(text)
    key = built["index"]["key"]
    assert built["index"]["documents"] == 92 and built["index"]["kind"] == "bm25" and len(key) == 64
    assert len(list(index_dir.iterdir())) == 1 and built["index"]["path"] == str(index_dir / key)  # found the first
    code, text = run("index", "list")
    lines = text.splitlines()
    assert lines[0] == f"1 indexes in {index_dir}"
    assert lines[1].split() == ["key", "kind", "collection", "documents", "size", "built", "recall@K"]
    assert lines[2].split()[:4] == [key[:12], "bm25", "running-shoes", "92"] and lines[2].endswith("exact")
    listed = json.loads(run("index", "list", "--json")[1])
    assert [r["key"] for r in listed["indexes"]] == [key] and listed["root"] == str(index_dir)
    code, text = run("index", "clear", key[:12])
    assert code == 0 and text == f"removed 1 index from {index_dir}\n"
    assert json.loads(run("index", "list", "--json")[1])["indexes"] == []


def test_clear_all_and_errors(index_dir, capsys):
    run("index", "build", "--collection", "running-shoes")
    run("index", "build", "--collection", "news")
    code, text = run("index", "clear", "--all", "--json")
    assert code == 0 and json.loads(text) == {"removed": 2, "keys": []}
    code, _ = run("index", "clear")
    assert code == 2
    assert capsys.readouterr().err == "error: index clear takes one KEY (as `index list` prints it) or --all\n"
    code, _ = run("index", "clear", "abcdef")
    assert code == 2 and "no index under" in capsys.readouterr().err


def test_rank_uses_the_store(index_dir):
    code, _ = run("rank", "--collection", "running-shoes", "--query", "trail shoes", "--seed", "1", "--json")
    assert code == 0
    entries = json.loads(run("index", "list", "--json")[1])["indexes"]
    assert [(e["kind"], e["collection"]) for e in entries] == [("bm25", "running-shoes")]


def test_store_off(monkeypatch, capsys):
    monkeypatch.setenv(INDEX_ENV, "off")
    code, _ = run("index", "list")
    assert code == 2 and "the index store is off" in capsys.readouterr().err
