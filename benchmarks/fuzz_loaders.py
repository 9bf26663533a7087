"""Fuzz every loader with malformed inputs: anything raised outside the FairRAGError family is a bug.

Each target starts from small valid files (built here, plus the head of a demo collection and expeval's test
files) and feeds the loader mutated versions of them: flipped, inserted and deleted bytes; deleted, repeated,
swapped and cut lines; fields replaced by odd values (huge or non-finite numbers, 5,000-digit integers, deep
nesting, NUL, lone surrogates, invalid UTF-8, BOMs, CR line ends); separators changed; gzip wrappers, broken
gzip and gzip bombs; very long lines; random bytes; empty files. The generator is seeded, so a run is
reproducible, and every input that raised outside the family is written to ``--out`` for a regression test.

Targets: corpus (JSONL, CSV), queries, qrels, aspect qrels, collection folders, expeval / TREC runs, TREC Fair 2022
runs, judgments (expeval qrels), RAG logs (with and without a collection check), OTLP JSON trace exports (JSON Lines
and pretty-printed, through ``load_traces`` and the RAG log loader that recognises them, with random trace maps) and
the app's two upload paths:
the sidebar's collection upload (``fairrag_studio.services.resources.save_upload`` then the collection loader) and
the Audit page's served log or run upload (``fairrag_studio.views.served.save_served_upload`` then ``read_served``,
odd file names included).
Three more targets feed the shared reader (``fairrag_core.data.files``) what mutations cannot make (issue 19):

* ``non_regular`` — a FIFO, ``/dev/zero`` (directly and through a symlink), ``/dev/null``, a Unix socket and a folder
  given to every loader: each must be refused at once as "not a regular file" (a loader that blocks is reported);
* ``bomb`` — gzip bombs (one member, many members, cut short) and plain files of NUL bytes without a newline, only
  newlines, only spaces, mixed or non-ASCII whitespace, or a repeated *valid* line of each format (a qrels comment
  and an empty CSV row among them), a little under or over the
  limits (lowered for the run: 2 MB per file, 0.5 MB per line, 2,000 log lines, 1 MB per upload), through the
  loaders, ``parse_run`` / ``parse_judgments`` on bytes, the RAG log's column reader and ``check_upload``;
* ``line_separators`` — valid JSONL corpora, queries and logs whose strings hold raw U+2028, U+2029, U+0085 (and
  escaped control characters), with LF, CRLF or CR-alone line ends, and TSV files with LF or CRLF: LF and CRLF
  files must load with the characters kept (and as their LF twins for TSV), an error planted on line k must be
  reported on line k, and a CR-alone file of several lines must be refused.

And one feeds what the audit reads from a log rather than how it is read (issue 28): ``served_values`` — a trace export
whose documents all carry a score and a URL, its URLs and scores sometimes replaced by odd ones (``http://[::1``,
±1e308, NaN, ±inf), read without a collection with ``--provider-from domain:metadata.url`` and replayed by the
what-if; an export as written with finite scores, however extreme, must replay, to finite EE-D values.

    python benchmarks/fuzz_loaders.py                  # 2,000 inputs per target (about 2 minutes on 2 busy cores)
    python benchmarks/fuzz_loaders.py --per-target 200 --seed 7 --json

The test suite runs a bounded subset (``tests/data/test_fuzz_loaders.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fairrag_core.errors import FairRAGError  # noqa: E402

# -- valid seeds -------------------------------------------------------------------------------------------------
CORPUS_JSONL = (
    '{"doc_id": "d1", "text": "A cushioned trainer.", "title": "Shoe A", "provider": "Acme", '
    '"groups": {"region": "EU"}}\n'
    '{"doc_id": "d2", "text": "A light racer.", "provider": "Bolt"}\n'
    '{"doc_id": "d3", "text": "Trail shoe with lugs.", "title": "T", "provider": "Acme", "groups": {"region": "US"}}\n'
)
CORPUS_CSV = ('doc_id,text,title,provider,group:region\n'
              'd1,"A cushioned, soft trainer.",Shoe A,Acme,EU\n'
              'd2,A light racer.,,Bolt,\n'
              'd3,"Trail ""shoe"" with lugs.",T,Acme,US\n')
QUERIES = ('{"query_id": "q1", "text": "marathon shoe", "answer": "Shoe A", '
           '"aspects": [{"aspect": "cushion", "answer": "soft"}, {"aspect": "grip", "answer": "lugs"}]}\n'
           '{"query_id": "q2", "text": "racing flat"}\n')
QRELS = "q1 0 d1 2\nq1 0 d3 1\nq2 0 d2 1\n# a comment\n"
ASPECT_QRELS = "query_id\taspect_index\tdoc_id\nq1\t0\td1\nq1\t1\td3\n"
RUN_TREC = ("q1 s1 d1 1 2.0 sys\nq1 s1 d2 2 1.0 sys\nq1 s2 d2 1 5 sys\nq1 s2 d3 2 4 sys\n"
            "q2 Q0 d2 1 9.5 sys\nq2 Q0 d1 2 -1e3 sys\n")
RUN_FAIR = "id\tseq_no\tpage_id\nq1\t1\td1\nq1\t1\td2\nq1\t2\td2\nq2\t1\td3\n"
RUN_FAIR_TASK1 = "q1\td1\nq1\td2\nq2\td3\n"
JUDGMENTS = "q1 1|2 d1 2\nq1 d2 0\nq1 0 d3 -1\nq2 a d2 1\n"
RAG_LOG = (
    '{"query_id": "q1", "query": "marathon shoe?", "ranking": ["d1", "d2"], "answer": "Shoe A", '
    '"citations": ["d1"], "session": "s1", "timestamp": "2026-03-02T10:15:00Z"}\n'
    '{"query_id": 2, "ranking": ["d3"], "answer": null, "metadata": {"ab": "B"}}\n'
    '{"query_id": "q1", "ranking": ["d2", "d1", "d3"], "citations": []}\n'
)



def _otlp_value(value) -> dict:
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_otlp_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _otlp_value(v)} for k, v in value.items()]}}
    return {"stringValue": value}


def _otlp_span(trace: str, span: str, attrs: dict, parent: str | None = None, start: int = 1772442960000000000):
    out = {"traceId": trace, "spanId": span, "startTimeUnixNano": str(start),
           "attributes": [{"key": k, "value": _otlp_value(v)} for k, v in attrs.items()]}
    return {**out, "parentSpanId": parent} if parent else out


_TRACE_SPANS = [
    _otlp_span("a1", "r", {"openinference.span.kind": "CHAIN", "fairrag.query_id": "q1", "session.id": "s1",
                           "fairrag.citations": '["d1"]'}),
    _otlp_span("a1", "s", {"openinference.span.kind": "RETRIEVER", "input.value": "marathon shoe?",
                           "retrieval.documents.0.document.id": "d1", "retrieval.documents.0.document.score": 2.5,
                           "retrieval.documents.0.document.metadata": '{"source": "Acme", "url": "https://a.org/1"}',
                           "retrieval.documents.1.document.id": "d2",
                           "retrieval.documents.1.document.metadata": {"source": "Bolt"}}, "r", 1772442960000000100),
    _otlp_span("a1", "l", {"openinference.span.kind": "LLM", "output.value": "Shoe A"}, "r", 1772442960000000200),
    _otlp_span("b2", "g", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "racing flat",
                           "gen_ai.retrieval.documents": '[{"id": "d3", "score": 0.5}, {"id": "d2"}]'}),
    _otlp_span("b2", "c", {"gen_ai.operation.name": "chat", "gen_ai.output.messages":
                           '[{"role": "assistant", "parts": [{"type": "text", "content": "Bolt"}]}]'}, "g"),
]
TRACES = "".join(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "x"},
                                                                                 "spans": part}]}]}) + "\n"
                 for part in (_TRACE_SPANS[:2], _TRACE_SPANS[2:]))
TRACES_PRETTY = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": _TRACE_SPANS}]}]}, indent=1) + "\n"


def _scored_trace(trace: str, query: str, docs: list[tuple[str, float, str]]) -> list[dict]:
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": query}
    for i, (doc, score, url) in enumerate(docs):
        attrs |= {f"retrieval.documents.{i}.document.id": doc, f"retrieval.documents.{i}.document.score": score,
                  f"retrieval.documents.{i}.document.metadata": json.dumps({"url": url})}
    return [_otlp_span(trace, "r", {"openinference.span.kind": "CHAIN", "fairrag.query_id": query}),
            _otlp_span(trace, "s", attrs, "r", 1772442960000000100)]


#: A trace export whose every served document has a score and a URL: what the what-if replays (issue 28).
SCORED_TRACES = "".join(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n" for spans in (
    _scored_trace("c1", "q1", [("d1", 2.5, "https://a.org/1"), ("d2", 1.25, "https://www.b.org/2"),
                               ("d3", 0.75, "c.org/3")]),
    _scored_trace("c2", "q1", [("d2", 1.25, "https://www.b.org/2"), ("d1", 2.5, "https://a.org/1")]),
    _scored_trace("c3", "q2", [("d3", 0.75, "c.org/3"), ("d1", 2.5, "https://a.org/1")])))
#: Logged URLs that are no URL to urlsplit, or odd ones it takes (issue 28: a raw ValueError for http://[::1).
ODD_URLS = ["http://[::1", "https://[fe80::1/x", "[::1", "//[", "http://a.org:99999", "", "ftp://", "%%%", "http://é.org"]
#: Logged scores: finite extremes are valid input (their sum and spread overflow float64), NaN and ±inf are not.
ODD_SCORES = ["1e308", "-1e308", "1.7976931348623157e308", "-1.7976931348623157e308", "5e-324", "0", "-0.0", "NaN",
              "Infinity", "-Infinity", "1e309"]


def _demo_head(name: str, lines: int = 12) -> str:
    path = ROOT / "assets" / "collections" / "running-shoes" / name
    try:
        return "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines])
    except OSError:
        return ""


def _expeval(name: str, lines: int = 40) -> str:
    path = ROOT / "tests" / "data" / "expeval" / name
    try:
        return "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines])
    except OSError:
        return ""


# -- mutations ---------------------------------------------------------------------------------------------------
ODD_VALUES = [
    "null", "true", "0", "-1", "1e309", "-1e309", "1e308", "-1e308", '"http://[::1"', "NaN", "Infinity", "-Infinity",
    "9" * 5000, "1.5", '""', '" "',
    '"\\u0000"', '"\\ud800"', '"\\udc00x"', "[]", "{}", '["a", "a"]', "[1, 2]", '{"a": {"b": []}}',
    "[" * 3000 + "]" * 3000,
    '"' + "x" * 70000 + '"', '"<script>alert(1)</script>"', '"=HYPERLINK(\\"x\\")"', '"\\t\\r\\n"', '"é漢字🙂"',
]
ODD_TOKENS = ["", " ", "\t", "0", "-1", "1.5", "nan", "inf", "-inf", "1e999", "9" * 5000, "٣", "Q0", "#", "|", "||",
              "a,b", '"', "\x00", "\ufeff", "\u2028", "\x85", "x" * 300, "=cmd", "ä" * 10, "-0", "+1", "0x10", "1_000"]


def _json_mutation(text: str, rng: random.Random) -> str:
    """Replace one JSON value (after a colon or in a list) by an odd one, or drop / rename / add a key."""
    lines = text.splitlines(keepends=True) or [""]
    i = rng.randrange(len(lines))
    line = lines[i]
    choice = rng.random()
    colons = [j for j, c in enumerate(line) if c == ":"]
    if choice < 0.55 and colons:
        j = rng.choice(colons) + 1
        end = j
        depth, in_str, esc = 0, False, False
        while end < len(line):  # skip one JSON value, roughly
            c = line[end]
            if in_str:
                esc, in_str = (not esc and c == "\\"), (in_str if esc or c != '"' else False)
            elif c == '"':
                in_str = True
            elif c in "[{":
                depth += 1
            elif c in "]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                break
            end += 1
        line = line[:j] + " " + rng.choice(ODD_VALUES) + line[end:]
    elif choice < 0.7:
        line = line.replace('"', "'", rng.randint(1, 4)) if rng.random() < 0.3 else line.replace(
            rng.choice(['"doc_id"', '"text"', '"query_id"', '"ranking"', '"answer"', '"citations"', '"groups"',
                        '"aspects"', '"aspect"', '"metadata"', '"title"', '"provider"']), rng.choice(
                ['"doc_id"', '"Text"', '"extra"', '"query_id"', '"ranking"', '""', '"groups"']), 1)
    elif choice < 0.85:
        line = "{" + rng.choice(['"doc_id": "d9", ', '"query_id": "q9", ', '"x": 1, ', '"groups": {"r": ""}, ',
                                 '"ranking": [], ', '"text": "", ']) + line.lstrip().lstrip("{")
    else:
        line = rng.choice(["[]\n", "1\n", '"s"\n', "null\n", "{}\n", "{\n", line[: len(line) // 2] + "\n"])
    lines[i] = line
    return "".join(lines)


def _token_mutation(text: str, rng: random.Random) -> str:
    """Replace, drop or add one whitespace/tab/comma-separated token of one line."""
    lines = text.splitlines(keepends=True) or [""]
    i = rng.randrange(len(lines))
    sep = rng.choice([" ", "\t", ","])
    parts = lines[i].rstrip("\r\n").split(sep)
    op = rng.random()
    if op < 0.5 and parts:
        parts[rng.randrange(len(parts))] = rng.choice(ODD_TOKENS)
    elif op < 0.7 and parts:
        del parts[rng.randrange(len(parts))]
    elif op < 0.9:
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(ODD_TOKENS))
    else:
        sep = rng.choice([" ", "\t", ",", "  ", ";"])
    lines[i] = sep.join(parts) + "\n"
    return "".join(lines)


def _line_mutation(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    op = rng.random()
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if op < 0.25:
        del lines[i]
    elif op < 0.5:
        lines.insert(j, lines[i])
    elif op < 0.65:
        lines[i], lines[j] = lines[j], lines[i]
    elif op < 0.75:
        rng.shuffle(lines)
    elif op < 0.85:
        lines.insert(i, rng.choice(["\n", "   \n", "\r\n", "#\n", "\t\n"]))
    else:
        cut = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:cut]
    return "".join(lines)


def _byte_mutation(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        pos = rng.randrange(len(data) + 1)
        if op < 0.3 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op < 0.55:
            data[pos:pos] = bytes([rng.randrange(256)]) * rng.randint(1, 3)
        elif op < 0.75 and data:
            del data[pos:pos + rng.randint(1, 16)]
        else:
            data[pos:pos] = rng.choice([b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3", b"\xed\xa0\x80", b"\r",
                                        b"\r\n", b"\"", b"\\", b"\t", b",", b"\n\n", b"\x1f\x8b"])
    return bytes(data)


def mutate(seed_text: str, rng: random.Random) -> bytes:
    """One malformed input derived from ``seed_text``."""
    kind = rng.random()
    text = seed_text
    if kind < 0.03:
        return b""
    if kind < 0.05:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 400)))
    if kind < 0.07:
        return gzip.compress(seed_text.encode())[: rng.randint(0, 40)] or b"\x1f\x8b"  # broken gzip
    for _ in range(rng.randint(1, 3)):
        step = rng.random()
        if step < 0.35:
            text = _json_mutation(text, rng)
        elif step < 0.65:
            text = _token_mutation(text, rng)
        else:
            text = _line_mutation(text, rng)
    if rng.random() < 0.03:
        text += "x" * rng.choice([70_000, 200_000]) + "\n"  # a very long line
    if rng.random() < 0.05:
        text = text.replace("\n", rng.choice(["\r\n", "\r", "\u2028", "\x0b"]))
    raw = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.4:
        raw = _byte_mutation(raw, rng)
    if rng.random() < 0.05:
        raw = gzip.compress(raw)
    return raw


# -- targets -----------------------------------------------------------------------------------------------------
@dataclass
class Target:
    name: str
    seeds: list[str]
    call: Callable[[bytes, Path, random.Random], object]


def _write(folder: Path, name: str, raw: bytes) -> Path:
    path = folder / name
    path.write_bytes(raw)
    return path


@contextlib.contextmanager
def _env(**values: str):
    """Set environment variables for one input, then put back what was there."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Hang(Exception):
    """A loader did not return within its time: it is blocked (e.g. reading a FIFO nobody writes)."""


def _bounded(call: Callable[[], object], seconds: float = 20.0, fifo: Path | None = None):
    """``call()`` in a thread; :class:`Hang` if it has not returned within ``seconds`` (a FIFO is then opened for
    writing and closed, so that a blocked reader gets end-of-file and the thread ends)."""
    box: dict = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as err:  # handed back below
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo is not None:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        raise Hang(f"no answer within {seconds} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


_VALID_LINES = {  # format → (file name, header, one valid line that may repeat, loader name)
    "corpus.jsonl": ("corpus.jsonl", b"", b'{"doc_id": "d1", "text": "A trainer."}\n', "corpus"),
    "corpus.csv": ("corpus.csv", b"doc_id,text\n", b'd1,"A trainer, soft."\n', "corpus"),
    "csv-empty-rows": ("corpus.csv", b"doc_id,text\nd1,a\n", b",\n", "corpus"),
    "queries": ("queries.jsonl", b"", b'{"query_id": "q1", "text": "marathon shoe"}\n', "queries"),
    "qrels": ("qrels.txt", b"", b"q1 0 d1 2\n", "qrels"),
    "qrels-comment": ("qrels.txt", b"q1 0 d1 2\n", b"# a comment\n", "qrels"),
    "aspect_qrels": ("aspect_qrels.tsv", b"query_id\taspect_index\tdoc_id\n", b"q1\t0\td1\n", "aspect_qrels"),
    "run.trec": ("run.txt", b"", b"q1 s1 d1 1 2.0 sys\n", "run"),
    "run.fair": ("run.tsv", b"id\tseq_no\tpage_id\n", b"q1\t1\td1\n", "run"),
    "judgments": ("judgments.txt", b"", b"q1 1|2 d1 2\n", "judgments"),
    "rag_log": ("log.jsonl", b"",
                b'{"query_id": "q1", "ranking": ["d1", "d2"], "answer": "yes", "citations": ["d1"]}\n', "rag_log"),
    "traces": ("traces.jsonl", b"", TRACES.splitlines(keepends=True)[0].encode(), "traces"),
}
_BOMB_UNITS = {"nul": b"\0", "newlines": b"\n", "spaces": b" ", "whitespace": b" \t\r\n\x0b\x0c\n\n",
               "non-ascii spaces": "\u00a0\u3000\n".encode()}
_BOMB_LIMITS = {"FAIRRAG_MAX_FILE_MB": "2", "FAIRRAG_MAX_LINE_MB": "0.5", "FAIRRAG_MAX_LOG_LINES": "2000",
                "FAIRRAG_MAX_UPLOAD_MB": "1"}


def _bomb_bytes(head: bytes, unit: bytes, size: int, packing: str, rng: random.Random) -> bytes:
    """``head`` then ``unit`` repeated to about ``size`` bytes, packed as plain bytes, one gzip member, many
    (64 kB) members, or one member cut short."""
    body = unit * max(1, size // len(unit))
    if packing == "plain":
        return head + body
    if packing == "members":
        block = unit * max(1, 65_536 // len(unit))
        member = zlib.compress(block, 9, wbits=31)
        return gzip.compress(head) + member * max(1, size // len(block))
    packed = zlib.compress(head + body, 6, wbits=31)
    return packed[: rng.randrange(10, len(packed))] if packing == "cut" else packed


def _read_alike(kind: str, a, b) -> bool:
    """Whether two loads of a run, qrels or judgments hold the same rankings or grades."""
    if kind == "run":
        return {q: a[q].samples() for q in a.query_ids} == {q: b[q].samples() for q in b.query_ids}
    if kind == "judgments":
        return (a.relevance, a.groups) == (b.relevance, b.groups)
    return a == b


def _targets(folder: Path) -> list[Target]:
    from fairrag_core.data import load_collection, load_corpus, load_judgments, load_qrels, load_queries, load_run
    from fairrag_core.data.collection import Collection, Document, Query
    from fairrag_core.data.files import check_upload
    from fairrag_core.data.judgments import parse_judgments
    from fairrag_core.data.loaders import load_aspect_qrels
    from fairrag_core.data.rag_log import load_rag_log, load_traces
    from fairrag_core.data.served import parse_run
    from fairrag_core.data.traces import TraceMap

    queries = [Query("q1", "marathon shoe", "Shoe A"), Query("q2", "racing flat")]
    small = Collection("fuzz", tuple(Document(f"d{i}", f"text {i}", provider="P") for i in (1, 2, 3)),
                       tuple(queries), {"q1": {"d1": 1}})

    def collection_folder(raw: bytes, tmp: Path, rng: random.Random):
        parts = {"corpus.jsonl": CORPUS_JSONL, "queries.jsonl": QUERIES, "qrels.txt": QRELS,
                 "aspect_qrels.tsv": ASPECT_QRELS}
        if rng.random() < 0.3:
            parts = {"corpus.csv": CORPUS_CSV, "queries.jsonl": QUERIES, "qrels.txt": QRELS}
        victim = rng.choice(list(parts))
        sub = tmp / f"coll{rng.randrange(10**9)}"
        sub.mkdir()
        for name, text in parts.items():
            (sub / name).write_bytes(raw if name == victim else text.encode())
            if name != victim and rng.random() < 0.1:
                (sub / name).unlink()
        return load_collection(sub)

    def upload(raw: bytes, tmp: Path, rng: random.Random):
        from fairrag_studio.services import resources

        resources.UPLOAD_ROOT = tmp / "uploads"
        names = ["corpus.jsonl", "corpus.csv", "c.JSONL", "x.txt", "..csv", "<b>.csv"]
        corpus = (rng.choice(names), CORPUS_JSONL.encode())
        if corpus[0].lower().endswith(".csv"):
            corpus = (corpus[0], CORPUS_CSV.encode())
        parts = [corpus, ("queries.jsonl", QUERIES.encode()), ("qrels.txt", QRELS.encode())]
        victim = rng.randrange(3)
        parts[victim] = (parts[victim][0], raw)
        if victim and rng.random() < 0.2:
            parts[3 - victim] = None
        return load_collection(resources.save_upload(*parts))

    def served_upload(raw: bytes, tmp: Path, rng: random.Random):
        from fairrag_studio.views.served import read_served, save_served_upload

        name = rng.choice(["log.jsonl", "log.ndjson", "run.txt", "system.run", "run.tsv", "x.trec", "run.tsv.gz",
                           "LOG.JSONL", "..", ".", "", "../../escape.jsonl", "a/b.txt", "<b>.jsonl", "x" * 300,
                           "nul\x00.jsonl", "no-suffix"])
        return read_served(save_served_upload(name, raw, tmp / "uploads"), small)

    loaders = {"corpus": load_corpus, "queries": load_queries, "qrels": load_qrels, "aspect_qrels": load_aspect_qrels,
               "run": load_run, "judgments": load_judgments, "rag_log": load_rag_log, "traces": load_traces}
    names = {"corpus": "corpus.jsonl", "queries": "queries.jsonl", "qrels": "qrels.txt",
             "aspect_qrels": "aspect_qrels.tsv", "run": "run.txt", "judgments": "qrels.txt", "rag_log": "log.jsonl",
             "traces": "traces.jsonl"}

    def traces(raw: bytes, tmp: Path, rng: random.Random):
        trace_map = TraceMap.parse(rng.sample(["query_id=session.id", "answer=input.value", "citations=x",
                                               "document_id=document.score", "ranking=fairrag.citations",
                                               "documents=gen_ai.output.messages", "document_metadata=id"],
                                              rng.randint(0, 2)), multiple=rng.choice(["skip", "first", "last"]))
        path = _write(tmp, rng.choice(["traces.jsonl", "export.json", "t.jsonl.gz"]), raw)
        if rng.random() < 0.5:
            return load_rag_log(path, collection=small if rng.random() < 0.3 else None, trace_map=trace_map)
        return load_traces(path, trace_map=trace_map)

    def non_regular(raw: bytes, tmp: Path, rng: random.Random):
        loader = rng.choice(sorted(loaders))
        kind = rng.choice(["fifo", "dev-zero", "link-to-dev-zero", "dev-null", "socket", "folder", "link-to-fifo"])
        path, held, fifo = tmp / names[loader], None, None
        if kind == "dev-zero" and loader != "corpus":  # the corpus loader asks for a suffix first
            path = Path("/dev/zero")
        elif kind in ("dev-zero", "link-to-dev-zero", "dev-null"):
            path.symlink_to("/dev/null" if kind == "dev-null" else "/dev/zero")
        elif kind in ("fifo", "link-to-fifo"):
            fifo = tmp / "pipe" if kind == "link-to-fifo" else path
            os.mkfifo(fifo)
            if kind == "link-to-fifo":
                path.symlink_to(fifo)
        elif kind == "socket":
            held = socket.socket(socket.AF_UNIX)
            held.bind(str(path))
        else:
            path.mkdir()
        try:
            if rng.random() < 0.2:  # inside a collection folder: the folder loader looks for regular files only
                return _bounded(lambda: load_collection(tmp), fifo=fifo)
            try:
                return _bounded(lambda: loaders[loader](path), fifo=fifo)
            except FairRAGError as err:
                if "not a regular file" not in str(err):
                    raise AssertionError(f"{kind} given to {loader}: {err}") from None
                raise
        finally:
            if held is not None:
                held.close()

    def bomb(raw: bytes, tmp: Path, rng: random.Random):
        content = rng.choice([*_BOMB_UNITS, *_VALID_LINES])
        name, head, unit, loader = _VALID_LINES.get(content, (None, b"", _BOMB_UNITS.get(content), None))
        loader = loader or rng.choice(sorted(loaders))
        name = name or names[loader]
        size = int(rng.uniform(0.3, 3.0) * 1_000_000)
        data = _bomb_bytes(head, unit, size, rng.choice(["plain", "member", "members", "members", "cut"]), rng)
        with _env(**_BOMB_LIMITS):
            way = rng.random()
            if way < 0.15:
                return check_upload(name, data)
            if way < 0.35 and loader in ("run", "judgments"):
                return (parse_run if loader == "run" else parse_judgments)(data)
            if way < 0.6 and loader == "rag_log":  # the column reader (audit-log --attribution none, shard folders)
                from fairrag_core.data.log_columns import read_log_columns

                return _bounded(lambda: read_log_columns(_write(tmp, name, data), small))
            return _bounded(lambda: loaders[loader](_write(tmp, name, data)))

    def served_values(raw: bytes, tmp: Path, rng: random.Random):
        """A scored trace export (as written, or mutated), its URLs and scores sometimes replaced by odd ones, read
        without a collection (providers from the URLs' domains) and replayed by the what-if: only ever a FairRAGError;
        an export as written with finite scores, however extreme, must replay, to finite EE-D values."""
        import math

        from fairrag_core.audit.what_if import what_if_sampling
        from fairrag_core.data.traces import ProviderSource, documents_from_log

        pristine = rng.random() < 0.5
        raw = SCORED_TRACES.encode() if pristine else raw
        if rng.random() < 0.5:
            raw = raw.replace(b"https://a.org/1", rng.choice(ODD_URLS).encode())
        finite = True
        for score in (b"2.5", b"1.25", b"0.75"):
            if rng.random() < 0.4:
                odd = rng.choice(ODD_SCORES)
                finite &= math.isfinite(float(odd))
                raw = raw.replace(b'"doubleValue": ' + score, b'"doubleValue": ' + odd.encode())
        log = load_rag_log(_write(tmp, "traces.jsonl", raw))
        documents = documents_from_log(log, provider_from=ProviderSource.parse("domain:metadata.url"))
        try:
            result = what_if_sampling(log, documents.collection, alphas=(0, 2, math.inf), n_samples=10, n_boot=20,
                                      seed=0)
        except FairRAGError as err:
            if pristine and finite:
                raise AssertionError(f"finite logged scores were refused: {err}") from None
            raise
        if not all(math.isfinite(v) for v in result.per_query["ee_d"]):
            raise AssertionError(f"the replay gave EE-D {result.per_query['ee_d'].tolist()}")
        return result

    def line_separators(raw: bytes, tmp: Path, rng: random.Random):
        seps = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\r", "\U0001f600"]
        end = rng.choice(["\n", "\n", "\r\n", "\r"])

        def text(i: int) -> str:
            return "".join(rng.choice(["a", " ", "é", *seps]) for _ in range(rng.randint(1, 12))) + f"x{i}"

        n = rng.randint(1, 6)
        kind = rng.choice(["corpus", "queries", "rag_log", "run", "qrels", "judgments"])
        if kind in ("corpus", "queries", "rag_log"):
            rows = ([{"doc_id": f"d{i}", "text": text(i), "title": text(i)} for i in range(n)] if kind == "corpus"
                    else [{"query_id": f"q{i}", "text": text(i), "answer": text(i)} for i in range(n)]
                    if kind == "queries"
                    else [{"query_id": text(i), "ranking": ["d1"], "answer": text(i), "metadata": {"m": text(i)}}
                          for i in range(n)])
            ascii_only = rng.random() < 0.3  # then U+1F600 is written as the escape pair \\ud83d\\ude00
            lines = [json.dumps(r, ensure_ascii=ascii_only) for r in rows]
        else:
            lines = ([f"q1 s1 d{i} {i + 1} 1.0 sys" for i in range(n)] if kind == "run"
                     else [f"q1 0 d{i} {i % 3}" for i in range(n)] if kind == "qrels"
                     else [f"q1 {i % 2}|x d{i} {i % 3 - 1}" for i in range(n)])
        planted = rng.randint(1, n + 1) if rng.random() < 0.5 else None
        if planted is not None:
            lines.insert(planted - 1, "{broken" if kind in ("corpus", "queries", "rag_log") else "q1 only three")
        path = _write(tmp, names[kind], (end.join(lines) + rng.choice([end, ""])).encode())
        twin = _write(tmp, "lf-" + names[kind], ("\n".join(lines) + "\n").encode())
        try:
            got = loaders[kind](path)
        except FairRAGError as err:
            if end == "\r" and len(lines) > 1:
                return None  # refused, as it must be (a CR alone does not end a line)
            if planted is not None and getattr(err, "line", None) != planted:
                raise AssertionError(f"error planted on line {planted}, reported on {getattr(err, 'line', None)}: "
                                     f"{err}") from None
            if planted is None:
                raise AssertionError(f"a valid {kind} file with {end!r} line ends was refused: {err}") from None
            raise
        if planted is not None or (end == "\r" and len(lines) > 1):
            raise AssertionError(f"{kind}: accepted a file that should be refused (planted line {planted}, "
                                 f"line end {end!r})")
        if kind in ("corpus", "queries", "rag_log"):
            kept = ([d.text for d in got] if kind == "corpus" else [q.text for q in got] if kind == "queries"
                    else [e.answer for e in got.entries])
            want = [r["text"].strip() if kind != "rag_log" else r["answer"].strip() for r in rows]
            if kept != want:
                raise AssertionError(f"{kind}: texts changed on the way: {kept!r} != {want!r}")
        elif _read_alike(kind, got, loaders[kind](twin)) is False:
            raise AssertionError(f"{kind}: {end!r} line ends read differently from LF")
        return got

    return [
        Target("corpus.jsonl", [CORPUS_JSONL, _demo_head("corpus.jsonl")],
               lambda raw, tmp, rng: load_corpus(_write(tmp, "corpus.jsonl", raw))),
        Target("corpus.csv", [CORPUS_CSV], lambda raw, tmp, rng: load_corpus(_write(tmp, "corpus.csv", raw))),
        Target("queries", [QUERIES, _demo_head("queries.jsonl")],
               lambda raw, tmp, rng: load_queries(_write(tmp, "queries.jsonl", raw))),
        Target("qrels", [QRELS, _demo_head("qrels.txt")],
               lambda raw, tmp, rng: load_qrels(_write(tmp, "qrels.txt", raw))),
        Target("aspect_qrels", [ASPECT_QRELS],
               lambda raw, tmp, rng: load_aspect_qrels(
                   _write(tmp, "aspect_qrels.tsv", raw),
                   **({"queries": [Query("q1", "x", None, ()), *queries], "doc_ids": ["d1", "d3"]}
                      if rng.random() < 0.5 else {}))),
        Target("collection", [""], collection_folder),
        Target("run.trec", [RUN_TREC, _expeval("run_a.txt"), _expeval("run_plain.txt")],
               lambda raw, tmp, rng: (parse_run(raw, format=rng.choice(["auto", "trec"])) if rng.random() < 0.5
                                      else load_run(_write(tmp, "run.txt", raw)))),
        Target("run.trec-fair-2022", [RUN_FAIR, RUN_FAIR_TASK1],
               lambda raw, tmp, rng: (parse_run(raw, format=rng.choice(["auto", "trec-fair-2022"]))
                                      if rng.random() < 0.5 else load_run(_write(tmp, "run.tsv.gz", raw)))),
        Target("judgments", [JUDGMENTS, _expeval("qrels_graded.txt"), _expeval("qrels_binary.txt")],
               lambda raw, tmp, rng: (parse_judgments(raw) if rng.random() < 0.5
                                      else load_judgments(_write(tmp, "qrels.txt", raw)))),
        Target("rag_log", [RAG_LOG],
               lambda raw, tmp, rng: load_rag_log(_write(tmp, "log.jsonl", raw),
                                                  collection=small if rng.random() < 0.5 else None)),
        Target("traces", [TRACES, TRACES_PRETTY], traces),
        Target("upload", [""], upload),
        Target("served_upload", [RAG_LOG, RUN_TREC, RUN_FAIR, _expeval("run_a.txt")], served_upload),
        Target("non_regular", [""], non_regular),
        Target("bomb", [""], bomb),
        Target("line_separators", [""], line_separators),
        Target("served_values", [SCORED_TRACES], served_values),
    ]


# -- the loop ----------------------------------------------------------------------------------------------------
@dataclass
class Report:
    target: str
    inputs: int = 0
    outcomes: Counter = field(default_factory=Counter)
    failures: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def fuzz(per_target: int = 2000, seed: int = 0, only: list[str] | None = None, out: Path | None = None,
         max_failures: int = 20) -> list[Report]:
    """Feed ``per_target`` mutated inputs to every target; count outcomes (``ok`` or the error class)."""
    reports = []
    with tempfile.TemporaryDirectory(prefix="fuzz-loaders-") as scratch:
        scratch = Path(scratch)
        for target in _targets(scratch):
            if only and target.name not in only:
                continue
            rng = random.Random(f"{seed}:{target.name}")
            report = Report(target.name)
            seeds = [s for s in target.seeds if s] or [""]
            start = time.perf_counter()
            for i in range(per_target):
                if target.name in ("collection", "upload"):
                    base = rng.choice([CORPUS_JSONL, CORPUS_CSV, QUERIES, QRELS, ASPECT_QRELS])
                else:
                    base = rng.choice(seeds)
                raw = mutate(base, rng)
                tmp = scratch / f"{target.name}-{i}"
                tmp.mkdir()
                try:
                    target.call(raw, tmp, rng)
                    report.outcomes["ok"] += 1
                except FairRAGError as err:
                    report.outcomes[type(err).__name__] += 1
                except Exception as err:  # the point: anything else is a finding
                    report.outcomes["OTHER:" + type(err).__name__] += 1
                    if len(report.failures) < max_failures:
                        failure = {"target": target.name, "index": i, "error": f"{type(err).__name__}: {err}"[:300],
                                   "where": traceback.format_exc().strip().splitlines()[-3][:200]}
                        if out is not None:
                            out.mkdir(parents=True, exist_ok=True)
                            name = f"{target.name}-{seed}-{i}.bin"
                            (out / name).write_bytes(raw)
                            failure["input"] = str(out / name)
                        report.failures.append(failure)
                report.inputs += 1
                for path in sorted(tmp.rglob("*"), reverse=True):  # FIFOs, sockets and links too
                    path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
                tmp.rmdir()
            report.seconds = time.perf_counter() - start
            reports.append(report)
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-target", type=int, default=2000, help="inputs per target (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=None, help="comma-separated target names")
    parser.add_argument("--out", default=None, help="folder for inputs that raised outside the family")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    reports = fuzz(args.per_target, args.seed, args.only.split(",") if args.only else None,
                   Path(args.out) if args.out else None)
    other = sum(n for r in reports for k, n in r.outcomes.items() if k.startswith("OTHER:"))
    if args.json:
        print(json.dumps([{"target": r.target, "inputs": r.inputs, "seconds": round(r.seconds, 1),
                           "outcomes": dict(r.outcomes), "failures": r.failures} for r in reports], indent=2))
    else:
        for r in reports:
            top = ", ".join(f"{k} {v}" for k, v in r.outcomes.most_common())
            print(f"{r.target:20s} {r.inputs:6d} inputs {r.seconds:6.1f} s  {top}")
            for f in r.failures[:5]:
                print(f"    ! {f['error']}  ({f['where'].strip()})")
        print(f"\n{sum(r.inputs for r in reports):,} inputs, {other} outside the FairRAGError family")
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main())
