"""Everything the rules may know about one file, computed once.

The engine parses each file once with the stdlib ``ast`` and walks the tree once,
recording each node's parent and indexing nodes by type. Rules ask this object
instead of re-walking the tree; heavier shared analysis (the training-code
model) is computed lazily, the first time a rule asks for it, and then shared.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from torchlint.analysis.imports import ImportResolver
from torchlint.analysis.nodes import CHILD_FIELDS, child_fields, position
from torchlint.analysis.reachability import BLOCK_FIELDS, block_holding, live_length, process_exits

if TYPE_CHECKING:
    from torchlint.analysis.project import Project

N = TypeVar("N", bound=ast.AST)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)


def _drop_dead_after(exits: frozenset[ast.stmt], parents: dict, by_type: dict[type, list], dead_calls: list) -> None:
    """Move every node of the statements after each of ``exits`` in its block out of ``by_type``
    (its calls into ``dead_calls``). Rare: only a file with such a call followed by code pays for
    this second walk."""
    dead: set[ast.AST] = set()
    for stmt in exits:
        block = block_holding(parents.get(stmt), stmt) or []
        index = next(i for i, s in enumerate(block) if s is stmt) if block else 0
        for later in block[index + 1 :]:
            dead.update(ast.walk(later))
    if dead:
        dead_calls.extend(node for node in by_type.get(ast.Call, ()) if node in dead)
        dead_calls.sort(key=position)
        for cls, nodes in by_type.items():
            by_type[cls] = [node for node in nodes if node not in dead]


class FileContext:
    def __init__(self, path: str, source: str, tree: ast.Module, project: Project | None = None):
        self.path = path
        # The project the file belongs to, to look into the other files its imports name
        # (analysis.project); None for a string or standard input.
        self.project = project
        self.source = source
        self.tree = tree
        self._shared: dict = {}

    @cached_property
    def lines(self) -> list[str]:
        # Python ends lines only at \n, \r\n and \r; str.splitlines() would also split at
        # form feeds and other separators and make line numbers drift.
        return _LINE_BREAK.split(self.source)

    # The index is built on first use: the engine's rules need it at once, but a module the
    # project reads only to learn what it defines (analysis.project) never does.
    @cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        self._index(self.tree)
        return self.__dict__["parents"]

    @cached_property
    def _by_type(self) -> dict[type, list[ast.AST]]:
        self._index(self.tree)
        return self.__dict__["_by_type"]

    @cached_property
    def process_exits(self) -> frozenset[ast.stmt]:
        """The live statements that surely end the process (``reachability.process_exits``): like a
        ``raise``, each ends its block."""
        self._index(self.tree)
        return self.__dict__["process_exits"]

    @cached_property
    def dead_calls(self) -> list[ast.Call]:
        """The calls in statements that never run (after a jump or a process exit in their block),
        which ``nodes`` leaves out."""
        self._index(self.tree)
        return self.__dict__["dead_calls"]

    def _index(self, tree: ast.AST) -> None:
        # Iterative pre-order walk (no recursion: deeply nested expressions must not
        # hit the recursion limit here), children pushed reversed to keep source order.
        # Reads each class's child-bearing fields directly rather than through
        # ast.iter_child_nodes: same nodes in the same order, several times faster (this walk
        # is the engine's biggest cost after the parse). Expression contexts and operators
        # (Load, Store, Add, Eq, ...) are not indexed: CPython shares one instance of each
        # across the whole tree, so they have no parent of their own and nothing asks for them.
        # Statements after an unconditional jump (analysis.reachability) never run: they get
        # parents (a walk of a function body still meets them) but stay out of the type index, so
        # no rule sees their calls, assignments or definitions; their calls are kept apart
        # (``dead_calls``: a function called only there is not run by the file).
        parents: dict[ast.AST, ast.AST] = {}
        by_type: dict[type, list[ast.AST]] = defaultdict(list)
        dead_calls: list[ast.Call] = []
        self.__dict__["parents"], self.__dict__["_by_type"] = parents, by_type
        self.__dict__["dead_calls"] = dead_calls
        fields_of = CHILD_FIELDS
        stack = [(tree, True)]
        pop = stack.pop
        push = stack.append
        AST = ast.AST
        while stack:
            node, live = pop()
            cls = type(node)
            if live:
                by_type[cls].append(node)
            elif cls is ast.Call:
                dead_calls.append(node)
            fields = fields_of.get(cls)
            if fields is None:
                fields = child_fields(cls)
            for name in fields:  # already reversed
                value = getattr(node, name, None)
                if value is None:
                    continue
                if type(value) is list:
                    cut = live_length(value) if live and name in BLOCK_FIELDS else len(value)
                    for index in range(len(value) - 1, -1, -1):
                        item = value[index]
                        if isinstance(item, AST):
                            parents[item] = node
                            push((item, live and index < cut))
                elif isinstance(value, AST):
                    parents[value] = node
                    push((value, live))
        # A call that ends the process ends its block too, but whether ``exit()`` is one depends on
        # the file's imports and bindings, known only now: the statements after one leave the index.
        exits = self.__dict__["process_exits"] = process_exits(by_type, parents)
        if exits:
            _drop_dead_after(exits, parents, by_type, dead_calls)

    def release(self) -> None:
        """Drop the shared per-file facts once nothing will ask for them (the engine calls this when
        a file's lint is over). They refer back to this context, so until then the file's whole tree
        is cyclic garbage that only the cyclic collector frees: dropping them lets reference counting
        free it at once (this took ~40% of the lint time on real code). Asked again, a fact is rebuilt."""
        self._shared.clear()

    def shared(self, key, build):
        """A per-file fact, built by ``build()`` the first time any rule asks for ``key``
        and then shared by every rule (it lives as long as this context)."""
        try:
            return self._shared[key]
        except KeyError:
            found = self._shared[key] = build()
            return found

    # ----- node index -------------------------------------------------------------------
    def nodes(self, *types: type[N]) -> list[N]:
        """All nodes of the given types, in source (pre-)order for a single type."""
        if len(types) == 1:
            return self._by_type.get(types[0], [])  # type: ignore[return-value]
        # Merged lists are cached: shared models ask for the same pair (With/AsyncWith, ...)
        # many times per file, and the sort was a measurable part of the lint time.
        cache = self.__dict__.setdefault("_merged_nodes", {})
        found = cache.get(types)
        if found is None:
            found = []
            for t in types:
                found.extend(self._by_type.get(t, []))
            found.sort(key=position)
            cache[types] = found
        return found  # type: ignore[return-value]

    @property
    def calls(self) -> list[ast.Call]:
        return self.nodes(ast.Call)

    # ----- tree navigation ---------------------------------------------------------------
    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(node)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        node = self.parents.get(node)
        while node is not None:
            yield node
            node = self.parents.get(node)

    def enclosing(self, node: ast.AST, types) -> ast.AST | None:
        # The walk of `ancestors` written out: this is asked hundreds of times per function.
        parents = self.parents
        node = parents.get(node)
        while node is not None:
            if isinstance(node, types):
                return node
            node = parents.get(node)
        return None

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return self.enclosing(node, FUNCTION_TYPES)  # type: ignore[return-value]

    def enclosing_scope(self, node: ast.AST) -> ast.AST:
        return self.enclosing(node, SCOPE_TYPES) or self.tree

    def enclosing_loops(self, node: ast.AST) -> list[ast.AST]:
        """Loops around ``node`` inside its own function (innermost first)."""
        loops = []
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, SCOPE_TYPES):
                break
            if isinstance(ancestor, LOOP_TYPES):
                loops.append(ancestor)
        return loops

    def is_inside(self, node: ast.AST, container: ast.AST) -> bool:
        return any(a is container for a in self.ancestors(node))

    def declares_global(self, node: ast.AST, name: str) -> bool:
        """Whether a ``global name`` statement lies anywhere inside ``node`` (nested defs included),
        from a per-file index: ``global`` is rare, and walking a function per question was not cheap."""
        return name in self._globals_inside.get(node, ())

    @cached_property
    def _globals_inside(self) -> dict[ast.AST, set[str]]:
        """Node -> the names of the ``global`` statements inside it."""
        inside: dict[ast.AST, set[str]] = {}
        for statement in self.nodes(ast.Global):
            for ancestor in self.ancestors(statement):
                inside.setdefault(ancestor, set()).update(statement.names)
        return inside

    # ----- names --------------------------------------------------------------------------
    @cached_property
    def imports(self) -> ImportResolver:
        nodes = self.nodes(ast.Import, ast.ImportFrom)
        stars = self.project is not None and any(
            isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in nodes
        )
        return ImportResolver(nodes, self.project.star_imported_names(self) if stars else None)

    def qualname(self, expr: ast.AST) -> str | None:
        return self.imports.qualname(expr)

    def call_qualname(self, call: ast.Call) -> str | None:
        return self.imports.qualname(call.func)

    @cached_property
    def classes(self) -> dict[str, ast.ClassDef]:
        return {node.name: node for node in self.nodes(ast.ClassDef)}

    @cached_property
    def functions(self) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
        """Every function or method defined in the file, by bare name."""
        found: dict[str, list] = defaultdict(list)
        for node in self.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
            found[node.name].append(node)
        return found

    # ----- source positions ---------------------------------------------------------------
    def column(self, lineno: int, byte_offset: int) -> int:
        """Convert ast's UTF-8 byte offset into a 1-based character column."""
        if 1 <= lineno <= len(self.lines):
            line = self.lines[lineno - 1]
            if not line.isascii():
                return len(line.encode("utf-8")[:byte_offset].decode("utf-8", "replace")) + 1
        return byte_offset + 1

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = col
        return line, self.column(line, col), end_line, self.column(end_line, end_col)

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ""

    def quote(self, node: ast.AST, limit: int | None = None) -> str:
        """``node``'s source on one line, for a message: a call written over several lines has its
        line breaks and alignment folded into single spaces; cut to ``limit`` characters (ending in
        ``...``) when given."""
        text = " ".join(self.segment(node).split())
        text = text.replace("( ", "(").replace("[ ", "[").replace(" )", ")").replace(" ]", "]")
        return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."
