"""The package's imports go one way (docs/architecture.md, "Modules"): checked, not stated.

Read from the source with :mod:`ast` (nothing imported): every ``hashcdc`` import, at the
top of a module or inside a function, is an arrow; importing ``a.b.c`` runs the package
``a.b`` first, so it is an arrow to that package too (but for the importer's own
packages, which are running already). Imports under ``TYPE_CHECKING`` run
for the type checker only and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hashcdc"
# What may justify an import inside a function: the comment on its line or the one above.
DEFERRED = "deferred:"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports(tree: ast.Module) -> list[tuple[ast.ImportFrom | ast.Import, bool]]:
    """(import, inside a function) of a module, those under TYPE_CHECKING left out."""
    found: list[tuple[ast.ImportFrom | ast.Import, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, in_function))
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, inner)

    visit(tree, False)
    return found


def targets(node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """The package's modules an import runs (the module, its packages, a named submodule)."""
    names = (
        [alias.name for alias in node.names]
        if isinstance(node, ast.Import)
        else [f"{node.module}.{alias.name}" for alias in node.names] + [node.module or ""]
    )
    found = set()
    for name in names:
        parts = name.split(".")
        for end in range(2, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in modules:
                found.add(prefix)
    return found


def _reason(lines: list[str], index: int) -> str:
    """The import's line and the line above the block of imports it is part of."""
    first = index
    while first > 0 and lines[first - 1].lstrip().startswith(("from ", "import ")):
        first -= 1
    return lines[index] + (lines[first - 1] if first > 0 else "")


def graph() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the modules it imports; and the function-level imports without a reason."""
    sources = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(sources)
    arrows: dict[str, set[str]] = {}
    unexplained = []
    for name, path in sources.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        arrows[name] = set()
        for node, in_function in imports(ast.parse(text)):
            # A module's own packages are being run already when it is: no arrow back up.
            reached = {r for r in targets(node, modules) if not f"{name}.".startswith(f"{r}.")}
            arrows[name] |= reached
            if in_function and reached and DEFERRED not in _reason(lines, node.lineno - 1):
                unexplained.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return arrows, unexplained


def cycles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(arrows.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(arrows):
        if node not in index:
            connect(node)
    return found


def test_the_package_has_no_import_cycle() -> None:
    arrows, _ = graph()
    assert cycles(arrows) == []


def wing(module: str) -> str:
    """The wing (subpackage) or top-level module of the package a module is part of."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_the_wings_import_one_way() -> None:
    """Between wings (pipeline, runtime, state, codegen, config, capture, …) too."""
    arrows, _ = graph()
    between: dict[str, set[str]] = {}
    for module, reached in arrows.items():
        between.setdefault(wing(module), set()).update(
            wing(target) for target in reached if wing(target) != wing(module)
        )
    assert cycles(between) == []


def test_an_import_inside_a_function_says_why() -> None:
    """An import inside a function hides an arrow: allowed where a comment says why
    (``# deferred: …`` on its line or above its block of imports: start-up cost, an
    optional dependency)."""
    _, unexplained = graph()
    assert unexplained == []


def test_the_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
