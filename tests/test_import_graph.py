"""The package's import layers (docs/DEVELOPING.md): the command line (budgetsvm.cli) sits on
top of the library, and no module imports itself through a cycle. Built from the source (every
import statement, including the ones inside functions, which still tie the modules together)."""
import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "budgetsvm"


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# Cython's statements (.pyx/.pxd are not Python syntax): `from a.b cimport/import x, y` (the
# names on that line, or in parentheses over several lines) and `cimport/import a.b`, at any
# indentation.
CYTHON_FROM = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+c?import[ \t]+(\([\w\s,]+\)|[\w \t,]+)",
                         re.M)
CYTHON_IMPORT = re.compile(r"^\s*c?import\s+([\w.]+)", re.M)


def imported_names(path):
    """(module, name) of `from module import name` and (module, None) of `import module`."""
    source = path.read_text()
    if path.suffix != ".py":
        return [(m, n.split()[0]) for m, ns in CYTHON_FROM.findall(source)
                for n in ns.strip("()").split(",") if n.strip()] + \
            [(m, None) for m in CYTHON_IMPORT.findall(source)]
    names = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            names += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [(node.module, alias.name) for alias in node.names]
    return names


def imported_modules(path, modules):
    """The budgetsvm modules that the file imports: `from budgetsvm.x import y` imports module
    budgetsvm.x.y when that is a module, else budgetsvm.x (and budgetsvm.x's parents' __init__,
    which the package itself does not use for anything that matters here)."""
    found = set()
    for module, name in imported_names(path):
        target = f"{module}.{name}" if name and f"{module}.{name}" in modules else module
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != "budgetsvm":
            found.add(target)
    return found - {module_name(path)}


def import_graph():
    files = [p for ext in ("*.py", "*.pyx", "*.pxd") for p in PACKAGE.rglob(ext)]
    modules = {module_name(p) for p in files}
    return {module_name(p): imported_modules(p, modules) for p in files}


GRAPH = import_graph()


def cycles(graph):
    """Every strongly connected component with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_package():
    # not vacuous: known edges are found, including imports inside functions
    assert "budgetsvm.train" in GRAPH["budgetsvm.cli.train"]
    assert "budgetsvm.train" in GRAPH["budgetsvm.grid.runners"]  # imported inside functions
    assert "budgetsvm._random" in GRAPH["budgetsvm._bsgd"]       # a Cython cimport
    assert len(GRAPH) > 30


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(GRAPH) == []


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if not m.startswith("budgetsvm.cli")))
def test_library_modules_do_not_import_the_command_line(module):
    assert not {m for m in GRAPH[module] if m.startswith("budgetsvm.cli")}
