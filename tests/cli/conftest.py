"""Fixtures the command-line tests share."""

import json

import pytest


@pytest.fixture()
def walk_in_query() -> str:
    """The text of the log's one query that is not in the collection (a module overrides it to test how it is
    written out)."""
    return "shoes for walking"


@pytest.fixture()
def log_path(tmp_path, shoes, walk_in_query):
    """A RAG log over the running-shoes collection: ``rs-q01`` served twice (citing its first document, then none)
    and ``walk-in`` (no relevance labels, typed as ``walk_in_query``) citing its third document; k = 5."""
    ids = shoes.doc_ids
    rows = [{"query_id": "rs-q01", "ranking": ids[:5], "answer": "x", "citations": [ids[0]]},
            {"query_id": "rs-q01", "ranking": ids[1:6], "answer": "y", "citations": []},
            {"query_id": "walk-in", "query": walk_in_query, "ranking": ids[10:15], "citations": [ids[12]]}]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path
