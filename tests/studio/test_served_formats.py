"""Every served file the CLI audits, the app takes, and the reverse (issue 28, "Served formats"): each format of
:mod:`fairrag_core.data.formats` in each of its suffixes passes the uploader's type check, is saved and read to the
log the CLI's reader (load_served) gives, and is listed and read from the data folder; a name the app takes is read
by the CLI as the kind its suffix names; a name with none of the table's suffixes is refused by the upload and the
data folder in one line that lists them. And once through the page: the ``.json`` OTLP export the uploader used to
refuse is uploaded and audited."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from served_samples import samples, write
from streamlit.elements.lib.file_uploader_utils import enforce_filename_restriction, normalize_upload_file_type
from streamlit.errors import StreamlitAPIException
from streamlit.testing.v1 import AppTest

from fairrag_core import DataFormatError
from fairrag_core.cli import main
from fairrag_core.data import load_served
from fairrag_core.data.formats import SERVED_FORMATS, kind_of, served_suffixes, upload_types
from fairrag_core.data.otlp_proto import is_protobuf
from fairrag_studio.services.data_dir import DataDirError, checked_data_file, data_files
from fairrag_studio.views.served import read_served, save_served_upload

APP = str(Path(__file__).resolve().parents[2] / "app.py")
AUDIT = "app_pages/audit.py"
SAMPLES = samples()
ACCEPTED = ", ".join(served_suffixes())


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    from fairrag_studio.services import resources

    monkeypatch.setenv("FAIRRAG_RUNS", str(tmp_path / "runs.duckdb"))
    monkeypatch.delenv("FAIRRAG_DATA_DIR", raising=False)
    monkeypatch.setattr(resources, "UPLOAD_ROOT", tmp_path / "uploads")
    resources.run_store.clear()
    yield
    resources.run_store.clear()


def uploader_takes(name: str) -> bool:
    """Whether the Audit page's uploader (its ``type=`` list, checked as Streamlit checks it) lets ``name`` in."""
    try:
        enforce_filename_restriction(name, normalize_upload_file_type(upload_types()))
    except StreamlitAPIException:
        return False
    return True


def seen(log) -> tuple:
    return log.kind, log.format, log.sha256, len(log), [e.ranking for e in log.entries]


def test_every_file_the_cli_reads_the_app_uploads_and_reads_from_its_data_folder(tmp_path, shoes):
    folder = tmp_path / "data"
    folder.mkdir()
    by_cli = {}
    for fmt in SERVED_FORMATS:
        for i, data in enumerate(SAMPLES[fmt.name]):
            for suffix in fmt.suffixes:
                if fmt.name == "otlp" and is_protobuf(suffix) is data.lstrip().startswith(b"{"):
                    continue  # OTLP JSON is .json(l), OTLP protobuf .pb
                name = f"{fmt.name}-{i}{suffix}"
                by_cli[name] = seen(load_served(write(folder / name, data), collection=shoes))
                assert by_cli[name][:2] == (fmt.kind, fmt.name)
                assert uploader_takes(name), name
                saved = save_served_upload(name, (folder / name).read_bytes(), tmp_path / "uploads")
                log, kind = read_served(saved, shoes)
                if saved.read_bytes() != (folder / name).read_bytes():  # a JSON Lines trace export, saved slimmed:
                    assert fmt.name == "otlp" and seen(log)[3:] == by_cli[name][3:]  # its sha256 is of what is kept
                else:
                    assert seen(log) == by_cli[name]
                assert seen(log)[:2] == by_cli[name][:2] and kind == fmt.kind
    assert len(by_cli) == 44 and data_files(folder) == sorted(by_cli)
    for name, expected in by_cli.items():
        assert seen(read_served(checked_data_file(name, folder), shoes)[0]) == expected


@pytest.mark.parametrize("fmt", SERVED_FORMATS, ids=lambda f: f.name)
def test_audit_log_audits_each_format(tmp_path, fmt):
    """The CLI itself, once per format (gzipped, in its last suffix): the audit runs and counts the 200 rankings."""
    path = write(tmp_path / f"served{fmt.suffixes[-1]}", SAMPLES[fmt.name][-1])
    out = io.StringIO()
    code = main(["audit-log", str(path), "--collection", "running-shoes", "--attribution", "none", "--no-store",
                 "--json", "--boot", "50", "--seed", "1"], out=out)
    assert code == 0
    payload = json.loads(out.getvalue())
    assert sum(q["lines"] for q in payload["queries"]) == 200


def test_what_the_app_takes_the_cli_reads_and_the_rest_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    names = sorted({f"served.{t}" for t in upload_types()} | {f"served{s}" for s in served_suffixes()}
                   | {"notes.md", "run.out", "log.jsonl.zip", "served.JSON.GZ"})
    sample = {"log": SAMPLES["jsonl"][0], "run": SAMPLES["trec"][0]}
    for name in names:
        try:
            kind = kind_of(name)
        except DataFormatError:
            kind = None
        if kind is not None:  # the app takes it: the CLI reads it as that kind
            write(folder / name, SAMPLES["otlp"][-1] if is_protobuf(name) else sample[kind])
            assert load_served(folder / name).kind == kind
            assert read_served(save_served_upload(name, (folder / name).read_bytes(), tmp_path / "up"), None)[1] == kind
            continue
        (folder / name).write_bytes(b"x")
        message = f"{name!r} is not a log or run file (the suffix must be one of {ACCEPTED})"
        with pytest.raises(DataFormatError) as err:
            save_served_upload(name, b"x", tmp_path / "up")
        assert str(err.value) == message + "; rename it"
        with pytest.raises(DataDirError) as err:
            checked_data_file(name, folder)
        assert str(err.value) == message + "; rename it or upload it"
    assert set(data_files(folder)) == {n for n in names if n.lower().endswith(served_suffixes())}
    assert "served.gz" in names and "served.gz" not in data_files(folder)  # a bare .gz names no format
    assert not (tmp_path / "up").exists() or not any(p.name == "served.gz" for p in (tmp_path / "up").rglob("*"))


def test_the_audit_page_uploads_and_audits_a_json_trace_export():
    export = SAMPLES["otlp"][1]  # one pretty-printed document, as the collector's file exporter writes it
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(AUDIT).run()
    at.radio(key="served_source").set_value("Upload").run()
    at.file_uploader(key="served_upload").set_value(("export.json", export, "application/json")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.button(key="served_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    headline = next(f.value for f in at.dataframe if "95% interval" in f.value.columns)
    assert headline["metric"].tolist()[:2] == ["EE-D", "EE-R"]


@pytest.mark.parametrize("suffix", served_suffixes())
def test_a_record_without_inputs_takes_its_kind_from_the_table(suffix):
    """A record saved by the CLI (no recorded inputs) is a log or a run by its file's suffix: before the table, a
    gzipped .ndjson or .json log (and in record_inputs any gzipped log) was called a run."""
    from types import SimpleNamespace

    from fairrag_studio.services.identity import record_inputs, served_kind

    record = SimpleNamespace(extra={"lines": 3}, config=SimpleNamespace(log=f"/srv/logs/Week1{suffix.upper()}"),
                             collection="")
    expected = kind_of(f"x{suffix}")
    assert served_kind(record) == expected and [i.role for i in record_inputs(record)] == [expected]
