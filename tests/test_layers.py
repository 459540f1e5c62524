"""Imports run one way: no module imports one that imports it back (directly or around a cycle,
at the top or inside a function), and no import runs against the layers: the library
(``stiefel_core``) never imports the book's package (``stiefel_book``) nor anything but torch;
in the book, experiments never read findings, findings never read the wording of their numbers
(nor do experiments, tasks or arms), tasks (what is trained) never read the experiments
that run them, arms (the optimizers of W_Q, W_K) read neither, the engine (what an experiment
is, its runner, the one study) reads no task and no experiment, plots draw what they are handed,
and nothing below the explorers needs them. Read from the source with ``ast``, so an import hidden in a function
counts too."""

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "stiefel_core"  # the library
BOOK = REPO / "bookpkg" / "stiefel_book"  # the book's machinery
# What the library may never import: the book, and what only the book installs.
NOT_IN_LIBRARY = ("stiefel_book", "numpy", "scipy", "matplotlib", "yaml", "IPython", "ipywidgets", "tqdm", "PIL")


def _modules(*packages: Path) -> dict[str, Path]:
    """``{dotted name: path}`` of every module of ``packages`` (both packages by default)."""

    def name(path: Path, package: Path) -> str:
        parts = path.relative_to(package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    return {name(p, package): p for package in (packages or (ROOT, BOOK)) for p in package.rglob("*.py")}


def foreign_imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in ``path`` (``numpy`` for ``numpy.linalg``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def import_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """``{module: the stiefel_core modules it imports}``; ``from package import name`` counts as an
    import of ``package.name`` when that is a module, else of ``package``; a module of another
    package counts as an import of that package too (its ``__init__`` runs first)."""
    edges = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    targets.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
        targets = {t for t in targets if t in modules}
        for t in list(targets):  # importing a.b.c from outside package a.b first runs a.b's __init__
            parent = t.rpartition(".")[0]
            while parent in modules and not (name + ".").startswith(parent + "."):
                targets.add(parent)
                parent = parent.rpartition(".")[0]
        edges[name] = targets - {name}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _in(module: str, layer: str) -> bool:
    return module == f"stiefel_book.{layer}" or module.startswith(f"stiefel_book.{layer}.")


FORBIDDEN = (  # (importer's layer, imported layer, why)
    (
        "experiments",
        "findings",
        "experiments never read findings: a rule they need lives in choices or results_reading",
    ),
    ("plots", "findings", "plots draw what they are handed"),
    ("findings", "wording", "findings return numbers and verdict words; the sentences that word them import them"),
    ("experiments", "wording", "an experiment runs and records; the chapters' sentences are read above it"),
    ("tasks", "wording", "a task trains what it is handed"),
    ("arms", "wording", "an arm is a value and its optimizer factory"),
    ("plots", "experiments", "plots draw what they are handed"),
    ("tasks", "experiments", "a task trains what it is handed; which runs to make is the experiments' to declare"),
    ("arms", "tasks", "an arm is a value and its optimizer factory, whatever task trains it"),
    ("arms", "experiments", "an arm is a value and its optimizer factory, whatever experiment runs it"),
    ("engine", "experiments", "the engine runs what an experiment declares; the catalogue of them is above it"),
    ("engine", "tasks", "the engine sweeps, judges and runs whatever a declaration hands it"),
    ("engine", "findings", "the engine applies the rule in choices; findings read what it wrote"),
    ("engine", "wording", "the engine runs and records"),
)


def upward_edges(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for a, targets in sorted(edges.items()):
        for b in sorted(targets):
            found += [f"{a} -> {b}: {why}" for low, high, why in FORBIDDEN if _in(a, low) and _in(b, high)]
            if _in(b, "widgets") and not _in(a, "widgets"):
                found.append(f"{a} -> {b}: nothing below the explorers needs them")
            if a.startswith("stiefel_core") and b.startswith("stiefel_book"):
                found.append(f"{a} -> {b}: the library never imports the book")
    return found


def test_the_library_imports_torch_alone():
    """``stiefel_core`` imports nothing of the book and none of the book's requirements."""
    found = {
        f"{p.relative_to(REPO)}: {name}"
        for p in ROOT.rglob("*.py")
        for name in foreign_imports(p)
        if name in NOT_IN_LIBRARY
    }
    assert found == set()


def test_the_library_loads_with_only_torch(tmp_path):
    """Every library module imports where the book's requirements cannot: a blocker refuses them."""
    import subprocess

    names = " ".join(f"stiefel_core.{p.stem}," for p in ROOT.glob("[!_]*.py"))
    code = f"import sys\nfor name in {NOT_IN_LIBRARY!r}: sys.modules[name] = None\nimport {names.rstrip(',')}\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_no_module_imports_itself_back():
    assert cycles(import_edges(_modules())) == []


def test_no_import_runs_against_the_layers():
    assert upward_edges(import_edges(_modules())) == []


def test_the_checks_see_a_cycle_and_an_upward_edge(tmp_path):
    """Negative controls: the same checks on made-up edges find what they should."""
    made_up = {
        "stiefel_core.optim": {"stiefel_core.step_checks"},
        "stiefel_core.step_checks": {"stiefel_core.optim"},
        "stiefel_book.experiments.peers": {"stiefel_book.findings.peers"},
        "stiefel_book.findings.peers": set(),
        "stiefel_book.plots.cifar10": {"stiefel_book.experiments"},
        "stiefel_book.experiments": set(),
        "stiefel_book.certify": {"stiefel_book.widgets.static"},
        "stiefel_book.widgets.static": set(),
        "stiefel_core.convert": {"stiefel_book.models"},
        "stiefel_book.models": set(),
        "stiefel_book.tasks.grokking": {"stiefel_book.experiments.grokking", "stiefel_book.arms"},
        "stiefel_book.experiments.grokking": {"stiefel_book.tasks.grokking"},
        "stiefel_book.arms.relatives": {"stiefel_book.tasks.cifar10"},
        "stiefel_book.arms.variants": {"stiefel_book.experiments.ablation"},
        "stiefel_book.tasks.cifar10": set(),
        "stiefel_book.experiments.ablation": set(),
        "stiefel_book.findings.routing": {"stiefel_book.wording.routing"},
        "stiefel_book.wording.routing": set(),
        "stiefel_book.tasks.mqar": {"stiefel_book.wording"},
        "stiefel_book.wording": set(),
        "stiefel_book.engine.study": {"stiefel_book.tasks.routing"},
        "stiefel_book.tasks.routing": set(),
    }
    assert cycles(made_up) == [
        ["stiefel_book.experiments.grokking", "stiefel_book.tasks.grokking"],
        ["stiefel_core.optim", "stiefel_core.step_checks"],
    ]
    assert {line.partition(":")[0] for line in upward_edges(made_up)} == {
        "stiefel_book.experiments.peers -> stiefel_book.findings.peers",
        "stiefel_book.plots.cifar10 -> stiefel_book.experiments",
        "stiefel_book.certify -> stiefel_book.widgets.static",
        "stiefel_core.convert -> stiefel_book.models",
        "stiefel_book.tasks.grokking -> stiefel_book.experiments.grokking",  # a task never reads an experiment
        "stiefel_book.arms.relatives -> stiefel_book.tasks.cifar10",  # an arm never reads a task
        "stiefel_book.arms.variants -> stiefel_book.experiments.ablation",  # nor an experiment
        "stiefel_book.findings.routing -> stiefel_book.wording.routing",  # findings never word their numbers
        "stiefel_book.tasks.mqar -> stiefel_book.wording",
        "stiefel_book.engine.study -> stiefel_book.tasks.routing",  # the engine knows no task
    }
    package = tmp_path / "stiefel_core"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("from .. import a\n")
    found = import_edges(_modules(package))
    (package / "c.py").write_text("import numpy.linalg\nfrom stiefel_book.plots import x\n")
    assert foreign_imports(package / "c.py") == {"numpy", "stiefel_book"}
    assert found["stiefel_core.a"] == {"stiefel_core.sub", "stiefel_core.sub.b"}  # a package's __init__ runs first
    assert found["stiefel_core.sub.b"] == {"stiefel_core.a"}


def test_the_light_modules_name_the_experiments_arms():
    """The arm names a light module keeps (so that it loads no torch) are the experiment's own."""
    from stiefel_book.experiments import cifar10, grokking, peers, routing_judged
    from stiefel_book.findings import grokking as grokking_findings
    from stiefel_book.findings import peers as peers_findings
    from stiefel_book.findings import two_by_two
    from stiefel_book.plots.cifar10 import CHAPTER_ARMS

    assert CHAPTER_ARMS == cifar10.ARMS
    assert grokking_findings.ARMS == grokking.ARMS
    assert peers_findings.ARMS == peers.PEER_ARMS
    assert two_by_two.ARMS_2X2 == routing_judged.ARMS_2X2


@pytest.mark.parametrize("module", ["stiefel_book.findings", "stiefel_book.results_reading", "stiefel_book.choices"])
def test_reading_results_runs_no_git(module):
    """Importing a reader runs no subprocess (no ``git`` at import)."""
    import subprocess

    code = f"import subprocess\nsubprocess.run = subprocess.Popen = None\nimport {module}\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_readers_findings_and_wording_load_no_torch():
    import subprocess

    findings = " ".join(
        f"stiefel_book.{layer}.{p.stem}," for layer in ("findings", "wording") for p in (BOOK / layer).glob("[!_]*.py")
    )
    code = (
        f"import sys\nimport {findings} stiefel_book.results_reading, stiefel_book.choices\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
