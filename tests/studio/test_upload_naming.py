"""An uploaded collection's name (issue 30, Must have 4): the name given, else the corpus file's stem — but two
uploads of a generic ``corpus.jsonl`` get different names (after their content), and a zipped collection folder is
named after the folder it holds.

AppTest cannot drive a file uploader; the sidebar's Load button calls exactly these functions
(:func:`fairrag_studio.services.uploads.unzip_collection`, :func:`fairrag_studio.services.resources.save_upload`).
"""

from __future__ import annotations

import io
import zipfile

import pytest

from fairrag_core import load_collection
from fairrag_core.errors import DataFormatError
from fairrag_studio.services import uploads
from fairrag_studio.services.identity import collection_identity

NEWS = b'{"doc_id": "n1", "text": "harbour news"}\n{"doc_id": "n2", "text": "market news"}\n'
PACKAGES = b'{"doc_id": "p1", "text": "python web framework"}\n'
QUERIES = b'{"query_id": "q1", "text": "news"}\n'
QRELS = b"q1 0 n1 1\n"


@pytest.fixture()
def save(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path / "uploads")
    return resources.save_upload


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_two_uploads_of_corpus_jsonl_get_different_names(save):
    first, second = save(("corpus.jsonl", NEWS), None, None), save(("corpus.jsonl", PACKAGES), None, None)
    names = [collection_identity(str(f)).name for f in (first, second)]
    sha = [collection_identity(str(f)).sha256 for f in (first, second)]
    assert names == [f"corpus-{sha[0][:8]}", f"corpus-{sha[1][:8]}"] and names[0] != names[1]
    assert load_collection(first).name == names[0]
    assert save(("corpus.jsonl", NEWS), None, None) == first  # the same file again: the same name and folder


def test_a_given_name_or_a_telling_file_name_is_kept(save):
    assert collection_identity(str(save(("corpus.jsonl", NEWS), None, None, name="Harbour news"))).name == \
        "Harbour-news"
    assert collection_identity(str(save(("debian-packages.jsonl", PACKAGES), None, None))).name == "debian-packages"
    assert collection_identity(str(save(("corpus.jsonl", NEWS), None, None, name="corpus"))).name == "corpus"


def test_the_name_field_starts_on_the_file_stem_unless_it_is_generic():
    assert [uploads.suggested_name(n) for n in ("my-news.jsonl", "corpus.jsonl", "CORPUS.csv", "queries.jsonl")] \
        == ["my-news", "", "", ""]


def test_a_zipped_folder_is_named_after_the_folder_and_loads_whole(save):
    data = zipped({"debian/corpus.jsonl": NEWS, "debian/queries.jsonl": QUERIES, "debian/qrels.txt": QRELS,
                   "debian/README.md": b"notes", "__MACOSX/debian/._corpus.jsonl": b"junk"})
    name, parts = uploads.unzip_collection("download (3).zip", data)
    assert name == "debian" and sorted(parts) == ["corpus", "qrels", "queries"]
    assert parts["corpus"] == ("corpus.jsonl", NEWS)
    folder = save(parts["corpus"], parts.get("queries"), parts.get("qrels"), name=name)
    loaded = load_collection(folder)
    assert (loaded.name, len(loaded), len(loaded.queries), loaded.qrels) == ("debian", 2, 1, {"q1": {"n1": 1}})


def test_a_zip_without_a_folder_is_named_after_the_zip_unless_generic():
    assert uploads.unzip_collection("trec-fair.zip", zipped({"corpus.jsonl": NEWS}))[0] == "trec-fair"
    assert uploads.unzip_collection("corpus.zip", zipped({"corpus.jsonl": NEWS}))[0] == ""


@pytest.mark.parametrize(("files", "why"), [
    ({"notes.md": b"x"}, "no corpus.jsonl or corpus.csv in the zip; zip one collection's folder"),
    ({"a/corpus.jsonl": NEWS, "b/corpus.csv": b"doc_id,text\n"}, "more than one corpus in the zip (a/corpus.jsonl"),
    ({"c/corpus.jsonl": NEWS, "c/aspect_qrels.tsv": b""}, "aspect_qrels.tsv is not read from uploads"),
])
def test_a_zip_that_holds_no_single_collection_says_so(files, why):
    with pytest.raises(DataFormatError, match=why.replace("(", r"\(")):
        uploads.unzip_collection("c.zip", zipped(files))


def test_a_zipped_part_over_the_upload_limit_is_refused_whatever_the_zip_claims(monkeypatch):
    monkeypatch.setenv("FAIRRAG_MAX_UPLOAD_MB", "1")
    with pytest.raises(DataFormatError, match=r"big/corpus.jsonl is over the 1 MB the app accepts"):
        uploads.unzip_collection("big.zip", zipped({"big/corpus.jsonl": NEWS * 20_000}))
    with pytest.raises(DataFormatError, match=r"not a readable zip"):
        uploads.unzip_collection("bad.zip", b"PK not really")


class Sent:
    """What ``st.file_uploader`` returns for a file the user picked (name, bytes, and the id of this upload)."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self._data, self.file_id = name, data, f"{name}-{len(data)}-{hash(data)}"

    def getvalue(self) -> bytes:
        return self._data


def test_the_sidebar_asks_for_a_name_and_two_corpus_jsonl_uploads_get_different_ones(save, tmp_path, monkeypatch):
    """The sidebar's upload panel in AppTest, with the corpus uploader answering as if a file had been picked (AppTest
    cannot pick files): the name field starts empty for corpus.jsonl and says so, on the folder's name for a zip."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.studio.test_data_dir_collections import APP

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_DATA_DIR", raising=False)
    picked: dict[str, Sent | None] = {"upload_corpus": None}
    real = st.file_uploader
    monkeypatch.setattr(st, "file_uploader", lambda label, *a, key=None, **kw:
                        picked[key] if key in picked else real(label, *a, key=key, **kw))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.sidebar.selectbox(key="collection_choice").set_value("Upload your own…").run()
    loaded = []
    for corpus in (NEWS, PACKAGES):
        picked["upload_corpus"] = Sent("corpus.jsonl", corpus)
        at.run()
        assert at.sidebar.text_input(key="upload_name").value == ""
        asked = "corpus\\.jsonl does not say which collection this is"
        assert any(c.value.startswith(asked) for c in at.sidebar.caption)
        at.sidebar.button(key="upload_load").click().run()
        assert not at.exception, at.exception
        loaded.append(collection_identity(at.session_state["uploaded_collection"]).name)
    assert loaded[0] != loaded[1] and all(name.startswith("corpus-") for name in loaded)
    picked["upload_corpus"] = Sent("download.zip", zipped({"harbour/corpus.jsonl": NEWS}))
    at.run()
    assert at.sidebar.text_input(key="upload_name").value == "harbour"
    at.sidebar.button(key="upload_load").click().run()
    assert collection_identity(at.session_state["uploaded_collection"]).name == "harbour"
    assert at.sidebar.selectbox(key="collection_choice").value == "Upload your own…"
