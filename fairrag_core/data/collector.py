"""An OTLP/HTTP trace receiver (``python -m fairrag_core collect``): a deployment's own exporter sends its spans
here, and ``audit-log STORE`` audits them, with no glue.

:class:`Receiver` serves ``POST /v1/traces`` (OTLP/HTTP, opentelemetry.io/docs/specs/otlp/#otlphttp) with
``Content-Type: application/x-protobuf`` (what the SDKs' exporters send) or ``application/json``, gzip
``Content-Encoding`` too. Each request is read as OTLP JSON (:func:`~fairrag_core.data.otlp_proto.request_to_json`
for protobuf), checked and cut to what the audit reads (:func:`~fairrag_core.data.traces.slim_export`: ids, names,
kinds, times, the attributes the trace reader uses and ``service.name``; no document texts, no prompts), and put
on a bounded queue that one writer thread empties into the :class:`TraceStore`.

Answers: 200 with an empty ``ExportTraceServiceResponse`` (in the request's encoding); 400 with a one-line message
for a payload that is not OTLP; 413 over ``max_bytes`` (sent or inflated); 415 for another content type; 404 for
another path; 503 with ``Retry-After`` when the queue is full (back-pressure, which the exporters retry, instead of
memory that grows with the load; so is a request beyond :data:`READING_AT_ONCE` bodies being read at once, which
bounds the bodies held to that many times ``max_bytes``). A connection silent for :data:`SOCKET_TIMEOUT` seconds is
closed. Loopback (127.0.0.1) unless told another host.

The store is a folder, one JSON Lines file of OTLP JSON per service and hour of receipt:
``STORE/<service.name>/<YYYY-MM-DDTHH>.jsonl`` (the name's characters other than letters, digits, ``.``, ``_`` and
``-`` written ``_``; past :data:`SHARD_BYTES` the hour goes on in ``<YYYY-MM-DDTHH>.001.jsonl``, …). Each batch is
appended as whole lines in one write and synced; a line torn by a crash is cut off when the store is opened again.
``audit-log STORE`` reads every service (:func:`~fairrag_core.data.traces.trace_files`), ``audit-log
STORE/<service>`` one; the spans of a trace are assembled across files. ``--service``, ``--since`` and ``--until``
select a service and a window of root-span start times, opening only the hour files that can hold it
(:mod:`~fairrag_core.data.store_window`, which ``audit-log``, ``compare-runs`` and the app call).
"""

from __future__ import annotations

import gzip
import json
import os
import queue
import re
import threading
import zlib
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..errors import DataFormatError, InvalidParameterError
from .otlp_proto import request_to_json
from .traces import TraceMap, kept_attributes, slim_export

__all__ = ["TraceStore", "Receiver", "DEFAULT_PORT", "DEFAULT_MAX_BYTES", "DEFAULT_QUEUE"]

#: OTLP/HTTP's default port.
DEFAULT_PORT = 4318
#: The largest request body taken, sent or inflated (the collector's own default limit is of this order).
DEFAULT_MAX_BYTES = 16 << 20
#: A store file's size at which the hour's next part begins (well under the loaders' FAIRRAG_MAX_FILE_MB).
SHARD_BYTES = 256 << 20
#: Requests waiting for the writer at most; a request beyond it is answered 503.
DEFAULT_QUEUE = 256
#: Request bodies read and parsed at once at most (each up to ``max_bytes``); one more is answered 503.
READING_AT_ONCE = 8
#: Seconds a connection may stay silent (a body shorter than its Content-Length does not hold a thread forever).
SOCKET_TIMEOUT = 30

_PATH = "/v1/traces"
_PROTOBUF, _JSON = "application/x-protobuf", "application/json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _service_folder(export: dict) -> str:
    for kv in export.get("resource", {}).get("attributes", ()):
        if kv.get("key") == "service.name":
            name = (kv.get("value") or {}).get("stringValue")
            if isinstance(name, str) and name.strip(". "):
                return _UNSAFE.sub("_", name.strip())[:100]
    return "unknown_service"


class TraceStore:
    """The folder the receiver writes (module docstring); opening it cuts any torn last line of its files."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).expanduser()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InvalidParameterError(f"cannot make the store folder {self.folder} ({err.strerror}); choose "
                                        "another with --store") from None
        for file in self.folder.glob("*/*.jsonl"):
            _cut_torn_line(file)

    def append(self, exports: list[dict], now: datetime | None = None) -> int:
        """Write the slim exports' resources, one line per resource, to the file of its service and the hour of
        ``now`` (UTC); each file gets one write and is synced. The number of spans written."""
        hour = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H")
        lines: dict[str, list[str]] = {}
        spans = 0
        for export in exports:
            for resource in export["resourceSpans"]:
                spans += sum(len(scope["spans"]) for scope in resource["scopeSpans"])
                lines.setdefault(_service_folder(resource), []).append(
                    json.dumps({"resourceSpans": [resource]}, ensure_ascii=False, separators=(",", ":")))
        for service, texts in lines.items():
            folder = self.folder / service
            folder.mkdir(exist_ok=True)
            fd = os.open(self._shard(folder, hour), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, ("\n".join(texts) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        return spans


    def _shard(self, folder: Path, hour: str) -> Path:
        """The hour's file of the service, or its next part once a part holds :data:`SHARD_BYTES`."""
        part = 0
        while True:
            path = folder / (f"{hour}.jsonl" if not part else f"{hour}.{part:03d}.jsonl")
            if not path.exists() or path.stat().st_size < SHARD_BYTES:
                return path
            part += 1


def _cut_torn_line(path: Path) -> None:
    """Cut the file after its last newline (a write torn by a crash leaves a partial last line)."""
    size = path.stat().st_size
    if not size:
        return
    with open(path, "rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        at = max(0, size - (1 << 20))
        while True:
            f.seek(at)
            block = f.read(size - at)
            end = block.rfind(b"\n")
            if end >= 0 or at == 0:
                f.truncate(at + end + 1 if end >= 0 else 0)
                return
            size, at = at, max(0, at - (1 << 20))


class _TooLarge(Exception):
    pass


def _inflate(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as err:
        raise DataFormatError(f"the body is not valid gzip ({err})") from None
    if len(out) > limit:
        raise _TooLarge
    return out


class Receiver:
    """The OTLP/HTTP receiver (module docstring). :meth:`start` serves in a thread (tests, notebooks);
    :meth:`serve_forever` in this one (the CLI). ``port`` 0 takes a free port (:attr:`port` says which)."""

    def __init__(self, store: str | os.PathLike, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 max_bytes: int = DEFAULT_MAX_BYTES, queue_size: int = DEFAULT_QUEUE,
                 trace_map: TraceMap | None = None) -> None:
        if max_bytes < 1 or queue_size < 1:
            raise InvalidParameterError("the size limit and the queue must be at least 1; raise --max-request-mb "
                                        "or --queue")
        self.store = TraceStore(store)
        self.max_bytes, self.trace_map = max_bytes, trace_map or TraceMap()
        self.keep = kept_attributes(self.trace_map)
        self.queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self.reading = threading.BoundedSemaphore(READING_AT_ONCE)
        self.counts = {"requests": 0, "spans": 0, "rejected": 0, "busy": 0}
        self._lock = threading.Lock()
        try:
            self.server = ThreadingHTTPServer((host, port), _handler(self))
        except OSError as err:
            raise InvalidParameterError(f"cannot listen on {host}:{port} ({err.strerror}); choose another --port "
                                        "or --host") from None
        self.server.daemon_threads = True
        self.host, self.port = self.server.server_address[:2]
        self._writer = threading.Thread(target=self._write, name="fairrag-collect-writer", daemon=True)
        self._writer.start()
        self._serving: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{_PATH}"

    def _count(self, **add: int) -> None:
        with self._lock:
            for k, v in add.items():
                self.counts[k] += v

    def _write(self) -> None:
        while True:
            first = self.queue.get()
            batch = [first] if first is not None else []
            while first is not None and len(batch) < 256:
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    first = None
                    break
                batch.append(item)
            if batch:
                self._count(spans=self.store.append(batch))
            for _ in batch:
                self.queue.task_done()
            if first is None:
                self.queue.task_done()
                return

    def accept(self, body: bytes, content_type: str, encoding: str) -> dict:
        """A request's body as the slim export to store. Raises DataFormatError (400), _TooLarge (413) or
        InvalidParameterError (415)."""
        if encoding == "gzip":
            body = _inflate(body, self.max_bytes)
        elif encoding not in ("", "identity"):
            raise DataFormatError(f"Content-Encoding {encoding!r} is not read; send gzip or none")
        if content_type == _PROTOBUF:
            return slim_export(request_to_json(body, keep=self.keep, resource_keys=("service.name",)), self.trace_map)
        if content_type == _JSON:
            try:
                export = json.loads(body)
            except (ValueError, RecursionError) as err:
                raise DataFormatError(f"invalid JSON ({str(err)[:80]}); send one OTLP JSON export object") from None
            return slim_export(export, self.trace_map)
        raise InvalidParameterError(f"Content-Type {content_type or 'none'!r} is not OTLP/HTTP; send "
                                    f"{_PROTOBUF} or {_JSON}")

    def start(self) -> Receiver:
        self._serving = threading.Thread(target=self.server.serve_forever, name="fairrag-collect", daemon=True)
        self._serving.start()
        return self

    def serve_forever(self) -> None:
        try:
            self.server.serve_forever()
        finally:
            self.stop()

    def stop(self) -> None:
        """Stop taking requests, write what is queued, and close."""
        if self._serving is not None:
            self.server.shutdown()
            self._serving.join()
            self._serving = None
        self.server.server_close()
        if self._writer.is_alive():
            self.queue.put(None)
            self._writer.join()


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "fairrag-collect"
        timeout = SOCKET_TIMEOUT

        def log_message(self, format, *args) -> None:
            pass

        def _answer(self, status: int, body: bytes = b"", content_type: str = "text/plain; charset=utf-8",
                    headers: dict | None = None, close: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(body)

        def _fail(self, status: int, message: str, **kwargs) -> None:
            receiver._count(rejected=1)
            self._answer(status, (message.replace("\n", " ") + "\n").encode(), **kwargs)

        def do_GET(self) -> None:
            self._fail(405, f"send spans with POST {_PATH}", headers={"Allow": "POST"})

        def do_POST(self) -> None:
            if self.path.split("?")[0] != _PATH:
                return self._fail(404, f"no such path {self.path[:80]!r}; post traces to {_PATH}", close=True)
            length = self.headers.get("Content-Length")
            if length is None or not length.strip().isdigit():
                return self._fail(411, "send the body with a Content-Length", close=True)
            if int(length) > receiver.max_bytes:
                return self._fail(413, f"the body is {int(length):,} bytes, over the receiver's limit of "
                                       f"{receiver.max_bytes:,}; send smaller batches or raise --max-request-mb",
                                  close=True)
            if not receiver.reading.acquire(blocking=False):
                receiver._count(busy=1)
                return self._fail(503, "the receiver is reading as many requests as it may; retry later",
                                  headers={"Retry-After": "1"}, close=True)
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
            try:
                body = self.rfile.read(int(length))
                export = receiver.accept(body, content_type, encoding)
            except TimeoutError:  # the body stopped coming
                self.close_connection = True
                return None
            except _TooLarge:
                return self._fail(413, f"the inflated body is over the receiver's limit of {receiver.max_bytes:,} "
                                       "bytes; send smaller batches or raise --max-request-mb")
            except DataFormatError as err:
                return self._fail(400, str(err))
            except InvalidParameterError as err:
                return self._fail(415, str(err))
            finally:
                receiver.reading.release()
            try:
                receiver.queue.put_nowait(export)
            except queue.Full:
                receiver._count(busy=1)
                return self._fail(503, "the receiver's queue is full; retry later", headers={"Retry-After": "1"})
            receiver._count(requests=1)
            if content_type == _PROTOBUF:
                self._answer(200, b"", _PROTOBUF)  # an empty ExportTraceServiceResponse
            else:
                self._answer(200, b"{}", _JSON)

    return Handler


def gzip_body(data: bytes) -> bytes:
    """``data`` gzipped, as an exporter with ``compression=gzip`` sends it (tests, benchmarks)."""
    return gzip.compress(data, compresslevel=1)
