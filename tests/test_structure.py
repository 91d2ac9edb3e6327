"""The package's shape, checked from its source (nothing is imported): data flows one way
through the stages (docs/architecture.md), the CPU target's packages have no import cycle,
and no module of them takes another module's private (`_name`) names.

Imports are read with `ast`, at module level and inside functions alike (a lazy import is
still a dependency); imports under `if TYPE_CHECKING:` are left out (they exist for type
annotations only and never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ptxport"

# The stages, left to right: a module may import from its own stage and those to its left.
STAGES = ("frontends", "ptx", "ir", "passes", "codegen", "runtime")
# Below every stage (imported by all), and above every stage (may import everything).
BASE = {"ptxport.errors", "ptxport.cache", "ptxport.version"}
# Triton's and numba's front ends are adapters over the whole system, as compat is: their
# languages compile to PTX (the front end) and their launch APIs are driven by the runtime.
TOP = ("ptxport.compat", "ptxport.cli", "ptxport.inspection", "ptxport.__init__",
       "ptxport.frontends.triton", "ptxport.frontends.numba", "ptxport.frontends.arrays",
       "ptxport.frontends.numba_link", "ptxport.frontends.numba_calls",
       "ptxport.frontends.numba_random")
CPU_PACKAGES = ("ptxport.codegen.targets.cpu", "ptxport.runtime.backends.cpu",
                "ptxport.passes")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool):
    """(imported module, names taken from it, line) for every import that runs."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                package = package if is_package else package[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            yield base, [a.name for a in node.names], node.lineno
        stack.extend(ast.iter_child_nodes(node))


def _graph() -> dict[str, list[tuple[str, list[str], int]]]:
    """module -> the ptxport modules it imports (a `from package import submodule` counts
    as importing the submodule)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path).removesuffix(".__init__")
        modules[name] = path
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges = []
        for target, names, line in _imports(tree, name, path.name == "__init__.py"):
            if not target.startswith("ptxport"):
                continue
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
            for imported in submodules or [target]:
                taken = [] if submodules else names
                if imported in modules or imported == "ptxport":
                    edges.append((imported, taken, line))
        graph[name] = edges
    return graph


GRAPH = _graph()


def _stage(module: str) -> int | None:
    parts = module.split(".")
    if module in BASE or module == "ptxport" or len(parts) < 2:
        return None
    return STAGES.index(parts[1]) if parts[1] in STAGES else None


def _is_top(module: str) -> bool:
    return module == "ptxport" or any(module == t or module.startswith(t + ".") for t in TOP)


def test_stages_import_only_leftwards():
    wrong = []
    for module, edges in sorted(GRAPH.items()):
        if _is_top(module) or module in BASE:
            continue
        here = _stage(module)
        for imported, _, line in edges:
            there = _stage(imported)
            if _is_top(imported) or (here is not None and there is not None and there > here):
                wrong.append(f"{module}:{line} imports {imported}")
    assert not wrong, "imports against the flow ptx -> ir -> passes -> codegen -> runtime:\n" \
        + "\n".join(wrong)


def _cycles(nodes: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _, _ in GRAPH.get(v, []):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("package", CPU_PACKAGES)
def test_no_import_cycle(package):
    nodes = {m for m in GRAPH if m == package or m.startswith(package + ".")}
    assert nodes, f"no modules found under {package}"
    cycles = _cycles(nodes)
    assert not cycles, f"import cycles in {package}: {cycles}"


def test_no_import_cycle_across_the_cpu_packages():
    nodes = {m for m in GRAPH if any(m == p or m.startswith(p + ".") for p in CPU_PACKAGES)}
    assert not _cycles(nodes)


def _private_reach_ins(module: str, path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, aliases = [], {}
    for imported, names, line in _imports(tree, module, path.name == "__init__.py"):
        if not imported.startswith("ptxport") or imported == module:
            continue
        found += [f"{module}:{line} takes {imported}.{n}" for n in names
                  if n.startswith("_") and not n.startswith("__")]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ptxport"):
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ptxport"):
                    aliases[(a.asname or a.name).split(".")[0]] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            found.append(f"{module}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_private_names_taken_across_the_cpu_modules():
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path).removesuffix(".__init__")
        if any(module == p or module.startswith(p + ".") for p in CPU_PACKAGES):
            found += _private_reach_ins(module, path)
    assert not found, "\n".join(found)


def test_the_checks_see_imports():
    # (so that the tests above cannot pass by reading nothing)
    edges = {imported for imported, _, _ in GRAPH["ptxport.runtime.backends.cpu.kernels"]}
    assert "ptxport.codegen.compile" in edges
    assert _cycles({"a", "b"}) == []
