"""The tree shows the architecture: dependencies point one way, and nothing imports in a cycle.

core <- selectors <- index <- baselines <- bench, with the hub and Spark on top of index
and the command line on top of everything (docs/layout.md). Read from the source, so a
lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "skipfilter"

#: Layer of each part: a module may import only parts of its own layer or below.
LAYERS: dict[str, float] = {
    "errors": 0,
    "core": 0,
    "matcher": 0,
    "extras": 0,
    "selectors": 1,
    "index": 2,
    "": 2,  # the package itself: the public API re-exports selectors and index
    "baselines": 3,
    "bench": 4,
    "tokens": 2.5,  # Mercure tokens minted (PyJWT): below the hub and the client, who share it
    "hub": 3,  # applications of the index, apart from the comparison harness
    "spark": 3,
    "client": 3,  # talks to a hub over HTTP: never imports it (httpx and PyJWT only)
    "cli": 5,
}
#: Parts that must not import each other although their layers would allow it.
APART = {
    frozenset({"hub", "spark"}),
    frozenset({"hub", "baselines"}),
    frozenset({"spark", "baselines"}),
    frozenset({"client", "hub"}),
    frozenset({"client", "spark"}),
    frozenset({"client", "baselines"}),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def part(module: str) -> str:
    """The top-level part a module belongs to ("" for the package itself)."""
    return module.split(".")[1] if "." in module else ""


def resolve(name: str) -> str:
    """The module an imported name lives in: the name itself, or its parent."""
    return name if name in MODULES else name.rsplit(".", 1)[0]


def imports(module: str, typing: bool = False) -> Iterator[str]:
    """The skipfilter modules ``module`` imports, at import time or inside functions; with
    ``typing``, also those under ``if TYPE_CHECKING`` (which never runs, but still ties the
    modules' meaning together)."""

    def walk(node: ast.AST) -> Iterator[str]:
        if not typing and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (name for child in node.orelse for name in walk(child))
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "skipfilter":
                    yield resolve(alias.name)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "skipfilter"
        ):
            for alias in node.names:
                yield resolve(f"{node.module}.{alias.name}")
        for child in ast.iter_child_nodes(node):
            yield from walk(child)

    yield from walk(ast.parse(MODULES[module].read_text(encoding="utf-8")))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_dependencies_point_one_way(module: str) -> None:
    mine = part(module)
    assert mine in LAYERS, f"{module}: add its part to LAYERS"
    for target in imports(module):
        theirs = part(target)
        if theirs == mine:
            continue
        assert LAYERS[theirs] <= LAYERS[mine], f"{module} imports {target}, a later layer"
        assert frozenset({mine, theirs}) not in APART, f"{module} imports {target}"


def test_no_import_cycles() -> None:
    """Among every module of the package, the hub and Spark included, counting the imports
    made for type checking only: a type-level cycle is a tangle too."""
    graph = {m: set(imports(m, typing=True)) - {m} for m in MODULES}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


#: The hub's layers, bottom to top: one folder each (the ground files lie in the package
#: itself). A hub module imports only hub modules of its own layer or one below it.
HUB_LAYERS = ("", "auth", "transports", "core", "frontends", "http", "server")
#: The modules that write an open stream to its socket: neither reaches a front end, so a
#: second protocol version is one more front end, never a fork of the writers.
STREAM_WRITERS = ("skipfilter.hub.http.asgi_stream", "skipfilter.hub.server.fast_paths")


def hub_layer(module: str) -> int:
    """The layer of a hub module: its folder's place in HUB_LAYERS (ground files are 0)."""
    parts = MODULES[module].relative_to(PACKAGE / "hub").parts
    folder = parts[0] if len(parts) > 1 else ""
    assert folder in HUB_LAYERS, f"{module}: its folder {folder!r} is not a layer in HUB_LAYERS"
    return HUB_LAYERS.index(folder)


HUB_MODULES = sorted(m for m in MODULES if m.startswith("skipfilter.hub."))


def test_every_hub_module_lies_in_a_layer_folder() -> None:
    """Nothing but the ground files and the package's public API lies on the hub's floor."""
    ground = {m for m in HUB_MODULES if hub_layer(m) == 0}
    assert ground <= {
        "skipfilter.hub.ids",
        "skipfilter.hub.keys",
        "skipfilter.hub.origins",
        "skipfilter.hub.paths",
        "skipfilter.hub.refusal",
        "skipfilter.hub.settings",
        "skipfilter.hub.sse",
        "skipfilter.hub.update",
    }, "a new module belongs in the folder of its layer (docs/layout.md)"


@pytest.mark.parametrize("module", HUB_MODULES)
def test_hub_imports_point_down_its_folders(module: str) -> None:
    """Type-only imports count: a core that names a front end's type is tied to it."""
    mine = hub_layer(module)
    for target in imports(module, typing=True):
        if target.startswith("skipfilter.hub.") and target != "skipfilter.hub":
            theirs = hub_layer(target)
            assert theirs <= mine, (
                f"{module} ({HUB_LAYERS[mine] or 'ground'}) imports {target} "
                f"({HUB_LAYERS[theirs] or 'ground'}), a layer above it"
            )


@pytest.mark.parametrize("module", STREAM_WRITERS)
def test_stream_writers_know_no_protocol_version(module: str) -> None:
    found = sorted(m for m in reach(module) if m.startswith("skipfilter.hub.frontends"))
    assert found == [], f"{module} reaches {found}"


def reach(module: str) -> set[str]:
    """Every module ``module`` imports, directly or not, type-only imports included."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in imports(todo.pop(), typing=True):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
