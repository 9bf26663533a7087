"""Data: documents, queries (with RichRAG aspects), relevance judgements, their loaders and the demo registry.

The layer everything else stands on. :class:`Collection` holds a corpus with its queries and qrels and answers
the lookups every stage needs: positions of documents in arrays, providers (who receives exposure), fairness
groups per category (Kim & Diaz 2025 §3.3; Chen & Fang §2.1) and usefulness labels from graded relevance.
Loaders read JSONL/CSV corpora, JSONL queries and TREC qrels and stop at the first problem with the file, the
line and the fix. The four demo collections ship in ``assets/collections/`` (provenance in ``assets/README.md``).

Modules: :mod:`.collection` (the data model), :mod:`.loaders` (files and folders), :mod:`.demo` (the registry),
:mod:`.rag_log` (JSONL logs of what a deployed RAG system served), :mod:`.traces` (the same from OTLP JSON
trace exports, and the documents of a log without a collection), :mod:`.served` (served stochastic runs in expeval's
and TREC Fair 2022's formats), :mod:`.formats` (the one table of served-file formats: suffixes, sniffing, reader;
built on :mod:`.suffixes`, the suffix names the readers share),
:mod:`.judgments` (qrels with group ids, as expeval reads them),
:mod:`.files` (the streaming reader every loader reads through: regular files only, byte budget, gzip, lines),
:mod:`.fields` (whole numbers in ASCII digits, strings without lone surrogates), :mod:`.export` (CSV that spreadsheets
open without running formulas), :mod:`.disk_cache` (the SQLite cache of answers and judgements shared by processes).
"""

from .collection import UNKNOWN_GROUP, Aspect, Collection, Document, Query
from .demo import DEMO_COLLECTIONS, assets_dir, demo_folder
from .judgments import Judgments, judgments_from_collection, load_judgments
from .loaders import load_collection, load_corpus, load_qrels, load_queries
from .rag_log import LogEntry, RagLog, load_rag_log, load_served, load_traces
from .served import ServedRankings, load_run

__all__ = [
    "Aspect", "Collection", "Document", "Query", "UNKNOWN_GROUP",
    "DEMO_COLLECTIONS", "assets_dir", "demo_folder",
    "load_collection", "load_corpus", "load_qrels", "load_queries", "LogEntry", "RagLog", "load_rag_log", "load_served",
    "load_traces",
    "ServedRankings", "Judgments", "load_run", "load_judgments", "judgments_from_collection",
]
