"""The package's structure: layers that only point down, no import cycles, no command importing
another, a plain nn/, training and decoding that never reach into nn/fast/, the paper study
reached through a few named doors, and Lightning's non-public API used in one module only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from private_access import lightning_private_uses

PKG = Path(__file__).resolve().parents[1] / "luong_lit"


def module_name(path: Path) -> str:
    """``luong_lit.data.io`` for ``luong_lit/data/io.py``; a package by its ``__init__.py``."""
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Modules of the package that ``path`` imports, at module level or inside functions.

    ``from a.b import c`` counts as ``a.b.c`` when that is a module, else as ``a.b``.
    """
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("luong_lit"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            found |= subs or ({node.module} & modules)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names} & modules
    return found


def graph() -> dict[str, set[str]]:
    """Import edges between the package's modules, a package standing for its ``__init__.py``
    (an import of ``luong_lit.checkpoint`` is an edge to that package's re-exports)."""
    files = {module_name(p): p for p in PKG.rglob("*.py")}
    return {m: imports_of(p, set(files)) - {m} for m, p in files.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


#: The package's layers, lowest first. A module may import its own unit and the units below it,
#: never one above: the model and the data know nothing of training, decoding knows nothing of
#: engines, the library knows nothing of the command line.
LAYERS = [
    "errors",  # the one user-error base class
    "resources",  # where conf/ and notebooks/ are
    "validate",  # option checks for constructors
    "registry",  # the names of parts (attentions, scores, corpora), open to extensions
    "runtime",  # process-wide settings: CPU, ranks, the libraries' routine notices filtered
    "first_signals",  # a SIGTERM before the run's handler is in place, noted
    "paper",  # the paper's reported figures and its recipe's epochs: facts, nothing of the kit
    "reports",  # the records results.json and evaluate's reports are written and read as
    "data",  # vocabularies and line reading, shared by the data's rooms
    "data.text",  # tokenisers, recipes, the recaser, word dictionaries
    "data.sources",  # the corpora registry, download, mirror and cache
    "data.store",  # a training corpus prepared once into a memory-mapped store
    "data.loading",  # batches, the resumable loader, the datamodule, a model's own data
    "nn",  # the paper's model in plain PyTorch
    "nn.fast",  # the same model computed faster
    "decoding",  # greedy, beam, ensembles, unk replacement, forced decoding
    "metrics",  # BLEU, AER, perplexity
    "engines",  # how the model is computed: reference or fast
    "plugins",  # a user's own parts, loaded for every command (entry points, --user-dir)
    "checkpoint",  # checkpoint files, the models they hold, averages
    "inference",  # a model at decode time, as every caller decodes
    "translator",  # the Python API: options, text, search, attention
    "alignment",  # gold-aligned text, the alignment report, AER, eflomal
    "evaluation",  # a checkpoint's report on a test set
    "sweeps",  # a sweep job's GPU, threads and resume
    "config_parts",  # registered attentions and scores as config group options
    "config",  # composing the Hydra configs
    "config_help",  # train --help: the groups, their options, the experiments
    "analysis",  # figures and tables of runs
    "study",  # the paper study: Tables 1 and 3's ladders, their steps judged, the exhibits
    "serving",  # the HTTP server
    "training",  # Lightning
    "cli",  # what the commands share
    "commands",  # one module per command
    "__main__",
    "train",
]


SUB_UNITS = {("nn", "fast"), ("data", "text"), ("data", "sources"), ("data", "store"),
             ("data", "loading")}  # fmt: skip


def facades() -> set[str]:
    """The packages: their ``__init__`` gathers what their modules offer, from any layer below."""
    return {module_name(p) for p in PKG.rglob("__init__.py")}


def unit(module: str) -> str:
    """The layer unit of a module: a sub-package of :data:`SUB_UNITS` (``nn.fast`` for
    ``luong_lit.nn.fast.lstm``), else its package (or the module itself at the top level)."""
    parts = module.split(".")[1:] or ["__init__"]
    if tuple(parts[:2]) in SUB_UNITS:
        return ".".join(parts[:2])
    return parts[0]


def upward_imports(edges: dict[str, set[str]], exempt: set[str] = frozenset()) -> list[str]:
    """Every import that points to a higher layer, or to a unit the layer list does not know
    (``exempt``: modules whose imports are not checked, the packages' re-exports)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    found = []
    for a, targets in sorted(edges.items()):
        if a in exempt:
            continue
        for b in sorted(targets):
            ua, ub = unit(a), unit(b)
            if ua not in rank or ub not in rank:
                found.append(f"{a} -> {b}: declare {ua if ua not in rank else ub} in LAYERS")
            elif rank[ub] > rank[ua]:
                found.append(f"{a} ({ua}) imports {b} ({ub}), a higher layer")
    return found


def test_the_layer_check_finds_an_upward_import():
    edges = {"luong_lit.data.loading.datamodule": {"luong_lit.training.signals", "luong_lit.data"}}
    assert upward_imports(edges) == [
        "luong_lit.data.loading.datamodule (data.loading) imports luong_lit.training.signals "
        "(training), a higher layer"
    ]
    assert upward_imports({"luong_lit.nn.fast.lstm": {"luong_lit.nn.encoder"}}) == []
    assert upward_imports({"luong_lit.data.text.tokenize": {"luong_lit.data.store.prepare"}})
    assert "declare gui in LAYERS" in upward_imports({"luong_lit.gui": {"luong_lit.nn.x"}})[0]


def test_imports_only_point_down_the_layers():
    assert upward_imports(graph(), exempt=facades()) == []


def test_training_and_decoding_never_import_the_fast_model():
    """Speed is chosen in one place, the engine (:mod:`luong_lit.engines`)."""
    for m, targets in graph().items():
        if unit(m) in ("training", "decoding"):
            assert not {t for t in targets if unit(t) == "nn.fast"}, m


#: the kit's doors to the paper's facts (:mod:`luong_lit.paper`, the lowest of the kit's own
#: units): a run's row of the paper's figures (``report``, the notebook's tables), the paper
#: recipe's resolvers, and the study's ladders laid out beside the paper's rows
PAPER_DOORS = {
    "luong_lit.analysis.runs": {"luong_lit.paper.numbers"},
    "luong_lit.sweeps.resolvers": {"luong_lit.paper.resolvers"},
    "luong_lit.study.ensembles": {"luong_lit.paper.numbers"},
    "luong_lit.study.ladder_views": {"luong_lit.paper.numbers"},
    "luong_lit.study.ladders": {"luong_lit.paper.numbers"},
}

#: the kit's doors to the paper study (:mod:`luong_lit.study`): the command that lays out the
#: ladders and finds their ensembles (the notebook imports the study too; it is not the package)
STUDY_DOORS = {
    "luong_lit.commands.report": {"luong_lit.study.ladders", "luong_lit.study.ensembles"},
}


def _doors(edges: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """Which modules outside ``package`` import it, and what of it."""
    outside = {
        m: {t for t in targets if t == package or t.startswith(package + ".")}
        for m, targets in edges.items()
        if not (m == package or m.startswith(package + "."))
    }
    return {m: t for m, t in outside.items() if t}


def test_the_kit_reaches_the_paper_and_its_study_through_their_doors_only():
    """The paper's facts (:mod:`luong_lit.paper`) and the paper study (:mod:`luong_lit.study`)
    are not the kit's face: only the modules of :data:`PAPER_DOORS` and :data:`STUDY_DOORS`
    import them, each only what it names. The facts import nothing of the kit, so they sit at
    one height, low; the study reads runs with :mod:`luong_lit.analysis`, above it."""
    edges = graph()
    assert _doors(edges, "luong_lit.paper") == PAPER_DOORS
    assert _doors(edges, "luong_lit.study") == STUDY_DOORS
    for m, targets in edges.items():
        if unit(m) == "paper":
            assert not {t for t in targets if unit(t) != "paper"}, m


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_modules():
    assert cycles(graph()) == []


def test_no_command_imports_another():
    edges = graph()
    commands = {m for m in edges if m.startswith("luong_lit.commands.")}
    for m in commands:
        assert not (edges[m] & commands), f"{m} imports {edges[m] & commands}"


def test_the_model_never_imports_lightning_or_other_parts_of_the_kit():
    """``luong_lit.nn`` is plain PyTorch: it imports nothing but itself, ``luong_lit.errors``,
    ``luong_lit.validate`` and ``luong_lit.registry``."""
    for path in (PKG / "nn").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                assert not name.startswith(("lightning", "pytorch_lightning")), f"{path}: {name}"
                if name.startswith("luong_lit"):
                    ok = ("luong_lit.nn", "luong_lit.errors", "luong_lit.validate",
                          "luong_lit.registry")  # fmt: skip
                    assert name.startswith(ok), f"{path}: {name}"


def test_every_package_is_in_the_wheel():
    """``pyproject.toml`` lists the packages (it maps ``conf/`` and ``notebooks/`` in): a new
    sub-package left off the list would be missing from every wheel."""
    toml = (PKG.parent / "pyproject.toml").read_text(encoding="utf-8")
    listed = re.findall(r'^\s*"(luong_lit[\w.]*)",', toml, re.M)
    found = {module_name(p.parent) for p in PKG.rglob("__init__.py")}
    assert found | {"luong_lit.conf", "luong_lit.notebooks"} == set(listed)
    assert (PKG.parent / "conf" / "train.yaml").is_file()
    assert (PKG.parent / "notebooks" / "analysis.ipynb").is_file()


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def test_only_the_command_line_imports_the_commands():
    """The library, the tests and the scripts use the library: ``luong_lit.commands`` is the
    command line's alone (``__main__``, ``train`` and the commands themselves)."""
    cli = {PKG / "__main__.py", PKG / "train.py"}
    for folder in ("luong_lit", "tests", "scripts"):
        for path in (PKG.parent / folder).rglob("*.py"):
            if path in cli or PKG / "commands" in path.parents:
                continue
            found = {m for m in _imports(path) if m.startswith("luong_lit.commands")}
            assert not found, f"{path.relative_to(PKG.parent)} imports {sorted(found)}"


def test_no_test_imports_the_benchmarks_or_another_test():
    """The tests run the benchmarks as a user does; what tests share lives in ``conftest.py``."""
    for path in (PKG.parent / "tests").glob("*.py"):
        found = {
            m for m in _imports(path) if m.startswith("scripts.benchmarks") or m.startswith("test_")
        }
        assert not found, f"{path.name} imports {sorted(found)}"


#: The one module that may use Lightning's (and submitit's) non-public API, each use a function
#: that says why (:mod:`luong_lit.training.lightning_internals`).
INTERNALS = PKG / "training" / "lightning_internals.py"


def test_the_private_access_finder_finds_each_kind():
    source = (
        "import lightning as L\n"
        "from lightning.pytorch.loggers import CSVLogger\n"
        "from lightning.fabric.utilities.imports import _TORCH_GREATER_EQUAL_2_4\n"
        "class Log(CSVLogger):\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def _get_next_version(self):\n"
        "        return self._fs, self._mine\n"
        "def stop(trainer, job):\n"
        "    trainer._signal_connector.received_sigterm = job._replace(x=1)\n"
        "    return getattr(trainer, '_results'), {'loops': {'fit_loop': {}}}\n"
    )
    namespace: dict = {}  # its classes (the private import left out: it may not exist)
    exec(source.replace("from lightning.fabric.utilities.imports import", "#"), namespace)
    found = lightning_private_uses(source, namespace)
    assert sorted(found) == sorted([
        "line 3: imports _TORCH_GREATER_EQUAL_2_4",
        "line 7: Log._get_next_version is Lightning's",
        "line 8: Log._fs is Lightning's",
        "line 10: ._signal_connector",
        "line 11: getattr(..., '_results')",
        "line 11: 'fit_loop'",
    ])  # fmt: skip
    assert lightning_private_uses("def f(x):\n    return x._cache\n", {}) == []  # not Lightning's


def test_only_lightning_internals_reaches_into_lightning():
    """Lightning's non-public API is used in one module, each use a function that says why
    (``lightning_internals``), which refuses a Lightning it was not tested with."""
    import importlib

    for path in sorted(PKG.rglob("*.py")):
        if path == INTERNALS:
            continue
        source = path.read_text(encoding="utf-8")
        training = PKG / "training" in path.parents
        theirs = "class " in source and "lightning" in source  # classes on a Lightning base?
        module = importlib.import_module(module_name(path)) if theirs else None
        found = lightning_private_uses(source, vars(module) if module else {}, training)
        assert not found, f"{path.relative_to(PKG.parent)}: {found}"
    assert lightning_private_uses(INTERNALS.read_text(encoding="utf-8"), {}, True)
