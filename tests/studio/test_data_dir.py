"""The Audit page reads server files from $FAIRRAG_DATA_DIR only (issue 19, item 2): unset, it offers no server
files at all; set, it lists the regular log and run files inside that folder, symlinks resolved, and refuses
everything else (another folder, ``..``, a symlink that leads out, /dev/zero, a FIFO, a folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fairrag_studio.services.data_dir import DATA_DIR_ENV, DataDirError, checked_data_file, data_dir, data_files

APP = str(Path(__file__).resolve().parents[2] / "app.py")
AUDIT = "app_pages/audit.py"
REFUSED = "the app reads server files only from $FAIRRAG_DATA_DIR"


@pytest.fixture(autouse=True)
def _run_store(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    resources.run_store.clear()
    yield
    resources.run_store.clear()


@pytest.fixture()
def folder(tmp_path):
    """A data folder with two good files and every kind of file the app must not read; a secret outside it."""
    data = tmp_path / "data"
    (data / "week2").mkdir(parents=True)
    (data / "log.jsonl").write_text('{"query_id": "rs-q01", "ranking": ["rs-001"]}\n')
    (data / "week2" / "run.tsv").write_text("rs-q01\tQ0\trs-001\t1\t1.0\tsys\n")
    (data / "a" / "b" / "c" / "d").mkdir(parents=True)
    (data / "a" / "b" / "c" / "three.jsonl").write_text("{}\n")  # three levels down: listed
    (data / "a" / "b" / "c" / "d" / "four.jsonl").write_text("{}\n")  # four: not listed (still readable by name)
    (data / "notes.md").write_text("not a log")
    (data / ".hidden.jsonl").write_text("{}\n")
    (data / "folder.jsonl").mkdir()
    os.mkfifo(data / "fifo.jsonl")
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"query_id": "top secret", "ranking": ["x"]}\n')
    (data / "escape.jsonl").symlink_to(secret)
    (data / "zero.jsonl").symlink_to("/dev/zero")
    (data / "alias.jsonl").symlink_to(data / "log.jsonl")  # inside: fine
    return data


def open_audit() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(AUDIT).run()
    assert not at.exception
    return at


def test_without_the_variable_the_app_offers_no_server_files():
    at = open_audit()
    assert at.radio(key="served_source").options == ["Demo log", "Upload"]
    assert not [t for t in at.text_input if t.key == "served_path"]
    assert data_dir() is None


def test_the_data_folder_lists_only_the_files_the_app_may_read(folder, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(folder))
    listed = ["a/b/c/three.jsonl", "alias.jsonl", "log.jsonl", "week2/run.tsv"]
    assert data_files(folder) == listed
    at = open_audit()
    assert at.radio(key="served_source").options == ["Demo log", "Upload", "Data folder"]
    at.radio(key="served_source").set_value("Data folder").run()
    assert at.selectbox(key="served_file").options == listed
    at.selectbox(key="served_file").set_value("log.jsonl").run()
    assert not at.exception and any("1 served rankings over 1 queries" in i.value for i in at.info)


@pytest.mark.parametrize(("name", "why"), [
    ("escape.jsonl", "is outside the data folder"),  # a symlink out of the folder, resolved before the check
    ("zero.jsonl", "is outside the data folder"),
    ("/dev/zero", "is outside the data folder"),
    ("/etc/passwd", "is outside the data folder"),
    ("../secret.jsonl", "is outside the data folder"),
    ("week2/../../secret.jsonl", "is outside the data folder"),
    ("fifo.jsonl", "is not a regular file"),
    ("folder.jsonl", "is not a regular file"),
    ("missing.jsonl", "no file 'missing.jsonl' in"),
    ("notes.md", "is not a log or run file"),
])
def test_every_other_file_is_refused_with_the_fix(folder, name, why):
    with pytest.raises(DataDirError) as caught:
        checked_data_file(name, folder)
    message = str(caught.value)
    assert why in message and "top secret" not in message
    if why in ("is outside the data folder", "no file 'missing.jsonl' in"):
        assert f"{REFUSED} ({folder}); put the file there or upload it" in message


def test_a_file_inside_is_returned_with_its_symlinks_resolved(folder):
    assert checked_data_file("alias.jsonl", folder) == folder / "log.jsonl"
    assert checked_data_file(folder / "week2" / "run.tsv", folder) == folder / "week2" / "run.tsv"
    linked = folder.parent / "linked-data"
    linked.symlink_to(folder)  # the variable may itself name a symlink to the folder
    assert checked_data_file("log.jsonl", linked) == folder / "log.jsonl"


def test_a_variable_that_names_no_folder_is_a_message_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nowhere"))
    at = open_audit()
    assert not at.exception
    assert at.radio(key="served_source").options == ["Demo log", "Upload"]
    assert any("$FAIRRAG_DATA_DIR is" in e.value and "not a folder on this server" in e.value for e in at.error)
