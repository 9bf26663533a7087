"""The package's shape: what it exposes, what it imports, and which way its imports point."""

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import fairrag_core as fr

PACKAGE = Path(fr.__file__).resolve().parent

ROOT = PACKAGE.parent
#: Capabilities that the front door once lacked (issue 28): each must stay reachable as ``fr.NAME``.
NEWER_CAPABILITIES = {"what_if_sampling", "WhatIfSettings", "compare_systems", "load_served", "audit_served",
                      "evaluate_served", "unbiased_ee_disparity"}

#: Every command and its flags (``python -m fairrag_core …``): scripts and the README depend on them.
CLI = {
    "collections": ["--json"],
    "aspects": ["--aspects", "--collection", "--explorer", "--json", "--max-aspects", "--query"],
    "rich-rank": ["--aspects", "--capacity", "--collection", "--device", "--explorer", "--json", "--max-aspects",
                  "--model", "--per-aspect", "--query", "--ranker", "--retriever", "-M", "-N", "-k"],
    "train-ranker": ["--device", "--epochs", "--json", "--output", "--seed"],
    "rich-eval": ["--alphas", "--answer-queries", "--answer-systems", "--answers", "--device", "--fairness",
                  "--folds", "--generator", "--json", "--ranker-dir", "--seed", "-k"],
    "rank": ["--all-providers", "--alpha", "--candidates", "--collection", "--device", "--json", "--min-rel", "--model",
             "--query", "--retriever", "--samples", "--seed", "--show", "--store", "-N", "-k"],
    "exposure-sweep": ["--alphas", "--backend", "--candidates", "--collection", "--device", "--json", "--min-rel",
                       "--model", "--no-store", "--output", "--queries", "--ray-address", "--retriever", "--samples",
                       "--seed", "--store", "-N", "-k"],
    "rag": ["--alpha", "--candidates", "--collection", "--control-margin", "--device", "--entail-threshold",
             "--generator", "--json", "--metric", "--min-rel", "--min-support", "--model", "--nli", "--no-per-claim",
             "--no-skip-degenerate", "--paper-citations", "--per-claim", "--prompt-order", "--prompt-style",
             "--query", "--retriever", "--samples", "--seed", "--skip-degenerate", "-N", "-k"],
    "label-utility": ["--backend", "--candidates", "--collection", "--depth", "--device", "--generator", "--json",
                      "--metric", "--min-rel", "--model", "--out-dir", "--prompt-order", "--prompt-style", "--queries",
                      "--ray-address", "--retriever", "--samples", "--seed", "-N", "-k"],
    "sweep": ["--alphas", "--backend", "--candidates", "--collection", "--control-margin", "--device",
              "--entail-threshold", "--generator", "--json", "--labels", "--metric", "--min-rel", "--min-support",
              "--model", "--nli", "--no-oracle",
              "--no-per-claim", "--no-skip-degenerate", "--no-store", "--output", "--paper-citations", "--per-claim",
              "--prompt-order", "--prompt-style", "--queries", "--ray-address", "--retriever", "--samples", "--seed",
              "--skip-degenerate", "--store", "-N", "-k"],
    "fair-qr": ["--background", "--category", "--collection", "--json", "--max-iterations", "--query", "--refiner",
                "--target", "--top-k"],
    "fair-qr-eval": ["--backend", "--background", "--categories", "--collection", "--dense", "--json",
                     "--max-iterations", "--output", "--queries", "--ray-address", "--refiner", "--top-k"],
    "runs": ["--json", "--output", "--store", "action", "run_ids"],
    "evaluate-run": ["--awrf", "--binarize", "--bounds", "--ci", "--complete", "--format", "--group-by", "--groups",
                     "--json", "--level", "--n-boot", "--patience", "--seed", "--trec-eval", "--unnormalized",
                     "--user-model", "--utility", "-B", "-C", "-G", "-U", "-k", "-p", "-r", "-u", "qrels", "run"],
    "compare-runs": ["--attribution", "--baseline", "--binarize", "--bounds", "--by", "--collection", "--complete",
                     "--format", "--group-by", "--groups", "--json", "--level", "--merit-grades", "--merit-threshold",
                     "--min-rel", "--multi-retrieval", "--n-boot", "--n-permutations", "--no-store", "--patience",
                     "--provider-from", "--provider-map", "--report", "--seed", "--service", "--since", "--store",
                     "--target-shares", "--trace-map", "--unnormalized", "--until", "--user-model", "--utility", "-B",
                     "-C", "-G", "-U", "-k", "-p", "-r", "-u", "inputs"],
    "audit-log": ["--all-providers", "--attribution", "--backend", "--boot", "--changes", "--collection", "--device",
                  "--entail-threshold", "--json", "--k", "--level", "--merit-grades", "--merit-threshold", "--min-rel",
                  "--min-support",
                  "--multi-retrieval", "--nli", "--no-per-claim",
                  "--no-skip-degenerate", "--no-store", "--output", "--paper-citations", "--patience", "--per-claim",
                  "--provider-from", "--provider-map", "--ray-address", "--seed", "--service", "--since",
                  "--skip-degenerate", "--store", "--target-shares", "--trace-map", "--until", "--user-model",
                  "--utility", "--what-if-alphas",
                  "--what-if-samples", "--window", "-k", "log"],
    "check": ["--attribution", "--boot", "--collection", "--device", "--entail-threshold", "--json", "--junit", "--k",
              "--level", "--merit-grades", "--merit-threshold", "--min-rel", "--min-support", "--multi-retrieval",
              "--nli", "--no-per-claim", "--no-skip-degenerate", "--paper-citations", "--patience", "--per-claim",
              "--policy", "--provider-from", "--provider-map", "--seed", "--service", "--since", "--skip-degenerate",
              "--store", "--strict", "--summary", "--target-shares", "--trace-map", "--until", "--user-model",
              "--utility", "-k", "log"],
    "index": ["--all", "--collection", "--device", "--json", "--model", "--retriever", "action", "key"],
    "collect": ["--host", "--max-request-mb", "--port", "--queue", "--store", "--trace-map"],
    "warm": ["--alphas", "--cache", "--candidates", "--collection", "--control-margin", "--device",
             "--entail-threshold", "--generator", "--json", "--mark-class", "--metric", "--min-rel", "--min-support",
             "--model", "--nli", "--no-per-claim", "--no-skip-degenerate", "--oracle", "--paper-citations",
             "--per-claim", "--preset", "--prompt-order", "--prompt-style", "--queries", "--quiet", "--retriever",
             "--samples", "--seed",
             "--skip-degenerate", "-N", "-k"],
}

#: Layers, bottom first. A module may import its own layer or lower ones, never a higher one
#: (data flows one way: data → retrieval → ranking → rag → audit → backends → cli). ``backends`` (issue 14, the Ray
#: backend) maps the analyses' task functions on a local or Ray executor, so it sits above them and below the CLI.
LAYERS = [
    {"errors", "checks", "text", "seeds", "option_types", "options", "settings", "lazy"},
    {"data", "models", "record"},  # a run record names its models by the catalogue's names
    {"metrics", "retrieval", "glossary"},  # the glossary reads the metric registry
    {"ranking", "integrations"},  # the framework components sample with the ranking layer's sampler
    {"rag", "fairqr", "richrag"},
    {"audit"},
    {"backends"},
    {"cli", "__main__", "__init__"},
]


#: The app's code beside the library: its package and its pages (``app_pages/`` has no ``__init__``).
STUDIO = ROOT / "fairrag_studio"
PAGES = ROOT / "app_pages"
ALL_ROOTS = ("fairrag_core", "fairrag_studio", "app_pages")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(roots: tuple[str, ...]) -> list[Path]:
    return [p for root in roots for p in sorted((ROOT / root).rglob("*.py"))]


def _imports(path: Path, roots: tuple[str, ...] = ("fairrag_core",), modules: set[str] | None = None) -> set[str]:
    """Every module of ``roots`` that ``path`` imports, at any depth (function-level imports count too)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if modules is None:
        modules = {_module_name(p) for p in _sources(roots)}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] not in roots:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] in roots}
    return found - {name}


def _graph(roots: tuple[str, ...] = ("fairrag_core",)) -> dict[str, set[str]]:
    paths = _sources(roots)
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p, roots, modules) for p in paths}


def test_the_front_door_is_its_export_table():
    """One list: ``__all__`` is the lazy export table itself, each name is found where the table says."""
    import importlib

    assert fr.__all__ == list(fr._EXPORTS) and len(set(fr.__all__)) == len(fr.__all__)
    for name, module in fr._EXPORTS.items():
        assert getattr(importlib.import_module(module, "fairrag_core"), name) is getattr(fr, name), name
    assert set(fr.__all__) >= NEWER_CAPABILITIES


def test_the_docs_name_only_what_the_front_door_exports():
    """Every ``fr.NAME`` of the README and docs/, and every function of docs/library.md's table of what is computed,
    is in the front door."""
    import re

    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {(path.name, m) for path in texts for m in re.findall(r"\bfr\.([A-Za-z_]\w*)", path.read_text("utf-8"))}
    missing = sorted((doc, name) for doc, name in named if name not in fr.__all__)
    assert not missing, f"the docs name names the front door lacks: {missing}"
    library = (ROOT / "docs" / "library.md").read_text("utf-8")
    table = library.split("## What is computed", 1)[1].split("\n\n", 2)[1]
    listed = {m for row in table.splitlines()[2:] for m in re.findall(r"`([a-z_]\w*)[(`]", row.split("|")[1])}
    assert listed and listed <= set(fr.__all__), sorted(listed - set(fr.__all__))


def test_cli_commands_and_flags_are_pinned():
    from fairrag_core.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    found = {name: sorted(f for a in p._actions if not isinstance(a, argparse._HelpAction) and a.dest != "handler"
                          for f in (a.option_strings or [a.dest]))
             for name, p in sub.choices.items()}
    assert found == CLI


def test_no_import_cycles():
    """No module of the library, the app's package or its pages reaches itself through its imports."""
    graph = _graph(ALL_ROOTS)
    # __init__ re-exports pull in whole subpackages; a cycle is a module reachable from itself through the others
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == "fairrag_core" or nxt not in graph:
                continue  # the package root re-exports everything; modules never import it
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, f"import cycles: {cycles}"


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """``start`` and every module its imports reach, at any depth; importing ``a.b.c`` runs ``a.b``'s ``__init__``."""
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module in seen or module not in graph:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [*graph[module], *(".".join(parts[:i]) for i in range(1, len(parts)))]
    return seen


def _imports_streamlit(module: str) -> bool:
    path = ROOT / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any((isinstance(node, ast.Import) and any(a.name.split(".")[0] == "streamlit" for a in node.names))
               or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "streamlit")
               for node in ast.walk(tree))


def test_the_apps_folders_say_which_side_of_streamlit_they_are_on():
    """Views and charts never import Streamlit, directly or through the app's modules they import (function-level
    imports count); they, and services, never import a panel or a page: the arrows point pages → panels → services,
    views → charts."""
    graph = _graph(("fairrag_studio", "app_pages"))
    assert {"fairrag_studio.views.served", "fairrag_studio.panels.served", "app_pages.audit"} <= set(graph)
    assert _imports_streamlit("fairrag_studio.panels.served") and not _imports_streamlit("fairrag_studio.views.served")
    for module in sorted(graph):
        if not module.startswith(("fairrag_studio.views", "fairrag_studio.charts", "fairrag_studio.services")):
            continue
        reached = _reached(graph, module)
        upward = sorted(m for m in reached if m.startswith(("fairrag_studio.panels", "app_pages")))
        assert not upward, f"{module} imports {upward}: a view, chart or service never imports a panel or a page"
        if not module.startswith("fairrag_studio.services"):  # services may hold st.cache_resource
            through = sorted(m for m in reached if _imports_streamlit(m))
            assert not through, f"{module} reaches Streamlit through {through}: keep views and charts pure"


def test_the_report_builders_run_without_streamlit():
    """The reports the CLI writes (``compare-runs --report``, the log report with its what-if) load no Streamlit."""
    code = ("import sys, fairrag_studio.views.served, fairrag_studio.views.compare, fairrag_studio.views.audit; "
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "False"


def test_modules_never_import_the_package_root():
    offenders = [m for m, deps in _graph().items() if "fairrag_core" in deps and m != "fairrag_core"]
    assert not offenders, f"import the submodule instead of fairrag_core: {offenders}"


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def test_imports_point_down_the_layers():
    upward = [(m, d) for m, deps in _graph().items() for d in deps
              if d != "fairrag_core" and _layer(d) > _layer(m)]
    assert not upward, f"imports against the data flow: {upward}"


def test_source_files_stay_small_or_say_why():
    for path in _sources(ALL_ROOTS):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > 420:
            head = text[:1500].lower()
            assert "long because" in head, f"{path.name} has {lines} lines; split it or say at its top why not"


def test_core_imports_without_streamlit_torch_or_llama_cpp():
    code = ("import sys, fairrag_core; "
            "print(sorted(m for m in ('torch', 'streamlit', 'llama_cpp', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_subpackage_says_what_it_implements():
    for init in [*PACKAGE.rglob("__init__.py"), *STUDIO.rglob("__init__.py")]:
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, f"{init} needs a docstring that says what it implements and cites its source"


#: The top level of fairrag_core when issue 28 was filed: new ideas go into a subpackage, not beside these.
TOP_LEVEL_MODULES = 12


def test_the_top_level_does_not_grow():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES, f"{len(top)} modules at the top of fairrag_core ({top}); use a subpackage"
