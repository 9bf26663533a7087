"""One sample file per served format (fairrag_core.data.formats), built from the demo log over running-shoes so
the app can check their doc ids against that collection, and a writer that gzips when the suffix says so."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from fairrag_core.data import assets_dir
from fairrag_core.data.formats import COMPRESSED
from fairrag_core.data.otlp_proto import delimited, json_to_request
from fairrag_core.data.served import ServedRankings

LOGS = assets_dir() / "logs"


def samples() -> dict[str, list[bytes]]:
    """Format name → the bytes of files in that format: the demo RAG log; its trace export, as JSON lines and as
    one pretty-printed document (as the OpenTelemetry collector's file exporter writes it) and as length-delimited
    protobuf requests (what the SDK exporters send); the log's rankings as an
    expeval/TREC run and as a TREC Fair 2022 run (with and without its header row)."""
    log_bytes = (LOGS / "running-shoes.jsonl").read_bytes()
    traces = (LOGS / "running-shoes.otlp.jsonl").read_bytes()
    spans = [span for line in traces.splitlines() if line.strip() for span in json.loads(line)["resourceSpans"]]
    whole = json.dumps({"resourceSpans": spans}, indent=2).encode()
    rankings: dict[str, list[list[str]]] = {}
    for line in log_bytes.splitlines():
        entry = json.loads(line)
        rankings.setdefault(entry["query_id"], []).append(entry["ranking"])
    trec = ServedRankings.from_lists(rankings, run_id="demo").to_trec().encode()
    fair = "".join(f"{qid}\t{seq}\t{doc}\n" for qid, lists in rankings.items() for seq, ranking in enumerate(lists)
                   for doc in ranking)
    pb = delimited(json_to_request(json.loads(line)) for line in traces.splitlines() if line.strip())
    return {"jsonl": [log_bytes], "otlp": [traces, whole, pb], "trec": [trec],
            "trec-fair-2022": [fair.encode(), ("id\tseq_no\tpage_id\n" + fair).encode()]}


def write(path: Path, data: bytes) -> Path:
    """Write ``data`` at ``path``, gzipped when its name ends in a compression suffix."""
    path.write_bytes(gzip.compress(data) if path.name.lower().endswith(COMPRESSED) else data)
    return path
