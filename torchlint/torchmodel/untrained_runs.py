"""Model calls that run before anything in the program trains or loads the model.

Evaluation means running a model whose weights were trained or loaded in this program. A model
built fresh (a constructor without pretrained weights, ``ModelProvenance.fresh_construction``) and
run at a point that no training step and no state load precedes, in the order the program runs,
still has its initial weights there: the call is a smoke test of the architecture (a ``test()``
on two literal words, called at module level before the optimizer exists; a helper that builds a
prior network and prints the shape of what it returns), not evaluation -- whatever trains that
model later.

A *run point* is the model call itself when the model is bound in the function around it (each
call of the function builds it anew); for a model bound at module level it is each call site of
that function, followed up through the callers to module level. What precedes a point is every
statement before it in each block around it, and the whole of any loop around it (a later
iteration runs after an earlier one's training). Shown, else silent: a function with no call site
in this file or passed around as a value, a model handed to other code, stored or aliased, or a
method of it given data (``model.fit(x, y)``) all count as possibly training it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, resolve_local_call, site_argument
from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.analysis.nodes import walk_no_scopes
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.events import BACKWARD_KINDS, STEP_KINDS
from torchlint.torchmodel.forward_calls import model_expression
from torchlint.torchmodel.provenance import INSPECTING_CALLS, through_model_keeping
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.provenance import ModelProvenance

_TRAINING_KINDS = BACKWARD_KINDS | STEP_KINDS
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFINITIONS = (*FUNCTION_TYPES, ast.ClassDef)
_MAX_CALLER_DEPTH = 3
# Where a model (or a part of it) handed over may be kept and changed by other code.
_KEEPING_PARENTS = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.NamedExpr,
    ast.Return,
    ast.Yield,
    ast.YieldFrom,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.Starred,
)


class UntrainedRuns:
    def __init__(self, ctx: FileContext, provenance: ModelProvenance):
        self.ctx = ctx
        self.provenance = provenance

    def runs_untrained(self, call: ast.Call) -> bool:
        """The model ``call`` runs is built fresh, and every run of the call comes before anything
        trains it, loads a state into it or hands it to other code."""
        model = model_expression(call)
        if not isinstance(model, ast.Name):
            return False
        func = self.ctx.enclosing_function(call)
        if func is not None and self._parameter(func, model.id) is not None:
            return self._fresh_from_every_caller(call, func, model.id, 0)
        return self._fresh_and_untrained_at(call, func, model, 0)

    def _fresh_and_untrained_at(self, point: ast.AST, func, model: ast.Name, depth: int) -> bool:
        """Every value of ``model`` at ``point`` is built fresh, and nothing before ``point`` trains
        it, loads a state into it or hands it on: in ``func`` when it builds the model there (anew in
        each run), else along every path of callers to ``point``."""
        origins = self.provenance.flow.origins(model, through_model_keeping)
        if not origins or not all(self.provenance.fresh_construction(o) for o in origins):
            return False
        if func is not None and self.provenance.bound_in(model.id, func):
            return self._quiet_before(point, func, model.id)
        return self._before_training(point, func, model.id, depth)

    def runs_after_training(self, call: ast.Call) -> bool:
        """Every run of ``call`` comes after a training step of this program: the model there is
        not in its initial state (a generator sampled from noise for display once it has been
        trained), so the call is no shape probe whatever its input. A model bound in the function
        around the call other than as its parameter is built anew for each run: it is never after
        training."""
        model = model_expression(call)
        if not isinstance(model, ast.Name):
            return False
        func = self.ctx.enclosing_function(call)
        if func is not None and self._built_here(model.id, func):
            return False
        return self._after_training(call, func, 0)

    def _built_here(self, name: str, func) -> bool:
        """``name`` gets a value of its own in ``func``: bound there other than as a parameter or as
        the loop variable over a parameter (``for model in models:`` runs the caller's models)."""
        bindings = self.provenance.flow.flow(func).bindings.get(name, ())
        return any(b.kind != "param" and not self._over_parameter(b, func) for b in bindings)

    def _over_parameter(self, binding, func) -> bool:
        source = binding.source
        return binding.kind == "for" and isinstance(source, ast.Name) and self._parameter(func, source.id) is not None

    def _after_training(self, point: ast.AST, func, depth: int) -> bool:
        statements = self._preceding(point, func or self.ctx.tree)
        if any(e.kind in _TRAINING_KINDS for e in event_walker(self.ctx).events(statements)):
            return True
        if func is None or depth >= _MAX_CALLER_DEPTH or self._used_as_value(func):
            return False
        callers = call_graph(self.ctx).callers(func)
        return bool(callers) and all(
            self._after_training(site, self.ctx.enclosing_function(site), depth + 1) for site in callers
        )

    def _before_training(self, point: ast.AST, func, name: str, depth: int) -> bool:
        if not self._quiet_before(point, func or self.ctx.tree, name):
            return False
        if func is None:
            return True
        if depth >= _MAX_CALLER_DEPTH or self._used_as_value(func):
            return False
        callers = call_graph(self.ctx).callers(func)
        return bool(callers) and all(
            self._before_training(site, self.ctx.enclosing_function(site), name, depth + 1) for site in callers
        )

    def _parameter(self, func, name: str) -> ast.arg | None:
        """The parameter ``name`` of ``func`` when that is its only binding there."""
        bindings = self.provenance.flow.flow(func).bindings.get(name, ())
        if not bindings or any(b.kind != "param" for b in bindings):
            return None
        positional = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
        return next((a for a in positional if a.arg == name), None)

    def _fresh_from_every_caller(self, point: ast.AST, func, name: str, depth: int) -> bool:
        """The model ``name``, a parameter of ``func``, is untouched before ``point`` there, and every
        call site of ``func`` in this file passes a model that is itself untrained there: built fresh
        (``test_model(Net(...))`` or a name bound so) and untouched before the call, or the caller's
        own parameter passed on under the same terms. A function with no call site, or used as a
        value, may be handed a trained model: not shown."""
        if isinstance(self.ctx.parent(func), ast.ClassDef) or depth >= _MAX_CALLER_DEPTH:
            return False  # a method's call sites bind `self` first: not followed here
        if not self._quiet_before(point, func, name) or self._used_as_value(func) or self._file_trains:
            return False  # a generator fed the model may run interleaved with the training that follows
        param = self._parameter(func, name)
        callers = call_graph(self.ctx).callers(func)
        return bool(callers) and all(self._passes_untrained(site, func, param, depth) for site in callers)

    def _passes_untrained(self, site: ast.Call, func, param: ast.arg, depth: int) -> bool:
        passed = site_argument(self.ctx, func, param, site)
        if passed is not None and self.provenance.fresh_construction(passed):
            return True
        if not isinstance(passed, ast.Name):
            return False
        caller = self.ctx.enclosing_function(site)
        if caller is not None and self._parameter(caller, passed.id) is not None:
            return self._fresh_from_every_caller(site, caller, passed.id, depth + 1)
        return self._fresh_and_untrained_at(site, caller, passed, depth + 1)

    @property
    def _file_trains(self) -> bool:
        return self.ctx.shared(
            "untrained-runs-file-trains",
            lambda: any(e.kind in _TRAINING_KINDS for e in event_walker(self.ctx).events(self.ctx.tree.body)),
        )

    def _used_as_value(self, func) -> bool:
        """The function's name is read other than to call it (a callback, a hook): it may run anywhere."""
        for node in self.ctx.nodes(ast.Name):
            if node.id == func.name and isinstance(node.ctx, ast.Load):
                parent = self.ctx.parent(node)
                if not (isinstance(parent, ast.Call) and parent.func is node):
                    return True
        return False

    # ----- what runs before a point ----------------------------------------------------------------
    def _preceding(self, point: ast.AST, scope: ast.AST) -> list[ast.stmt]:
        """The statements of ``scope`` that may run before ``point``: those before it in each block
        around it, and each loop around it whole."""
        found: list[ast.stmt] = []
        child = point
        for ancestor in self.ctx.ancestors(point):
            if isinstance(ancestor, _LOOPS) and child is not getattr(ancestor, "iter", None):
                found.append(ancestor)
            elif hasattr(child, "lineno"):
                # (A node without a position -- a comprehension's `for` clause, a `with` item, a
                # `case` -- has no statement before it among its siblings.)
                start = (child.lineno, child.col_offset)
                for node in ast.iter_child_nodes(ancestor):
                    if isinstance(node, (ast.stmt, ast.excepthandler)) and _end(node) <= start:
                        found.extend(node.body if isinstance(node, ast.excepthandler) else [node])
            if ancestor is scope:
                break
            child = ancestor
        return [s for s in found if not isinstance(s, _DEFINITIONS)]

    def _quiet_before(self, point: ast.AST, scope: ast.AST, name: str) -> bool:
        """Nothing before ``point`` in ``scope`` (nor in the functions of this file it calls)
        takes a training step, or loads, hands on or changes the model ``name``."""
        statements = self._preceding(point, scope)
        if any(e.kind in _TRAINING_KINDS for e in event_walker(self.ctx).events(statements)):
            return False
        return not self._touches(statements, name)

    def _touches(self, statements: list[ast.stmt], name: str) -> bool:
        seen: set[ast.AST] = set()
        pending = [node for stmt in statements for node in walk_no_scopes(stmt)]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.Call):
                callee = resolve_local_call(self.ctx, node)
                if callee is not None and callee not in seen:
                    seen.add(callee)
                    pending.extend(n for stmt in callee.body for n in walk_no_scopes(stmt))
            elif (
                isinstance(node, ast.Name)
                and node.id == name
                and isinstance(node.ctx, ast.Load)
                and self._touching_use(node)
            ):
                return True
        return False

    def _touching_use(self, node: ast.Name) -> bool:
        """A use of the model that may change its weights: a method loading them or given data,
        a store into it, or the model (or a part) handed to a call other than an inspection,
        stored or returned. Calling it (a forward) and reading its attributes are not."""
        top: ast.AST = node
        parent = self.ctx.parent(top)
        while isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is top:
            top, parent = parent, self.ctx.parent(parent)
        if isinstance(getattr(top, "ctx", None), (ast.Store, ast.Del)):
            return True  # `model.fc.weight = ...`
        if isinstance(parent, ast.Call) and parent.func is top:
            if top is node or not isinstance(top, ast.Attribute):
                return False  # a forward of the model or of one of its parts
            if top.attr in torch_names.WEIGHT_LOADING_METHODS:
                return True
            if top.attr in torch_names.WEIGHT_KEEPING_METHODS:
                return False
            return any(not isinstance(a, ast.Constant) for a in [*parent.args, *(k.value for k in parent.keywords)])
        if isinstance(parent, ast.keyword):
            parent = self.ctx.parent(parent)
        if isinstance(parent, ast.Call):
            callee = ast.unparse(parent.func).rsplit(".", 1)[-1]
            return callee not in INSPECTING_CALLS
        return isinstance(parent, _KEEPING_PARENTS)


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)
