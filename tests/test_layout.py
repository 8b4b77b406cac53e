"""The architecture holds in the import graph: layers, no circles, no private names shared.

``ozaki.core`` (the phases) imports neither the backends nor the front nor numba;
nothing imports in a circle; no module imports another module's underscore names;
``fft``, ``tme_model`` and ``validation`` use ozaki's public API only.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ozaki", "fft", "tme_model", "validation", "benchmarks")
#: ozaki's public modules for other packages: the package, its distributed and linalg parts
PUBLIC = ("ozaki", "ozaki.distributed", "ozaki.linalg")


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph():
    modules = {_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
               if "__pycache__" not in p.parts}
    edges, private, external = defaultdict(set), [], defaultdict(set)
    for mod, path in modules.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                external[mod].add(target.split(".")[0])
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    dest = full if full in modules else target
                    if dest in modules and dest != mod:
                        edges[mod].add(dest)
                        if alias.name.startswith("_") and not alias.name.startswith("__") \
                                and full not in modules:
                            private.append(f"{mod} imports {target}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    external[mod].add(alias.name.split(".")[0])
                    if alias.name in modules:
                        edges[mod].add(alias.name)
    return modules, edges, private, external


MODULES, EDGES, PRIVATE, EXTERNAL = _graph()


def test_the_graph_was_read():
    assert "ozaki.core.pipeline" in MODULES and "ozaki.core.decisions" in EDGES["ozaki.core.pipeline"]


def test_no_import_circle():
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in EDGES[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))
    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_module_imports_another_modules_private_names():
    assert not PRIVATE, PRIVATE


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if m.startswith("ozaki.core")))
def test_the_phases_import_no_backend_front_or_compiler(mod):
    bad = [t for t in EDGES[mod] if t.startswith(("ozaki.backends", "ozaki.api"))]
    bad += sorted(EXTERNAL[mod] & {"numba", "llvmlite"})
    assert not bad, f"{mod}: {bad}"


def test_the_reference_backend_imports_no_compiler():
    mods = [m for m in MODULES if m.startswith("ozaki.backends.numpy")]
    assert mods, "the numpy backend is missing"
    for mod in mods:
        bad = [t for t in EDGES[mod] if t.startswith("ozaki.backends.cpu")]
        bad += sorted(EXTERNAL[mod] & {"numba", "llvmlite"})
        assert not bad, f"{mod}: {bad}"


@pytest.mark.parametrize("pkg", ["fft", "tme_model", "validation"])
def test_other_packages_use_the_public_api(pkg):
    def public(t):
        return t in PUBLIC or t.startswith(tuple(p + "." for p in PUBLIC[1:]))
    bad = sorted(f"{m} -> {t}" for m in MODULES if m.split(".")[0] == pkg for t in EDGES[m]
                 if t.split(".")[0] == "ozaki" and not public(t))
    assert not bad, bad
