"""The worked example that closes the loop (issue 32, Must have 4; docs/worked-example.md): audit a LlamaIndex app,
deploy the α the what-if recommends with :class:`~fairrag_core.integrations.FairNodePostprocessor`, audit the next
window, and hold both windows to a fairness gate — every step a command of the studio, every number printed here.

The app is a LlamaIndex query engine over the ``running-shoes`` demo collection (92 documents by 14 brands, 18
queries with graded relevance labels, so EE-R is measured), traced by the stock openinference LlamaIndex instrumentor
through the OpenTelemetry SDK's OTLP/HTTP exporter into a ``fairrag collect`` receiver this script starts on loopback
(service :data:`SERVICE`, store ``OUT/store``). Its retriever is BM25's top :data:`K_CANDIDATES`, cut to the top
:data:`K_SHOWN` by a deterministic reranker step (:class:`TopK`, which reports its input and output with LlamaIndex's
rerank events, as LlamaIndex's own rerankers do), and a mock LLM answers. Nothing is downloaded.

1. **Week 1**: the deterministic app answers :data:`ROUNDS` rounds of the 18 queries.
2. ``audit-log`` audits week 1's window of the store (``--service``, ``--since``, ``--until``) with the what-if at
   :data:`WHAT_IF_ALPHAS`: its findings, and the recommended α with the configuration line.
3. **Week 2**: the recommended α, read from the audit's JSON, is deployed: the :class:`TopK` step is replaced by
   ``FairNodePostprocessor(alpha=α, k=5, seed=…)``; the same requests; ``audit-log`` audits week 2's window.
4. ``check`` holds each window to the policy :data:`POLICY` (``examples/fairness-policy.toml``): exit code 1 for week
   1, 0 for week 2.
5. ``compare-runs`` compares the two stored audits: is week 2 fairer, and at what cost?

The weeks are two windows of one service, seconds apart in real time (the receiver files spans by the hour they
arrive, so backdated spans would not be found by a window); the commands name them with ``--since``/``--until``.

The walk-through is :data:`TEMPLATE` with the printed lines filled in, and what differs between runs masked
(:func:`normalise`), written to ``OUT/worked-example.md`` and, with ``--doc FILE``, to FILE: docs/worked-example.md
is ``python examples/close_the_loop.py --out /tmp/loop --doc docs/worked-example.md``, and
tests/test_worked_example.py checks that a new run writes it again. About 30 s on a 2-core CPU.

Usage::

    python examples/close_the_loop.py --out /tmp/loop [--doc docs/worked-example.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a clone without installing the package
    sys.path.insert(0, str(ROOT))

COLLECTION = "running-shoes"
SERVICE = "shoe-shop"
#: BM25's top K candidates, of which the generator is shown k.
K_CANDIDATES, K_SHOWN = 20, 5
#: Each week asks every query of the collection this many times.
ROUNDS = 10
WHAT_IF_ALPHAS = "0,1,2,3,4,5,6,8,inf"
#: The group category of the collection whose under-exposure the walk-through follows through the what-if.
CATEGORY, GROUP = "segment", "independent"
#: The audit's and the gate's bootstrap seed, and the component's base seed.
SEED, COMPONENT_SEED = 32, 7
POLICY = Path("examples/fairness-policy.toml")  # relative to the repository root, where the commands run
TEMPLATE = ROOT / "examples" / "worked-example.md.in"
DOC_OUT = "/tmp/loop"  # the --out docs/worked-example.md was made with
CLI = "python -m fairrag_core"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_second() -> float:
    """Wait for the next whole second and return it: the border between two windows."""
    t = float(int(time.time()) + 1)
    time.sleep(max(0.0, t - time.time()))
    return t


class Shell:
    """Runs the studio's commands as a reader would type them (``python -m fairrag_core …`` in the repository root),
    printing each command, what it printed and its exit code."""

    def __init__(self) -> None:
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    @staticmethod
    def shown(args: list[str]) -> str:
        return f"{CLI} {shlex.join(args)}"

    def run(self, args: list[str], expect: tuple[int, ...] = (0,), echo: bool = True) -> subprocess.CompletedProcess:
        """Run ``args``; print its output unless ``echo`` is false (JSON, summarised by the caller instead)."""
        print(f"\n$ {self.shown(args)}", flush=True)
        done = subprocess.run([sys.executable, "-m", "fairrag_core", *args], env=self.env, cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode not in expect:
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"`{self.shown(args)}` exited {done.returncode}, expected {expect}")
        if echo:
            print(transcript(done), flush=True)
        return done

    def start(self, args: list[str], log: Path) -> subprocess.Popen:
        """Start ``args`` in the background, its output into ``log``."""
        print(f"\n$ {self.shown(args)} &", flush=True)
        with log.open("w", encoding="utf-8") as handle:
            return subprocess.Popen([sys.executable, "-m", "fairrag_core", *args], env=self.env, cwd=ROOT,
                                    stdout=handle, stderr=subprocess.STDOUT, text=True)


def transcript(done: subprocess.CompletedProcess) -> str:
    """What a command printed (standard error's notes first, as a terminal shows them) and its exit code."""
    return f"{done.stderr}{done.stdout}".rstrip("\n") + f"\n(exit code {done.returncode})"


def wait_for(port: int, process: subprocess.Popen, log: Path) -> None:
    """Wait until the receiver answers on ``port`` (at most 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                why = log.read_text(encoding="utf-8") if process.poll() is not None else "no answer in 60 s"
                raise SystemExit(f"collect did not start: {why}") from None
            time.sleep(0.2)


# -- the app -----------------------------------------------------------------------------------------------------------
class App:
    """The shop's LlamaIndex app: BM25's top K nodes, a reranker step (deterministic top k, or the fair component),
    a mock LLM; traced by the openinference instrumentor into ``endpoint`` as service :data:`SERVICE`."""

    def __init__(self, endpoint: str) -> None:
        from llama_index.core.instrumentation import get_dispatcher
        from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
        from llama_index.core.postprocessor.types import BaseNodePostprocessor
        from llama_index.core.retrievers import BaseRetriever
        from llama_index.core.schema import NodeWithScore, TextNode
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from fairrag_core import load_collection
        from fairrag_core.retrieval import BM25Retriever

        self.collection = load_collection(COLLECTION)
        bm25 = BM25Retriever(self.collection.texts)
        nodes = [TextNode(id_=d.doc_id, text=d.text, metadata={"brand": d.provider}) for d in self.collection.documents]
        dispatcher = get_dispatcher(__name__)

        class BM25Nodes(BaseRetriever):
            """BM25's top K nodes with their scores (ties in collection order)."""

            def _retrieve(self, query_bundle):
                scores = bm25.score(query_bundle.query_str)
                order = sorted(range(len(nodes)), key=lambda i: -scores[i])[:K_CANDIDATES]
                return [NodeWithScore(node=nodes[i], score=float(scores[i])) for i in order]

        class TopK(BaseNodePostprocessor):
            """The deterministic cut: the top k by score, reported with LlamaIndex's rerank events."""

            @classmethod
            def class_name(cls) -> str:
                return "TopK"

            def _postprocess_nodes(self, nodes, query_bundle=None):
                dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=K_SHOWN, model_name="top-k"))
                kept = sorted(nodes, key=lambda n: -(n.score or 0.0))[:K_SHOWN]
                dispatcher.event(ReRankEndEvent(nodes=kept))
                return kept

        self.retriever, self.top_k = BM25Nodes(), TopK()
        self.tracer_provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
        self.tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=30)))
        self.instrumentor = LlamaIndexInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.tracer_provider)
        self.tracer = self.tracer_provider.get_tracer("shoe-shop")

    def engine(self, step):
        from llama_index.core.llms import MockLLM
        from llama_index.core.query_engine import RetrieverQueryEngine

        return RetrieverQueryEngine.from_args(self.retriever, llm=MockLLM(max_tokens=8), node_postprocessors=[step])

    def week(self, engine) -> int:
        """Ask every query :data:`ROUNDS` times, each request under a root span carrying its query id."""
        n = 0
        for _ in range(ROUNDS):
            for q in self.collection.queries:
                with self.tracer.start_as_current_span("request") as root:
                    root.set_attribute("fairrag.query_id", q.query_id)
                    engine.query(q.text)
                n += 1
        if not self.tracer_provider.force_flush(60_000):
            raise SystemExit("the OpenTelemetry SDK did not flush its spans in 60 s")
        return n

    def close(self) -> None:
        self.instrumentor.uninstrument()
        self.tracer_provider.shutdown()


# -- what the audits say ---------------------------------------------------------------------------------------------
def number(row: dict, key: str = "ee") -> str:
    """``0.899 [0.858, 0.938]``: an estimate with its interval, three decimals."""
    return f"{row[key]:.3f} [{row[f'{key}_low']:.3f}, {row[f'{key}_high']:.3f}]"


def percent(share: float) -> str:
    """``27.8 %``: a share as the studio writes it."""
    return f"{share * 100:.1f} %"


def headline(audit: dict) -> str:
    """EE-D and EE-R with their intervals, from audit-log's JSON ``summary``."""
    rows = {r["metric"]: {"ee": r["estimate"], "ee_low": r["low"], "ee_high": r["high"]} for r in audit["summary"]}
    return (f"EE-D {number(rows['ee_d'])} (lower = fairer), EE-R {number(rows['ee_r'])} (higher = better), "
            f"{audit['summary'][0]['queries']} queries, {audit['config']['extra']['requests']} requests")


def findings(audit: dict) -> str:
    """The audit's findings above info severity, one line each (audit-log's own sentences)."""
    return "\n".join(f"- {f['text']}" for f in audit["findings"] if f["severity"] != "info")


def what_if_table(audit: dict) -> str:
    """The what-if's curve as a Markdown table, with the followed group's share at each α."""
    what_if = audit["what_if"]
    shares = {s["alpha"]: s["share"] for s in what_if["shares"] if s["by"] == CATEGORY and s["group"] == GROUP}
    rows = ["| replayed | EE-D | EE-R | EE-R within 5 % | " + f"{GROUP} share |", "|---|---|---|---|---|"]
    for row in what_if["curve"]:
        alpha = row["alpha"] if row["alpha"] is not None else ("inf" if row["label"].startswith("α = ∞") else None)
        share = shares.get(alpha)
        eligible = {True: "yes", False: "no", None: "—"}[row["eligible"]]
        rows.append(f"| {row['label']} | {number(row, 'ee_d')} | {number(row, 'ee_r')} | {eligible} | "
                    f"{'—' if share is None else percent(share)} |")
    return "\n".join(rows)


def group_line(audit: dict) -> str:
    """The followed group's retrieval share against its fair share, from the audit's ledger."""
    row = next(r for r in audit["ledgers"][CATEGORY] if r["group"] == GROUP)
    return (f"{GROUP}: retrieval share {percent(row['retrieval_share'])} [{row['retrieval_share_low'] * 100:.1f}, "
            f"{row['retrieval_share_high'] * 100:.1f}], fair share {percent(row['target_share'])}")


def replayed_share(audit: dict, alpha: float | str) -> float:
    """The followed group's share in the what-if's replay at ``alpha``."""
    return next(s["share"] for s in audit["what_if"]["shares"]
                if s["by"] == CATEGORY and s["group"] == GROUP and s["alpha"] == alpha)


def served_vs_predicted(predicted: dict, served: dict, alpha: float) -> str:
    """Whether week 2's EE-D and EE-R fall inside the what-if's intervals at the deployed α."""
    rows = {r["metric"]: r for r in served["summary"]}
    inside = [predicted[f"{m}_low"] <= rows[m]["estimate"] <= predicted[f"{m}_high"] for m in ("ee_d", "ee_r")]
    where = {(True, True): "both fall inside", (False, False): "both fall outside"}.get(
        tuple(inside), f"fall {'inside' if inside[0] else 'outside'} and {'inside' if inside[1] else 'outside'}")
    return (f"As served, EE-D {rows['ee_d']['estimate']:.3f} and EE-R {rows['ee_r']['estimate']:.3f} {where} the "
            f"what-if's intervals at α = {alpha:g}.")


def compared(done: subprocess.CompletedProcess) -> str:
    """compare-runs' verdict lines: the comparison finding and the per-query metrics."""
    lines = done.stdout.splitlines()
    keep = [line for line in lines if " is fairer than " in line or " is less fair than " in line
            or (line.lstrip().startswith(("run:",)) and (" EE-D " in line or " EE-R " in line))]
    return "\n".join(line.strip() for line in keep)


# -- the walk-through ------------------------------------------------------------------------------------------------
def normalise(text: str, out: Path, runs: dict[str, str]) -> str:
    """``text`` with what differs between two runs masked: the output folder (written as :data:`DOC_OUT`), times
    (the windows), the receiver's port, run ids (``runs``: id → the name written) and the sha256 of a window's
    traces (their trace ids are random)."""
    text = text.replace(str(out), DOC_OUT)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text)
    text = re.sub(r"--port \d+", "--port <port>", text)
    for run_id, name in runs.items():
        text = text.replace(f"run:{run_id}", f"run:<{name}>")
    return re.sub(r"sha256 [0-9a-f]{12}…", "sha256 <sha256>…", text)


def render(values: dict[str, str]) -> str:
    """The template with each ``{{name}}`` replaced by ``values[name]``."""
    text = TEMPLATE.read_text(encoding="utf-8")
    missing = sorted(set(re.findall(r"\{\{(\w+)\}\}", text)) - set(values))
    if missing:
        raise SystemExit(f"{TEMPLATE}: no value for {', '.join(missing)}")
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], text)


def say(values: dict[str, str], name: str, text: str) -> None:
    """Print ``text`` and keep it for the walk-through as ``{{name}}``."""
    print(text, flush=True)
    values[name] = text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="a new folder for the store, runs and outputs")
    parser.add_argument("--doc", type=Path, help="also write the walk-through here (docs/worked-example.md)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty; choose a new --out")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    shell, values = Shell(), {}
    store, runs = out / "store", out / "runs.duckdb"
    port = free_port()
    collect_args = ["collect", "--store", str(store), "--port", str(port)]
    values["collect"] = shell.shown(collect_args)
    collect = shell.start(collect_args, out / "collect.log")
    try:
        wait_for(port, collect, out / "collect.log")
        app = App(f"http://127.0.0.1:{port}/v1/traces")
        week1 = next_second(), None
        n1 = app.week(app.engine(app.top_k))
        week1 = week1[0], next_second()
        say(values, "week1", f"week 1 ({utc(week1[0])} to {utc(week1[1])}): {n1} requests ({ROUNDS} rounds of the "
                             f"{len(app.collection.queries)} queries), the top {K_SHOWN} of BM25's top "
                             f"{K_CANDIDATES} by score")

        def window(w):
            return ["--service", SERVICE, "--since", utc(w[0]), "--until", utc(w[1]), "--collection", COLLECTION]

        audit1_args = ["audit-log", str(store), *window(week1), "--what-if-alphas", WHAT_IF_ALPHAS,
                       "--seed", str(SEED), "--store", str(runs), "--json"]
        values["audit1_cmd"] = shell.shown(audit1_args)
        a1 = json.loads(shell.run(audit1_args, echo=False).stdout)
        say(values, "audit1_headline", headline(a1))
        say(values, "audit1_findings", findings(a1))
        say(values, "audit1_group", group_line(a1))
        say(values, "what_if", what_if_table(a1))
        say(values, "recommendation", a1["what_if"]["recommendation"])
        alpha = a1["what_if"]["recommended_alpha"]  # the deployment reads α from the audit, as a CI job would
        if alpha is None:
            raise SystemExit("the what-if recommended no α; nothing to deploy")
        from fairrag_core.integrations import FairNodePostprocessor

        fair = FairNodePostprocessor(alpha=alpha, k=K_SHOWN, seed=COMPONENT_SEED, metadata_keys=("brand",),
                                     tracer_provider=app.tracer_provider)
        values["component"] = (f"FairNodePostprocessor(alpha={alpha!r}, k={K_SHOWN}, seed={COMPONENT_SEED}, "
                               "metadata_keys=(\"brand\",))")
        week2 = next_second(), None
        n2 = app.week(app.engine(fair))
        week2 = week2[0], next_second()
        app.close()
        say(values, "week2", f"week 2 ({utc(week2[0])} to {utc(week2[1])}): {n2} requests, the same ones, through "
                             f"{values['component']}")
        audit2_args = ["audit-log", str(store), *window(week2), "--seed", str(SEED), "--store", str(runs), "--json"]
        values["audit2_cmd"] = shell.shown(audit2_args)
        a2 = json.loads(shell.run(audit2_args, echo=False).stdout)
        say(values, "audit2_headline", headline(a2))
        say(values, "audit2_findings", findings(a2) or "- (none above info)")
        say(values, "audit2_group", group_line(a2))
        predicted = next(r for r in a1["what_if"]["curve"] if r["alpha"] == alpha)
        say(values, "predicted", f"the what-if predicted at α = {alpha:g}: EE-D {number(predicted, 'ee_d')}, "
                                 f"EE-R {number(predicted, 'ee_r')}")
        say(values, "served_vs_predicted", served_vs_predicted(predicted, a2, alpha))
        fair_share = next(r for r in a1["ledgers"][CATEGORY] if r["group"] == GROUP)["target_share"]
        say(values, "group_forecast", f"{GROUP}: replayed share at α = {alpha:g} {percent(replayed_share(a1, alpha))}, "
                                      f"deterministic {percent(replayed_share(a1, 'inf'))}, fair share "
                                      f"{percent(fair_share)}")
        checks = []
        for w in (week1, week2):
            check_args = ["check", str(store), *window(w), "--policy", str(POLICY), "--seed", str(SEED)]
            done = shell.run(check_args, expect=(0, 1))
            checks.append((shell.shown(check_args), transcript(done), done.returncode))
        (values["check1_cmd"], values["check1"], _), (values["check2_cmd"], values["check2"], _) = checks
        if [code for *_, code in checks] != [1, 0]:
            raise SystemExit(f"the gate's exit codes were {[c for *_, c in checks]}, expected [1, 0]")
        compare_args = ["compare-runs", f"run:{a1['run_id']}", f"run:{a2['run_id']}", "--collection", COLLECTION,
                        "--store", str(runs), "--seed", str(SEED), "--no-store"]
        values["compare_cmd"] = shell.shown(compare_args)
        values["compare"] = compared(shell.run(compare_args))
        if " is fairer than " not in values["compare"]:
            raise SystemExit("compare-runs did not find week 2 fairer than week 1")
    finally:
        collect.send_signal(signal.SIGTERM)
        collect.wait(60)
    values["policy"] = (ROOT / POLICY).read_text(encoding="utf-8").rstrip("\n")
    values.update(alpha=f"{alpha:g}", k_candidates=str(K_CANDIDATES), k_shown=str(K_SHOWN),
                  component_seed=str(COMPONENT_SEED), even_ee_d=f"{K_SHOWN / K_CANDIDATES:.2f}")
    print(f"\ndone in {time.monotonic() - started:.0f} s; the store, the runs and this walk-through's numbers are in "
          f"{out}")
    doc = normalise(render(values), out, {a1["run_id"]: "week 1", a2["run_id"]: "week 2"})
    (out / "worked-example.md").write_text(doc, encoding="utf-8")
    if args.doc:
        args.doc.write_text(doc, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
