"""``collect`` as a user runs it: a process listening on 127.0.0.1 (an ephemeral port) that says where, takes the
demo trace export as OTLP protobuf requests, stops on Ctrl-C with its counts, and leaves a store that ``audit-log``
audits exactly as it audits the export itself (the JSON output equal but for the command that names the input)."""

import io
import json
import signal
import subprocess
import sys
import urllib.request

from fairrag_core.cli import main
from fairrag_core.data import assets_dir
from fairrag_core.data.otlp_proto import json_to_request

DEMO_TRACES = assets_dir() / "logs" / "running-shoes.otlp.jsonl"


def audit(path, *more):
    out = io.StringIO()
    assert main(["audit-log", str(path), "--no-store", "--json", "--boot", "100", "--seed", "4", *more], out=out) == 0
    payload = json.loads(out.getvalue())
    record = payload.pop("config")  # the run record names the input (its path, name, sha256) and takes a time
    del payload["command"], payload["fairrag"], record["config"]["log"]  # the header names the input, as the record
    payload["settings"], payload["notes_recorded"] = record["config"], record["extra"]["notes"]
    return payload


def _send_the_demo_export(process: subprocess.Popen, store) -> str:
    """Read where ``process`` listens, send it the demo export as protobuf requests, stop it with Ctrl-C and return
    what it printed last."""
    first = process.stdout.readline()
    assert first.startswith("collecting OTLP/HTTP traces at http://127.0.0.1:") and str(store) in first
    url = first.split(" at ", 1)[1].split(" into ", 1)[0]
    assert url.endswith("/v1/traces")
    assert process.stdout.readline() == (f"audit with: python -m fairrag_core audit-log {store} --provider-from "
                                         "metadata.source\n")
    lines = [line for line in DEMO_TRACES.read_text(encoding="utf-8").splitlines() if line.strip()]
    for line in lines:
        request = urllib.request.Request(url, data=json_to_request(json.loads(line)).SerializeToString(),
                                         headers={"Content-Type": "application/x-protobuf"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
    process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        process.kill()  # the `with` below then closes its pipes and reaps it
        raise


def test_collect_then_audit_log_equals_audit_log_of_the_export(tmp_path):
    store = tmp_path / "store"
    process = subprocess.Popen([sys.executable, "-m", "fairrag_core", "collect", "--port", "0", "--store", str(store)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with process:  # its pipes are closed and it is waited for, whatever happens inside
        rest = _send_the_demo_export(process, store)
    assert process.returncode == 0
    assert rest == "stopped: 33 requests, 602 spans stored; 0 refused (0 while the queue was full)\n"
    for more in (["--collection", "running-shoes", "--attribution", "logged"], ["--provider-from", "metadata.source"]):
        collected, exported = audit(store, *more), audit(DEMO_TRACES, *more)
        assert collected == exported and len(collected["queries"]) == 20
