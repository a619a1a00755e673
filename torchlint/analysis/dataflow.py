"""Where values come from: the one answer to "which assignments reach this use", for every rule and model.

Rules often need to know what produced the value a name holds at some point:
``pred = pred.t()`` ... ``correct[:k].view(-1)``, ``probs = F.softmax(out)`` ...
``criterion(probs, y)``, ``criterion = nn.CrossEntropyLoss()`` ... ``criterion(x, y)``.
This module answers that question once per file, for any rule (get the shared
instance with ``dataflow(ctx)``; it is cached per ``FileContext``).

The model
---------
* Every scope (module, function, lambda, class body) has *bindings*: one
  :class:`Binding` per place a name is assigned — ``x = v``, ``x: T = v``,
  ``x += v``, ``for x in it``, ``with m as x``, ``(x := v)``, function
  parameters, ``import``/``def``/``class`` names, ``except E as x``. Tuple
  unpacking binds each target to the matching element of a literal tuple on the
  right, otherwise to an unknown value (``value is None``), remembering the
  whole right-hand side in ``source`` and the position in ``index``. Targets
  that are attribute chains or subscripts (``self.loss = ...``,
  ``state["opt"] = ...``) are bindings too, named by their text (``symbol``).
* :meth:`Dataflow.reaching` gives the bindings of a name that may reach a point,
  latest first: walking back in statement order from the point, it collects
  bindings until one that surely executes before the point (one that is not
  inside an ``if``/loop/``try``/``match`` branch that the point is not also in).
  So ``if c: x = a`` / ``else: x = b`` yields both ``b`` and ``a`` (and what came
  before), while ``x = a`` followed by ``x = b`` yields only ``b``. A binding
  whose statement contains the point does not reach it (``x = f(x)``: the ``x``
  inside is the previous value). Names not bound in their function resolve to the
  enclosing functions, then to the module (every binding there, latest first).
* :meth:`Dataflow.visible_bindings` is the flow-insensitive view: every binding
  of a name in the innermost scope around a point that binds it (a flag set at
  the end of one loop iteration and read at the start of the next);
  :meth:`Dataflow.sole_value` the value of a name assigned once in its scope.
* :meth:`Dataflow.attribute_bindings` gives ``self.attr = ...`` assignments of
  a class, across its methods (how a module's layers are found from ``self.fc``).
* :meth:`Dataflow.origins` chains the two: the expressions that may have
  produced a value, following names, ``self`` attributes and conditional
  expressions, and looking through whatever the caller's ``through`` callback
  says (e.g. ``.to(device)``, ``.view(...)``). Unknown origins are ``None``, so a
  rule can choose "any origin is X" (recall) or "every origin is X" (precision).

Deliberate limits (cheap and predictable beats clever): no values flowing around
a loop's back edge (a binding later in a loop body does not reach an earlier use),
no kill of a name by assignments in *both* branches of an ``if`` (the earlier
binding is still reported), no aliasing through containers or attributes other
than ``self.attr``, no inter-procedural flow except through ``self`` attributes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import (
    FunctionNode,
    call_graph,
    find_method,
    parameter_arguments,
    resolve_class,
    resolve_function_name,
    resolve_local_call,
)
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument, end_position, position, returns_of

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Statements whose parts run conditionally or repeatedly: a binding inside one of
# their blocks does not surely execute before code outside that block.
BRANCHING = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.match_case, ast.ExceptHandler)
if hasattr(ast, "TryStar"):  # Python 3.11+
    BRANCHING = BRANCHING + (ast.TryStar,)


# The node types _visit binds names for (exact types).
_BINDING_TYPES = frozenset(
    {
        ast.Assign,
        ast.AnnAssign,
        ast.AugAssign,
        ast.For,
        ast.AsyncFor,
        ast.With,
        ast.AsyncWith,
        ast.NamedExpr,
        ast.Import,
        ast.ImportFrom,
        ast.ExceptHandler,
        ast.Global,
        ast.Nonlocal,
    }
)


# Statements that bind their targets before their body runs (`for x in ...:`, `with m as x:`).
_HEADER_BINDERS = (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)


# Calls that read a scope's names by their text, so no binding in that scope is shown unread.
_NAME_LOOKUPS = frozenset({"locals", "vars", "eval", "exec"})

_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Binding:
    """One place where a name receives a value."""

    name: str
    kind: str  # assign | augassign | for | with | walrus | param | import | def | except | unpack | other
    stmt: ast.AST  # the statement (or parameter, comprehension, walrus) that binds
    value: ast.AST | None  # the expression whose value the name gets, when it can be told
    source: ast.AST | None = None  # augassign: the right operand; for: the iterable; unpack: the whole right side
    index: int | None = None  # unpack / for-unpack: position of the name in the target tuple
    position: tuple[int, int] = (0, 0)  # where the binding takes effect (line, column)


class ScopeFlow:
    """The bindings of one scope, by name, in source order (nested scopes excluded)."""

    def __init__(self, scope: ast.AST, nodes: list[ast.AST]):
        """``nodes``: the statements and expressions of ``scope`` that bind names (``Dataflow``
        finds them in the file's index, not by walking the scope)."""
        self.scope = scope
        self.bindings: dict[str, list[Binding]] = {}
        self.declared_outer: set[str] = set()  # global / nonlocal names
        self._collect(scope, nodes)
        for found in self.bindings.values():
            found.sort(key=lambda b: b.position)

    # ----- collection -----------------------------------------------------------------
    def _add(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)

    def _bind_target(self, target, kind, stmt, value, source, where, index=None) -> None:
        if isinstance(target, ast.Name):
            self._add(Binding(target.id, kind, stmt, value, source, index, where))
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            key = symbol(target)
            if key is not None:
                self._add(Binding(key, kind, stmt, value, source, index, where))
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, "unpack", stmt, None, source, where, index)
        elif isinstance(target, (ast.Tuple, ast.List)):
            literal = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            for i, element in enumerate(target.elts):
                if literal is not None and not starred and len(literal) == len(target.elts):
                    self._bind_target(element, kind, stmt, literal[i], source, where)
                else:
                    self._bind_target(
                        element,
                        "unpack" if kind != "for" else "for",
                        stmt,
                        None,
                        source if kind == "for" else value,
                        where,
                        i,
                    )

    def _collect(self, scope: ast.AST, nodes: list[ast.AST]) -> None:
        if isinstance(scope, FUNCTIONS):
            args = scope.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    self._add(Binding(arg.arg, "param", arg, None, position=(0, 0)))
        for node in nodes:
            if type(node) in _DEFINITIONS:
                self._visit_def(node)
            else:
                self._visit(node)

    def _visit_def(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._add(Binding(node.name, "def", node, node, position=position(node)))

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, "assign", node, node.value, None, end_position(node))
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._bind_target(node.target, "assign", node, node.value, None, end_position(node))
        elif isinstance(node, ast.AugAssign):
            key = node.target.id if isinstance(node.target, ast.Name) else symbol(node.target)
            if key is not None:
                self._add(Binding(key, "augassign", node, node, node.value, None, end_position(node)))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            value = None
            self._bind_target(node.target, "for", node, value, node.iter, end_position(node.target))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind_target(
                        item.optional_vars, "with", node, item.context_expr, None, end_position(item.optional_vars)
                    )
        elif isinstance(node, ast.NamedExpr):
            self._add(Binding(node.target.id, "walrus", node, node.value, None, None, end_position(node)))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = alias.asname or alias.name.split(".", 1)[0]
                if name != "*":
                    self._add(Binding(name, "import", node, None, position=end_position(node)))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._add(Binding(node.name, "except", node, None, position=position(node.body[0])))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            self.declared_outer.update(node.names)


class Dataflow:
    """Reaching bindings for any name in a file; build with :func:`dataflow`."""

    MAX_DEPTH = 12

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self._flows: dict[ast.AST, ScopeFlow] = {}

    # ----- scopes ---------------------------------------------------------------------
    def scope_of(self, node: ast.AST) -> ast.AST:
        """The innermost function, lambda, class or module whose code contains ``node``."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, SCOPES):
                return ancestor
        return self.ctx.tree

    def flow(self, scope: ast.AST) -> ScopeFlow:
        found = self._flows.get(scope)
        if found is None:
            found = self._flows[scope] = ScopeFlow(scope, self._binding_nodes.get(scope, []))
        return found

    @cached_property
    def _binding_nodes(self) -> dict[ast.AST, list[ast.AST]]:
        """Scope -> the nodes in it that bind names (assignments, loop and with targets, walrus,
        imports, handlers, global/nonlocal, defs), from the file's node index in one pass."""
        table: dict[ast.AST, list[ast.AST]] = {}
        for node in self.ctx.nodes(*_BINDING_TYPES, *_DEFINITIONS):
            table.setdefault(self._binding_scope(node), []).append(node)
        return table

    def _binding_scope(self, node: ast.AST) -> ast.AST:
        """The scope a binding node binds in: the innermost function, lambda, class or module whose
        body holds it (a def's decorators, defaults and bases run in the scope around it; a walrus
        in a comprehension binds in the comprehension's scope)."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            kind = type(ancestor)
            if kind is ast.Module:
                return ancestor
            if kind is ast.Lambda:
                if child is ancestor.body:
                    return ancestor
            elif kind is ast.ClassDef:
                if (
                    child not in ancestor.bases
                    and child not in ancestor.keywords
                    and child not in ancestor.decorator_list
                ):
                    return ancestor
            elif kind in _FUNCTION_DEFS:
                if (
                    child is not ancestor.args
                    and child is not ancestor.returns
                    and child not in ancestor.decorator_list
                ):
                    return ancestor
            child = ancestor
        return self.ctx.tree

    # ----- reaching bindings ----------------------------------------------------------
    def reaching(self, name: str | ast.Name, at: ast.AST | None = None) -> list[Binding]:
        """Bindings of ``name`` that may give it its value at ``at``, latest first.

        ``name`` may be a ``Name`` node (then ``at`` defaults to it). Empty when the
        name is bound nowhere in the file (a builtin, a star import)."""
        if isinstance(name, ast.Name):
            at = at or name
            name = name.id
        assert at is not None
        comprehension = self._comprehension_binding(name, at)
        if comprehension is not None:
            return [comprehension]
        scope = self.scope_of(at)
        first = True
        while True:
            flow = self.flow(scope)
            if name in flow.bindings and name not in flow.declared_outer:
                found = flow.bindings[name]
                if first and not isinstance(scope, ast.ClassDef):
                    return self._reaching_in(found, at, scope)
                return list(reversed(found))
            if isinstance(scope, ast.Module):
                return []
            first = False
            scope = self.scope_of(scope)
            while isinstance(scope, ast.ClassDef):  # class bodies do not enclose their methods
                scope = self.scope_of(scope)
            if name in flow.declared_outer:
                scope = self.ctx.tree

    def names_import(self, name: ast.Name) -> bool:
        """Whether ``name`` holds what an import bound: every binding reaching it is an import
        (``import model`` ... ``model.f()``). A name rebound on the way to a value, even one built
        from the module (``model = model.RNNModel(...)``), holds that value from there on. A name
        bound nowhere the flow sees falls back to the file's import table."""
        bindings = self.reaching(name)
        if not bindings:
            return name.id in self.ctx.imports.aliases
        return all(binding.kind == "import" for binding in bindings)

    def still_parameter(
        self, name: str, at: ast.AST, through: Callable[[ast.AST], ast.AST | None] | None = None, depth: int = 0
    ) -> bool:
        """Whether ``name``, a parameter of the function around ``at``, may still hold there the
        argument the caller passed: on some path to ``at`` it is not rebound, or rebound only to a
        value that ``through`` (or ``typing.cast``) looks through back to the same name holding it
        (``model = model.to(device)`` for a ``through`` that knows ``.to`` hands back its receiver).
        ``model = copy.deepcopy(model)``, ``model = Net()`` or ``for model in models:`` make the
        name stand for something else from there on."""
        for binding in self.reaching(name, at):
            if binding.kind == "param":
                return True
            if binding.kind not in ("assign", "walrus") or binding.value is None or depth >= self.MAX_DEPTH:
                continue
            inner: ast.AST | None = binding.value
            while inner is not None and not isinstance(inner, ast.Name):
                inner = value_kept(self.ctx, inner) or (through(inner) if through is not None else None)
            if (
                isinstance(inner, ast.Name)
                and inner.id == name
                and self.still_parameter(name, inner, through, depth + 1)
            ):
                return True
        return False

    def sole_value(self, name: ast.Name) -> ast.AST | None:
        """The value of a name bound exactly once in its scope, by a plain assignment
        (``workers = 4`` ... ``DataLoader(num_workers=workers)``); None for a name rebound anywhere
        in its scope (whatever the order), a parameter, a loop variable: a constant, not a guess."""
        bindings = self.visible_bindings(name.id, name)
        if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
            return bindings[0].value
        return None

    def dead_store(self, assignment: ast.AST) -> bool:
        """Whether ``assignment`` (``x = v``, ``x: T = v``, ``a = b = v``) stores its value only in
        local names that nothing reads afterwards: each target a plain name, no read of it that the
        assignment reaches, none in a loop around the assignment (the next iteration may read it
        before the read's own position), none in a function, lambda or class nested in its scope
        (a closure), no ``global``/``nonlocal`` declaration of it, and no ``locals()``, ``vars()``,
        ``eval`` or ``exec`` in the scope that could read it by its name. A class body's names are
        attributes: never dead here."""
        if isinstance(assignment, ast.Assign):
            targets = assignment.targets
        elif isinstance(assignment, ast.AnnAssign) and assignment.value is not None:
            targets = [assignment.target]
        else:
            return False
        if not all(isinstance(t, ast.Name) for t in targets):
            return False
        scope = self.scope_of(assignment)
        if isinstance(scope, ast.ClassDef) or self._reads_by_name_lookup(scope):
            return False
        flow = self.flow(scope)
        return not any(t.id in flow.declared_outer or self._read_after(t.id, assignment, scope) for t in targets)

    def _read_after(self, name: str, assignment: ast.AST, scope: ast.AST) -> bool:
        loops = {id(a) for a in self.ctx.ancestors(assignment) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))}
        for node in self.ctx.nodes(ast.Name):
            if node.id != name or isinstance(node.ctx, ast.Del):
                continue
            if isinstance(node.ctx, ast.Store) and not isinstance(self.ctx.parent(node), ast.AugAssign):
                continue  # a plain rebinding reads nothing (`x += 1` reads the old value)
            ancestors = list(self.ctx.ancestors(node))
            if scope not in ancestors:
                continue  # another function's name
            if self.scope_of(node) is scope and any(id(a) in loops for a in ancestors):
                return True  # the next iteration may read what this one stored
            # A read in a nested function (a closure) is reached by every binding around it.
            if any(b.stmt is assignment for b in self.reaching(name, node)):
                return True
        return False

    def _reads_by_name_lookup(self, scope: ast.AST) -> bool:
        """The scope calls ``locals()``, ``vars()``, ``eval`` or ``exec``: any of its names may be read."""
        return any(
            isinstance(call.func, ast.Name) and call.func.id in _NAME_LOOKUPS and self.scope_of(call) is scope
            for call in self.ctx.calls
        )

    def same_values(self, a: ast.expr, b: ast.expr) -> bool | None:
        """Whether two expressions of the same text read the same values: every name (or
        attribute chain) they read is reached at ``b`` by exactly the bindings that reach it at
        ``a`` -- nothing rebinds it between them. None when they lie in different scopes, where
        bindings cannot be compared (the caller decides what the text alone means)."""
        if self.scope_of(a) is not self.scope_of(b):
            return None
        for node in ast.walk(a):
            if not isinstance(node, (ast.Name, ast.Attribute)):
                continue
            key = symbol(node)
            if key is None:
                continue
            if {id(x.stmt) for x in self.reaching(key, a)} != {id(x.stmt) for x in self.reaching(key, b)}:
                return False
        return True

    def visible_bindings(self, name: str, at: ast.AST) -> list[Binding]:
        """Every binding of ``name`` in the innermost scope around ``at`` that binds it, in source
        order, wherever it sits (no flow: a flag may be set at the end of the previous iteration)."""
        scope = self.scope_of(at)
        while True:
            flow = self.flow(scope)
            if name in flow.bindings and name not in flow.declared_outer:
                return flow.bindings[name]
            if isinstance(scope, ast.Module):
                return []
            scope = self.ctx.tree if name in flow.declared_outer else self.scope_of(scope)
            while isinstance(scope, ast.ClassDef):  # class bodies do not enclose their methods
                scope = self.scope_of(scope)

    def bindings_anywhere(self, name: str) -> list[Binding]:
        """Every binding of a name or symbol (``self.opt``) in any scope of the file, in source order:
        what the file ever gives it, for questions that hold across functions (an attribute set in
        ``__init__`` and used in ``train``)."""
        return self._bindings_by_name.get(name, [])

    @cached_property
    def _bindings_by_name(self) -> dict[str, list[Binding]]:
        table: dict[str, list[Binding]] = {}
        for scope in self._binding_nodes:
            for name, bindings in self.flow(scope).bindings.items():
                table.setdefault(name, []).extend(bindings)
        for bindings in table.values():
            bindings.sort(key=lambda b: position(b.stmt))
        return table

    def _comprehension_binding(self, name: str, at: ast.AST) -> Binding | None:
        for ancestor in self.ctx.ancestors(at):
            if isinstance(ancestor, COMPREHENSIONS):
                for generator in ancestor.generators:
                    for target in ast.walk(generator.target):
                        if isinstance(target, ast.Name) and target.id == name:
                            return Binding(name, "for", generator, None, generator.iter, None, end_position(target))
            elif isinstance(ancestor, SCOPES):
                return None
        return None

    def _reaching_in(self, bindings: list[Binding], at: ast.AST, scope: ast.AST) -> list[Binding]:
        point = position(at)
        at_ancestors = set(map(id, self.ctx.ancestors(at)))
        found: list[Binding] = []
        for binding in reversed(bindings):
            if binding.position > point or id(binding.stmt) in at_ancestors:
                # Later in the code, or the statement that contains the point (x = f(x)):
                # except for a loop or with header, whose target is bound before its body runs.
                if not (isinstance(binding.stmt, _HEADER_BINDERS) and binding.position <= point):
                    continue
            if self._exclusive(binding.stmt, at_ancestors):
                continue
            if any(self._overwrites(later.stmt, binding.stmt) for later in found):
                continue
            found.append(binding)
            if self._surely_before(binding.stmt, at_ancestors, scope):
                break
        return found

    def _exclusive(self, stmt: ast.AST, at_ancestors: set[int]) -> bool:
        """Whether ``stmt`` and the point are in blocks that never both run (``if`` body
        and ``else``, two ``except`` handlers, two ``match`` cases)."""
        child = stmt
        for ancestor in self.ctx.ancestors(stmt):
            if id(ancestor) in at_ancestors:  # the lowest common ancestor
                return _exclusive_blocks(ancestor, child, at_ancestors)
            child = ancestor
        return False

    def _overwrites(self, later: ast.AST, earlier: ast.AST) -> bool:
        """Whether statement ``later`` always runs after ``earlier`` whenever ``earlier`` runs,
        before the point: ``later`` sits in a block that holds ``earlier`` (or a statement
        containing it) further up — ``x = x.permute(p); x = x.reshape(...)`` in one loop body."""
        if isinstance(later, (ast.For, ast.AsyncFor, ast.arg)) or isinstance(earlier, ast.arg):
            return False
        block_owner = self.ctx.parent(later)
        if block_owner is None:
            return False
        node = earlier
        while node is not None and node is not block_owner:
            parent = self.ctx.parent(node)
            if parent is block_owner:
                field_earlier = _block_of(block_owner, node)
                if field_earlier[0] and field_earlier == _block_of(block_owner, later):
                    return position(node) < position(later)
                return False
            node = parent
        return False

    def _surely_before(self, stmt: ast.AST, at_ancestors: set[int], scope: ast.AST) -> bool:
        if isinstance(stmt, ast.arg):
            return True
        child = stmt
        for ancestor in self.ctx.ancestors(stmt):
            if ancestor is scope:
                return True
            if isinstance(ancestor, BRANCHING) and id(ancestor) not in at_ancestors:
                # The binding is in a block of a branching statement the point is outside
                # of: it may not have run. A for-loop's own target does run, though.
                if not (isinstance(ancestor, (ast.For, ast.AsyncFor)) and child is ancestor.target):
                    return False
            if isinstance(ancestor, BRANCHING) and id(ancestor) in at_ancestors:
                if not _same_block(ancestor, child, at_ancestors):
                    return False
            child = ancestor
        return True

    # ----- self attributes ------------------------------------------------------------
    def attribute_bindings(self, cls: ast.ClassDef, attr: str) -> list[Binding]:
        """``self.attr = value`` (and ``self.attr: T = value``, ``self.attr += ...``) in the methods of
        ``cls`` (and the functions nested in them), in source order."""
        return self._attribute_table.get(cls, {}).get(attr, [])

    @cached_property
    def _attribute_table(self) -> dict[ast.ClassDef, dict[str, list[Binding]]]:
        """Class -> attribute -> its assignments through the receiver of a method, from one pass over
        the file's assignments."""
        tables: dict[ast.ClassDef, dict[str, list[Binding]]] = {}
        for node in self.ctx.nodes(ast.Assign, ast.AnnAssign, ast.AugAssign):
            method = self._method_of(node)
            if method is None:
                continue
            receiver = method.args.args[0].arg
            table = tables.setdefault(self.ctx.parent(method), {})
            kind = "augassign" if isinstance(node, ast.AugAssign) else "assign"
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for element, element_value in _pairs(target, node.value):
                    if (
                        isinstance(element, ast.Attribute)
                        and isinstance(element.value, ast.Name)
                        and element.value.id == receiver
                    ):
                        table.setdefault(element.attr, []).append(
                            Binding(element.attr, kind, node, element_value, None, None, end_position(node))
                        )
        for table in tables.values():
            for found in table.values():
                found.sort(key=lambda b: b.position)
        return tables

    def _method_of(self, node: ast.AST) -> ast.AST | None:
        """The method (with a receiver parameter) whose body holds ``node``, nested functions included."""
        for ancestor in self.ctx.ancestors(node):
            if type(ancestor) in _FUNCTION_DEFS and isinstance(self.ctx.parent(ancestor), ast.ClassDef):
                return ancestor if ancestor.args.args else None
            if type(ancestor) is ast.ClassDef:
                return None
        return None

    def self_attribute(self, expr: ast.AST) -> tuple[ast.ClassDef, str] | None:
        """For ``self.attr`` inside a method: (the class, ``attr``); else None."""
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
            return None
        function = self.ctx.enclosing_function(expr)
        while function is not None:
            parent = self.ctx.parent(function)
            if isinstance(parent, ast.ClassDef):
                args = function.args.args
                if args and args[0].arg == expr.value.id:
                    return parent, expr.attr
                return None
            function = self.ctx.enclosing_function(function)
        return None

    # ----- origins ---------------------------------------------------------------------
    def origins(
        self,
        expr: ast.AST,
        through: Callable[[ast.AST], ast.AST | None] | None = None,
        at: ast.AST | None = None,
        parameters: bool = False,
        unpacked: Callable[[ast.AST, int], ast.AST | None] | None = None,
        open_parameters: list[ast.arg] | None = None,
    ) -> list[ast.AST | None]:
        """Expressions that may have produced the value of ``expr``.

        Follows names (reaching plain assignments), ``self.attr`` (every assignment
        in the class), ``a if c else b`` (both arms), ``typing.cast(T, v)`` (``v``), with
        ``parameters`` a parameter to the argument every call site of its function in this file
        passes (``callgraph``), and ``through(e)`` when it returns a sub-expression to look through
        (for ``a if c else b``, the one arm it returns instead of both), and a name unpacked from
        a call (``a, b = f(x, y)``) to ``unpacked(call, index)`` when it returns what that element
        is (``prepare``-like calls hand their arguments back in order).
        Anything else is an origin itself; ``None`` stands for a value that cannot be told
        (parameter, loop variable, unpacked call result, augmented assignment, too deep). With
        ``parameters``, each parameter reached that no call site of this file fills (nor a default)
        is also added to ``open_parameters`` when given: its value comes from callers elsewhere."""
        found: list[ast.AST | None] = []
        self._origins(expr, _Question(through, parameters, found, set(), unpacked, open_parameters), at, 0)
        return found

    def _origins(self, expr, question: _Question, at, depth) -> None:
        found = question.found
        if depth > self.MAX_DEPTH:
            found.append(None)
            return
        if id(expr) in question.seen:
            return  # reached again (two paths to one value, a loop): its origins are already found
        question.seen.add(id(expr))
        if isinstance(expr, ast.NamedExpr):
            return self._origins(expr.value, question, at, depth + 1)
        if isinstance(expr, ast.IfExp):
            # ``through`` may pick the arm that runs (the question knows which way the test goes).
            chosen = question.through(expr) if question.through is not None else None
            if chosen is not None:
                return self._origins(chosen, question, at, depth + 1)
            self._origins(expr.body, question, at, depth + 1)
            self._origins(expr.orelse, question, at, depth + 1)
            return
        if isinstance(expr, ast.Name) and isinstance(expr.ctx, ast.Load):
            bindings = self.reaching(expr.id, at or expr)
            if not bindings:
                found.append(None)
            for binding in bindings:
                if binding.kind in ("assign", "walrus", "with") and binding.value is not None:
                    self._origins(binding.value, question, None, depth + 1)
                elif binding.kind == "param" and question.parameters:
                    self._parameter_origins(binding.stmt, question, depth + 1)
                elif (
                    binding.kind == "unpack"
                    and question.unpacked is not None
                    and binding.source is not None
                    and binding.index is not None
                    and (element := question.unpacked(binding.source, binding.index)) is not None
                ):
                    self._origins(element, question, None, depth + 1)
                else:
                    found.append(None)
            return
        owner = self.self_attribute(expr)
        if owner is not None:
            bindings = self.attribute_bindings(*owner)
            if not bindings:
                found.append(None)
            for binding in bindings:
                if binding.kind == "assign" and binding.value is not None:
                    self._origins(binding.value, question, None, depth + 1)
                else:
                    found.append(None)
            return
        kept = value_kept(self.ctx, expr)
        if kept is not None:
            return self._origins(kept, question, at, depth + 1)
        if question.through is not None:
            inner = question.through(expr)
            if inner is not None:
                return self._origins(inner, question, None, depth + 1)
        found.append(expr)

    def _parameter_origins(self, param: ast.arg, question: _Question, depth: int) -> None:
        function = self.ctx.parent(self.ctx.parent(param))
        values = (
            parameter_arguments(self.ctx, function, param)
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            else []
        )
        if not values:
            question.found.append(None)  # no call site in this file: the caller is unknown
            if question.open_parameters is not None:
                question.open_parameters.append(param)
        for value in values:
            if value is None:
                question.found.append(None)
            else:
                self._origins(value, question, None, depth)


@dataclass
class _Question:
    """One ``origins`` question: how to look through values, and what was found and seen so far."""

    through: Callable[[ast.AST], ast.AST | None] | None
    parameters: bool
    found: list
    seen: set
    unpacked: Callable[[ast.AST, int], ast.AST | None] | None = None
    open_parameters: list[ast.arg] | None = None


def _block_of(branching: ast.AST, child: ast.AST) -> tuple[str, ast.AST | None]:
    """Which block of ``branching`` holds ``child`` (a node directly under it):
    the field name, plus the handler or case itself for ``except``/``case`` blocks."""
    for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
        block = getattr(branching, field_name, None)
        if isinstance(block, list) and any(s is child for s in block):
            return field_name, child if field_name in ("handlers", "cases") else None
    return "", None


def _same_block(branching: ast.AST, child: ast.AST, at_ancestors: set[int]) -> bool:
    """Whether ``child`` (a node directly under ``branching``) sits in the same block of
    ``branching`` as the point whose ancestors are ``at_ancestors`` (e.g. both in the
    ``if`` body, not one in the body and one in ``else``; the same ``except`` handler)."""
    mine = _block_of(branching, child)
    for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
        block = getattr(branching, field_name, None)
        if isinstance(block, list):
            for s in block:
                if id(s) in at_ancestors:
                    return mine == _block_of(branching, s)
    return True


def _exclusive_blocks(branching: ast.AST, child: ast.AST, at_ancestors: set[int]) -> bool:
    """Whether the block of ``branching`` holding ``child`` and the block holding the point
    never both run in one pass: ``if`` body vs ``else``; two ``except`` handlers, a handler
    vs the ``try``'s ``else``; two ``match`` cases."""
    if _same_block(branching, child, at_ancestors):
        return False
    mine, _ = _block_of(branching, child)
    theirs = ""
    for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
        block = getattr(branching, field_name, None)
        if isinstance(block, list) and any(id(s) in at_ancestors for s in block):
            theirs = field_name
    if isinstance(branching, ast.If) or mine == theirs == "cases":
        return True
    if isinstance(branching, ast.Try) or type(branching).__name__ == "TryStar":
        return {mine, theirs} <= {"handlers", "orelse"}
    return False


def _pairs(target: ast.AST, value: ast.AST | None) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    if isinstance(target, (ast.Tuple, ast.List)):
        literal = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
        for i, element in enumerate(target.elts):
            if literal is not None and len(literal) == len(target.elts):
                yield from _pairs(element, literal[i])
            else:
                yield from _pairs(element, None)
    else:
        yield target, value


# Calls that hand back one of their arguments unchanged (a type annotation for the checker only):
# qualified name -> the argument's position.
VALUE_KEEPING_CALLS = {"typing.cast": 1, "typing_extensions.cast": 1}


def value_kept(ctx: FileContext, expr: ast.AST) -> ast.AST | None:
    """``v`` for ``typing.cast(T, v)``: the argument a call returns unchanged; None for anything else."""
    if not isinstance(expr, ast.Call):
        return None
    position = VALUE_KEEPING_CALLS.get(ctx.call_qualname(expr) or "")
    if position is None:
        return None
    return argument(expr, position, "val")


def resolve_returned_function(ctx: FileContext, call: ast.Call) -> FunctionNode | None:
    """The def that ``call`` runs when it calls a variable holding a function that a function of
    this file made and returned (``step = make_step(model, opt)`` ... ``step(batch)``, the factory
    returning its nested ``def step``). Values the variable may also hold that cannot be told
    (``None``, a call of another library wrapping the factory's result) are set aside; None when
    no such def, or more than one, reaches the call."""
    if not isinstance(call.func, ast.Name):
        return None
    found: set = set()
    for origin in dataflow(ctx).origins(call.func):
        if not isinstance(origin, ast.Call):
            continue
        factory = resolve_local_call(ctx, origin)
        if factory is None:
            continue
        for returned in returns_of(factory):
            if isinstance(returned.value, ast.Name):
                made = resolve_function_name(ctx, returned.value.id, returned)
                if made is not None and ctx.enclosing_scope(made) is factory:
                    found.add(made)
    return found.pop() if len(found) == 1 else None


# Calls that bind leading arguments of a function and hand back a callable that runs it.
PARTIAL_CALLS = frozenset({"functools.partial"})


def resolve_partial_function(ctx: FileContext, call: ast.Call) -> FunctionNode | None:
    """The def that ``call`` runs when it calls a variable holding ``functools.partial(f, ...)`` of a
    function ``f`` of this file (``backward = partial(loss_backward, fp16)`` ... ``backward(loss,
    opt)``): the call runs ``f``'s body. None unless every value that reaches the variable is such a
    partial of one and the same def."""
    if not isinstance(call.func, ast.Name):
        return None
    found: set = set()
    for origin in dataflow(ctx).origins(call.func):
        if not (isinstance(origin, ast.Call) and origin.args and ctx.call_qualname(origin) in PARTIAL_CALLS):
            return None
        wrapped = origin.args[0]
        made = resolve_function_name(ctx, wrapped.id, origin) if isinstance(wrapped, ast.Name) else None
        if made is None:
            return None
        found.add(made)
    return found.pop() if len(found) == 1 else None


_LITERAL_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict)


def functions_handed(ctx: FileContext, call: ast.Call) -> list:
    """The lambdas and functions of this file that ``call`` is handed: in any argument, positional
    or keyword, or as an element or value of a list/tuple/set/dict literal given to it, written
    there or held by a name whose one reaching binding is such a literal
    (``options = {"closure": closure}`` ... ``opt.step(options=options)``). A container that may
    hold something else (rebound on another branch, a parameter) shows nothing."""
    found: list = []
    for arg in [*call.args, *(kw.value for kw in call.keywords)]:
        _collect_handed(ctx, arg, found, containers=True)
    return found


def _collect_handed(ctx: FileContext, expr: ast.AST, found: list, containers: bool) -> None:
    if isinstance(expr, ast.Starred):
        expr = expr.value
    if isinstance(expr, ast.Lambda):
        found.append(expr)
    elif isinstance(expr, _LITERAL_CONTAINERS) and containers:
        elements = expr.values if isinstance(expr, ast.Dict) else expr.elts
        for element in elements:
            _collect_handed(ctx, element, found, containers=False)
    elif isinstance(expr, ast.Name):
        func = resolve_function_name(ctx, expr.id, expr)
        if func is not None:
            found.append(func)
        elif containers:
            bindings = dataflow(ctx).reaching(expr)
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                if isinstance(bindings[0].value, _LITERAL_CONTAINERS):
                    _collect_handed(ctx, bindings[0].value, found, containers=True)


def resolve_instance_call(ctx: FileContext, call: ast.Call) -> Definition | None:
    """The ``__call__`` that ``call`` runs when it calls an instance of a class of the project
    (``compute_loss = ComputeLoss(); compute_loss(pred, targets)``, the class and its ``__call__``
    in this file or another); None when any value the callee may hold is something else."""
    return resolve_instance_method(ctx, call.func, "__call__")


def resolve_instance_method(
    ctx: FileContext,
    instance: ast.AST,
    name: str,
    through: Callable[[ast.AST], ast.AST | None] | None = None,
    parameters: bool = False,
    unpacked: Callable[[ast.AST, int], ast.AST | None] | None = None,
) -> Definition | None:
    """The method ``name`` of the one project class every value ``instance`` may hold was built
    from (its own or inherited, in this file or another); None when any of those values is
    something else or the methods disagree. ``through``, ``parameters`` and ``unpacked`` as for
    ``origins``."""
    found = None
    for origin in dataflow(ctx).origins(instance, through, parameters=parameters, unpacked=unpacked):
        cls = resolve_class(ctx, origin.func) if isinstance(origin, ast.Call) else None
        method = find_method(Definition(*cls), name) if cls is not None else None
        if method is None or (found is not None and method != found):
            return None
        found = method
    return found


def dataflow(ctx: FileContext) -> Dataflow:
    """The file's shared :class:`Dataflow` (built on first use, then reused by every rule)."""
    return ctx.shared("dataflow", lambda: Dataflow(ctx))


def instance_method_calls(ctx: FileContext, method: FunctionNode) -> list[ast.Call]:
    """Calls of ``method`` by its name on an instance of its class (or of a subclass) built in this
    file -- ``EncDecEvaluator(trainer).evaluate_mt(...)``, ``ev = Evaluator(t); ev.run()`` -- which
    the call graph (``self.m()`` and plain names) leaves out. A receiver not shown to be such an
    instance (``self.proj.eval()`` in a class defining ``eval``) is not counted."""
    cls = ctx.parent(method)
    if not isinstance(cls, ast.ClassDef):
        return []
    graph = call_graph(ctx)
    classes = {cls.name, *(sub.name for sub in graph.subclasses(cls))}
    flow = dataflow(ctx)
    found = []
    for call in ctx.calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr != method.name or graph.callee(call) is not None:
            continue
        origins = flow.origins(func.value)
        if any(isinstance(o, ast.Call) and isinstance(o.func, ast.Name) and o.func.id in classes for o in origins):
            found.append(call)
    return found
