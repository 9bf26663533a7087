"""The parsed-corpus cache: a cached collection equals a fresh load (documents, groups in order, sha256), a changed
file is read again, a broken entry is rebuilt, FAIRRAG_INDEX=off and small files bypass it, and a warm load neither
parses nor hashes the corpus."""

import io
import json
import os

import numpy as np
import pytest

from fairrag_core import load_collection
from fairrag_core.data import collection_cache, identity, loaders
from fairrag_core.data.collection_cache import KIND, SHA_MEMO, parser_identity
from fairrag_core.retrieval.index_store import INDEX_ENV, IndexStore

DOCS = [
    {"doc_id": "a", "text": "Alpha text", "title": "A", "provider": "P1", "groups": {"region": "Asia", "size": "big"}},
    {"doc_id": "b", "text": "  Beta text ", "groups": {"size": "big", "region": "Asia"}},  # same groups, other order
    {"doc_id": "c", "text": "Ünïcødé ✓ 漢字 \u2028 line", "title": "", "provider": "P1"},
    {"doc_id": "d", "text": "delta", "provider": None, "groups": {"region": "Africa"}},
    {"doc_id": "𝔢", "text": "astral", "title": "Ω", "provider": "P2", "groups": {"region": "Asia", "size": "big"}},
]


def _folder(path, docs=DOCS, *, csv=False):
    path.mkdir(parents=True, exist_ok=True)
    if csv:
        (path / "corpus.csv").write_text("doc_id,text,title,provider,group:region\n" + "".join(
            f"{d['doc_id']},{d['text']},{d.get('title') or ''},{d.get('provider') or ''},"
            f"{(d.get('groups') or {}).get('region', '')}\n" for d in docs), encoding="utf-8")
    else:
        (path / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                                           encoding="utf-8")
    (path / "queries.jsonl").write_text(json.dumps({"query_id": "q1", "text": "alpha"}) + "\n", encoding="utf-8")
    (path / "qrels.txt").write_text("q1 0 a 2\nq1 0 d 1\n", encoding="utf-8")
    return path


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An index store of this test that caches every corpus (no size floor), and a fresh process's memory."""
    monkeypatch.setenv(INDEX_ENV, str(tmp_path / "indexes"))
    monkeypatch.setattr(collection_cache, "MIN_CACHED_BYTES", 0)
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    return IndexStore(tmp_path / "indexes")


@pytest.fixture
def parses(monkeypatch):
    """How many times a JSONL or CSV corpus file is parsed."""
    count = {"n": 0}
    for name in ("_corpus_from_jsonl", "_corpus_from_csv"):
        real = getattr(loaders, name)

        def counted(*args, real=real, **kwargs):
            count["n"] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(loaders, name, counted)
    return count


def _fresh(folder, monkeypatch):
    """The collection loaded with the cache off, as before the cache existed."""
    with monkeypatch.context() as m:
        m.setenv(INDEX_ENV, "off")
        m.setattr(identity, "_SHA_CACHE", {})
        return load_collection(folder)


def _same(cached, fresh):
    assert cached == fresh
    assert (cached.sha256, cached.source, cached.name) == (fresh.sha256, fresh.source, fresh.name)
    assert len(fresh.sha256) == 64
    for a, b in zip(cached.documents, fresh.documents, strict=True):
        assert (a.doc_id, a.text, a.title, a.provider, a.full_text) == (b.doc_id, b.text, b.title, b.provider,
                                                                          b.full_text)
        assert list(a.groups.items()) == list(b.groups.items())
        with pytest.raises(TypeError):
            a.groups["region"] = "x"  # read-only, as a parsed document's


@pytest.mark.parametrize("csv", [False, True])
def test_round_trip_equals_a_fresh_load(tmp_path, store, parses, monkeypatch, csv):
    folder = _folder(tmp_path / "news", csv=csv)
    fresh = _fresh(folder, monkeypatch)
    assert parses["n"] == 1
    first = load_collection(folder)  # parsed once more, and stored
    assert parses["n"] == 2
    [entry] = [e for e in store.entries() if e.kind == KIND]
    assert entry.collection == "news" and entry.manifest["n_docs"] == 5
    assert entry.manifest["parser"] == ("csv" if csv else "jsonl")
    monkeypatch.setattr(identity, "_SHA_CACHE", {})  # a new process
    second = load_collection(folder)
    assert parses["n"] == 2  # read from the store
    _same(first, fresh)
    _same(second, fresh)
    assert [d.provider for d in second.documents] == ["P1", "b", "P1", "d", "P2"]  # a missing one: the doc_id
    assert second.relevance("q1").tolist() == [2, 0, 0, 1, 0]
    np.testing.assert_array_equal(second.group_of("region", fill="Unknown"), fresh.group_of("region", fill="Unknown"))


def test_a_warm_load_does_not_hash_the_corpus(tmp_path, store, monkeypatch):
    folder = _folder(tmp_path / "news")
    fresh = _fresh(folder, monkeypatch)
    load_collection(folder)
    memo = json.loads((store.root / SHA_MEMO).read_text(encoding="utf-8"))
    corpus = folder / "corpus.jsonl"
    assert list(memo.values()) == [identity.file_sha256(corpus)]
    hashed = []
    real = identity.read_sha256
    monkeypatch.setattr(identity, "read_sha256", lambda path: hashed.append(path.name) or real(path))
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    again = load_collection(folder)
    assert again.sha256 == fresh.sha256
    assert "corpus.jsonl" not in hashed and sorted(hashed) == ["qrels.txt", "queries.jsonl"]


def test_a_changed_file_is_read_again(tmp_path, store, parses, monkeypatch):
    folder = _folder(tmp_path / "news")
    corpus = folder / "corpus.jsonl"
    load_collection(folder)
    before = corpus.stat()
    changed = [dict(d, text="Alpha text, revised") if d["doc_id"] == "a" else d for d in DOCS]
    _folder(folder, changed)
    os.utime(corpus, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    now = load_collection(folder)
    assert now.documents[0].text == "Alpha text, revised" and parses["n"] == 2
    _same(now, _fresh(folder, monkeypatch))
    assert len([e for e in store.entries() if e.kind == KIND]) == 2  # one per content

    # the same bytes with a new modification time: read again (and hashed), found stored under the same content
    os.utime(corpus, ns=(before.st_atime_ns, before.st_mtime_ns + 2 * 10**9))
    n = parses["n"]
    assert load_collection(folder) == now and parses["n"] == n + 1
    assert len([e for e in store.entries() if e.kind == KIND]) == 2


@pytest.mark.parametrize("damage", ["truncate strings", "garbage offsets", "groups table", "no manifest",
                                    "offsets backwards", "group row out of range"])
def test_a_broken_entry_is_rebuilt(tmp_path, store, parses, monkeypatch, damage):
    folder = _folder(tmp_path / "news")
    fresh = _fresh(folder, monkeypatch)
    load_collection(folder)
    [entry] = [e for e in store.entries() if e.kind == KIND]
    path = entry.path
    if damage == "truncate strings":
        data = (path / "strings.npy").read_bytes()
        (path / "strings.npy").write_bytes(data[:-7])
    elif damage == "garbage offsets":
        (path / "offsets.npy").write_bytes(b"\x93NUMPY not really")
    elif damage == "groups table":
        (path / "groups.json").write_text("[[[\"region\"", encoding="utf-8")
    elif damage == "no manifest":
        (path / "manifest.json").unlink()
    elif damage == "offsets backwards":
        offsets = np.load(path / "offsets.npy")
        offsets[2], offsets[3] = offsets[3], offsets[2]
        np.save(path / "offsets.npy", offsets)
    else:
        np.save(path / "group_ids.npy", np.array([0, 0, 1, 2, 9], dtype=np.int32))
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    n = parses["n"]
    again = load_collection(folder)
    assert parses["n"] == n + 1  # parsed from the file, not trusted
    _same(again, fresh)
    assert collection_cache._read(store, entry.key) is not None  # and stored again, readable
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    _same(load_collection(folder), fresh)
    assert parses["n"] == n + 1


def test_off_and_small_files_bypass_it(tmp_path, parses, monkeypatch):
    folder = _folder(tmp_path / "news")
    monkeypatch.setenv("FAIRRAG_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(INDEX_ENV, "off")
    monkeypatch.setattr(collection_cache, "MIN_CACHED_BYTES", 0)
    load_collection(folder)
    load_collection(folder)
    assert parses["n"] == 2 and not (tmp_path / "cache").exists()

    monkeypatch.delenv(INDEX_ENV)  # the store on, in $FAIRRAG_CACHE/indexes, but the file under the floor
    monkeypatch.setattr(collection_cache, "MIN_CACHED_BYTES", (folder / "corpus.jsonl").stat().st_size + 1)
    load_collection(folder)
    load_collection(folder)
    assert parses["n"] == 4 and not (tmp_path / "cache").exists()

    monkeypatch.setattr(collection_cache, "MIN_CACHED_BYTES", (folder / "corpus.jsonl").stat().st_size)
    load_collection(folder)
    assert [e.kind for e in IndexStore(tmp_path / "cache" / "indexes").entries()] == [KIND]


def test_errors_are_the_loaders_own(tmp_path, store):
    folder = _folder(tmp_path / "bad", [*DOCS, {"doc_id": "a", "text": "again"}])
    with pytest.raises(Exception, match="duplicate doc_id 'a'") as cached_error:
        load_collection(folder)
    assert not store.entries()  # nothing stored for a corpus that does not load
    (folder / "corpus.jsonl").unlink()
    (folder / "corpus.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    with pytest.raises(type(cached_error.value), match="nowhere|corpus.jsonl"):
        load_collection(folder)


def test_the_key_follows_the_parsing_code(tmp_path, store, parses, monkeypatch):
    folder = _folder(tmp_path / "news")
    load_collection(folder)
    monkeypatch.setattr(collection_cache, "parser_identity", lambda: "another loader")
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    load_collection(folder)
    assert parses["n"] == 2 and len(store.entries()) == 2
    assert len(parser_identity()) == 64


def test_listed_and_cleared_with_the_indexes(tmp_path, store):
    from fairrag_core.cli import main
    from fairrag_core.record import software

    folder = _folder(tmp_path / "news")
    load_collection(folder)
    [entry] = store.entries()
    assert entry.manifest["version"] == software()["version"] != "unknown"  # a checkout's pyproject.toml
    assert entry.manifest["corpus_sha256"] == identity.file_sha256(folder / "corpus.jsonl")
    out = io.StringIO()
    assert main(["index", "list"], out=out) == 0
    row = out.getvalue().splitlines()[-1].split()
    assert row[:4] == [entry.key[:12], KIND, "news", "5"] and row[-1] == "—"
    assert main(["index", "clear", "--all"], out=io.StringIO()) == 0
    assert not store.entries()


def test_a_store_that_cannot_be_written_warns_and_loads(tmp_path, monkeypatch, parses):
    folder = _folder(tmp_path / "news")
    fresh = _fresh(folder, monkeypatch)
    (tmp_path / "a-file").write_text("in the way", encoding="utf-8")
    monkeypatch.setenv(INDEX_ENV, str(tmp_path / "a-file" / "indexes"))
    monkeypatch.setattr(collection_cache, "MIN_CACHED_BYTES", 0)
    with pytest.warns(RuntimeWarning, match="was not stored in .*a-file"):
        _same(load_collection(folder), fresh)
    assert parses["n"] == 2


def test_a_broken_entry_found_without_the_memo_heals_on_the_next_load(tmp_path, store, parses, monkeypatch):
    folder = _folder(tmp_path / "news")
    fresh = _fresh(folder, monkeypatch)
    load_collection(folder)
    [entry] = store.entries()
    (entry.path / "groups.json").write_text("not json", encoding="utf-8")
    (store.root / SHA_MEMO).unlink()
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    _same(load_collection(folder), fresh)  # parsed (the memo is gone); the entry is not read back here
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    _same(load_collection(folder), fresh)  # the memo finds it, it does not read: parsed and replaced
    monkeypatch.setattr(identity, "_SHA_CACHE", {})
    n = parses["n"]
    _same(load_collection(folder), fresh)
    assert parses["n"] == n == 4
