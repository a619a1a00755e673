"""How rules offer fixes: one ``RuleFix`` per fixed rule (or group of rules sharing a fix), kept
apart from the rule's detection in ``torchlint/rules/fixes/``, and a registry the engine asks.

A ``RuleFix`` looks at one diagnostic -- its node and the ``evidence`` the rule attached when it
reported (the loop, the backward, the optimizer...) -- and answers with a :class:`Fix` whose
``build`` makes the edits with the libcst toolkit, or None when this case has no fix it can trust.
Deciding is cheap (the ``ast`` only), so a plain lint can mark fixable findings without importing
libcst. Each ``RuleFix`` documents what it does and why it is safe or unsafe (shown in the rule's
docs), and carries examples with their expected fixed source, which one test runs.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from torchlint.engine.finding import APPLICABILITIES, Fix

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.engine.rule import Diagnostic


class RuleFix:
    codes: ClassVar[tuple[str, ...]]  # the rules it fixes
    # The applicabilities it may give (a fix may be safe in one shape and unsafe in another).
    applicabilities: ClassVar[tuple[str, ...]]
    summary: ClassVar[str]  # what the fix does
    safety: ClassVar[str]  # why it is safe, and when it is not
    # Why the fix is not offered in notebooks, for a fix that makes no sense there; "" when it is.
    not_in_notebooks: ClassVar[str] = ""
    # (source with `# expect: CODE` markers, the source after `--fix --unsafe-fixes`)
    EXAMPLES: ClassVar[Sequence[tuple[str, str]]] = ()

    def plan(self, ctx: FileContext, diagnostic: Diagnostic) -> Fix | None:
        raise NotImplementedError

    @classmethod
    def docs(cls) -> str:
        """What the fix does, and (after "Safe:", "Unsafe:" or "Safe or unsafe:") why."""
        kinds = " or ".join(cls.applicabilities).capitalize()
        docs = f"{' '.join(cls.summary.split())}\n\n{kinds}: {' '.join(cls.safety.split())}"
        if cls.not_in_notebooks:
            docs += f"\n\nNot offered in notebooks: {' '.join(cls.not_in_notebooks.split())}"
        return docs


_FIXES: dict[str, RuleFix] = {}


def register_fix(cls: type[RuleFix]) -> type[RuleFix]:
    """Class decorator: validate a fix's metadata and make it the fix of its rules."""
    for attr in ("codes", "applicabilities", "summary", "safety"):
        if not getattr(cls, attr, None):
            raise TypeError(f"fix {cls.__name__} lacks {attr!r}")
    if not set(cls.applicabilities) <= set(APPLICABILITIES):
        raise TypeError(f"fix {cls.__name__}: applicabilities must be among {APPLICABILITIES}")
    instance = cls()
    for code in cls.codes:
        if code in _FIXES and type(_FIXES[code]) is not cls:
            raise TypeError(f"rule {code} has two fixes")
        _FIXES[code] = instance
    return cls


def fix_for(code: str) -> RuleFix | None:
    """The fix of one rule, if it has one (rules and their fixes register together on import)."""
    return _FIXES.get(code)


def all_fixes() -> dict[str, RuleFix]:
    from torchlint import rules  # noqa: F401  (importing the rule package imports every rule and its fix)

    return dict(sorted(_FIXES.items()))


# ----- where code can go: questions every fix asks of the ast ---------------------------------------

_BODIES = ("body", "orelse", "finalbody")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def statement_of(ctx: FileContext, node: ast.AST) -> ast.stmt | None:
    """The statement holding ``node`` (``node`` itself when it is one)."""
    if isinstance(node, ast.stmt):
        return node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.stmt):
            return ancestor
    return None


def block_of(ctx: FileContext, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list that holds ``stmt`` (a body, an else, a handler's body...)."""
    parent = ctx.parent(stmt) or ctx.tree
    for name in (*_BODIES, "handlers", "cases"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(item is stmt for item in block):
            return block
    return None


def in_block(ctx: FileContext, node: ast.AST, block: list[ast.stmt]) -> ast.stmt | None:
    """The statement of ``block`` that is or holds ``node``."""
    members = {id(stmt) for stmt in block}
    current = node
    while current is not None:
        if id(current) in members:
            return current
        current = ctx.parent(current)
    return None


def index_in(block: list[ast.stmt], stmt: ast.stmt) -> int:
    return next(i for i, item in enumerate(block) if item is stmt)


def is_plain_call_statement(stmt: ast.AST | None, call: ast.AST) -> bool:
    """``stmt`` is the expression statement ``call`` and nothing else."""
    return isinstance(stmt, ast.Expr) and stmt.value is call


def jumps(stmts: list[ast.stmt]) -> bool:
    """Whether running ``stmts`` may leave the enclosing block early: a ``return``/``raise``
    anywhere, or a ``break``/``continue`` not owned by a loop inside them."""
    stack = [(stmt, False) for stmt in stmts]
    while stack:
        node, in_loop = stack.pop()
        if isinstance(node, (ast.Return, ast.Raise)) or (isinstance(node, (ast.Break, ast.Continue)) and not in_loop):
            return True
        if isinstance(node, _SCOPES):
            continue
        inner = in_loop or isinstance(node, _LOOPS)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node) if isinstance(child, ast.AST))
    return False


def names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def names_bound(nodes) -> set[str]:
    """Names the statements bind in their own scope (assignments, loop targets, imports, defs...)."""
    found: set[str] = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            stack.extend(node.decorator_list)
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".", 1)[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # their names are their own (a walrus in one is rare enough)
        stack.extend(ast.iter_child_nodes(node))
    return found


def root_name(dotted: str | None) -> str | None:
    """``self.model.fc`` -> ``self``; ``opts[0]`` -> ``opts``."""
    if not dotted:
        return None
    head = dotted.split(".", 1)[0].split("[", 1)[0]
    return head if head.isidentifier() else None


def visible_at_start(ctx: FileContext, name: str, scope_node: ast.AST) -> bool:
    """Whether ``name`` already holds its value when the body of ``scope_node`` (a function, or
    a loop or block inside one) starts: a parameter of the function, or a module-level name, and
    not assigned inside the function (or inside the loop)."""
    func = scope_node if isinstance(scope_node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    func = func or ctx.enclosing_function(scope_node)
    if func is not None:
        args = func.args
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        if name in params:
            return name not in names_bound(scope_node.body if func is scope_node else [scope_node])
        if func is scope_node:
            return name not in names_bound(func.body) and name in _module_names(ctx)
        bound_before = names_bound(stmt for stmt in func.body if stmt.lineno < scope_node.lineno)
        return name not in names_bound([scope_node]) and (name in bound_before or name in _module_names(ctx))
    return name not in names_bound([scope_node]) and name in _module_names(ctx, before=scope_node.lineno)


def _module_names(ctx: FileContext, before: int | None = None) -> set[str]:
    """Names bound at module level (before line ``before``), declared ``global`` in a function, or builtins."""
    stmts = [s for s in ctx.tree.body if before is None or s.lineno < before]
    declared = {name for node in ctx.nodes(ast.Global) for name in node.names}
    return names_bound(stmts) | declared | set(dir(builtins))
