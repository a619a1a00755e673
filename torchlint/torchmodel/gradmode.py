"""Where autograd is switched off: ``torch.no_grad()``, ``torch.inference_mode()``,
``torch.set_grad_enabled(False)`` as with-blocks, decorators or bare statements (also an explicit
``__enter__()`` of one) (and where it is turned back on),
and whether a tensor was recorded in a graph where it was computed."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callers import callers_elsewhere
from torchlint.analysis.callgraph import resolve_callee, resolve_function_name, resolve_local_call, resolve_name
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import FUNCTION_NODES, Definition, unknown_star_name
from torchlint.analysis.nodes import returns_of, walk_function_body
from torchlint.analysis.summaries import function_summary as run_summary
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def grad_effect(ctx: FileContext, expr: ast.AST) -> bool | None:
    """False if ``expr`` (a with item or decorator) disables grad, True if it enables it, else None.

    Besides torch's own switches: a library's context manager documented to switch autograd
    (``vocabulary.GRAD_DISABLING_CONTEXTS``), and a generator context manager of the project whose
    every ``yield`` runs under the same switch (``@contextmanager def evaluating(net): ... with
    torch.no_grad(): yield``), in this file or another, or a function of the project that returns
    such a switch (``return torch.no_grad()``). A conditional expression (``torch.no_grad() if frozen
    else torch.inference_mode()``) has the effect both its arms agree on (see ``conditional_switch``
    for arms that disagree)."""
    if isinstance(expr, ast.IfExp):
        effects = {grad_effect(ctx, expr.body), grad_effect(ctx, expr.orelse)}
        return effects.pop() if len(effects) == 1 else None
    call = expr if isinstance(expr, ast.Call) else None
    qual = ctx.qualname(call.func if call else expr)
    if qual in torch_names.NO_GRAD:
        if qual == torch_names.INFERENCE_MODE and call and call.args and _is_false(call.args[0]):
            return None  # inference_mode(False) leaves grad mode alone
        return False
    if qual in torch_names.ENABLE_GRAD or qual in torch_names.GRAD_ENABLING_CONTEXTS:
        return True
    if qual in torch_names.GRAD_DISABLING_CONTEXTS:
        return False
    if qual in torch_names.SET_GRAD_ENABLED:
        if call and call.args and _is_false(call.args[0]):
            return False
        if call and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value is True:
            return True
        return None
    if call is not None and isinstance(call.func, (ast.Name, ast.Attribute)):
        return ctx.shared(("entered-grad-effect", call), lambda: _entered_context_effect(ctx, call))
    if call is None and isinstance(expr, (ast.Name, ast.Attribute)):
        return ctx.shared(("wrapper-grad-effect", expr), lambda: _wrapper_effect(ctx, expr))
    return None


def _wrapper_effect(ctx: FileContext, expr: ast.Name | ast.Attribute) -> bool | None:
    """The grad mode a decorator of the project (``expr`` names it) runs the decorated function
    under: it returns a wrapper of its own whose every call of the wrapped function sits under the
    same switch (``def no_grad(fn): def run(*a): with torch.no_grad(): return fn(*a); return run``),
    in this file or another (a summary of the decorator, computed once per run)."""
    if isinstance(expr, ast.Name):
        local = resolve_function_name(ctx, expr.id, expr)
        found = Definition(ctx, local) if local is not None else resolve_name(ctx, expr)
    else:
        found = resolve_name(ctx, expr)
    if found is None or not found.is_function:
        return None
    home, function = found.ctx, found.node
    return run_summary(found, "torch.wrapper-grad", lambda _: _wrapped_call_effect(home, function), None)


def _wrapped_call_effect(ctx: FileContext, decorator: ast.AST) -> bool | None:
    params = [*decorator.args.posonlyargs, *decorator.args.args]
    if len(params) != 1:
        return None
    wrapped = params[0].arg
    inner = {n.name: n for n in decorator.body if isinstance(n, FUNCTION_NODES)}
    returned = [ret.value for ret in returns_of(decorator)]
    if not returned or not all(isinstance(v, ast.Name) and v.id in inner for v in returned):
        return None
    effects = set()
    for name in {v.id for v in returned}:
        calls = [
            n
            for n in walk_function_body(inner[name])
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == wrapped
        ]
        if not calls:
            return None
        effects.update(grad_effect(ctx, s) if (s := lexical_grad_switch(ctx, c)) is not None else None for c in calls)
    return effects.pop() if len(effects) == 1 else None


def _entered_context_effect(ctx: FileContext, call: ast.Call) -> bool | None:
    """The grad mode a context manager built by a function of the project (``call`` runs it)
    switches to while it is entered: for a generator context manager, the same switch around each
    of its ``yield``s; for a plain function, the same switch in every context manager it returns
    (``def inference_mode(model): return torch.no_grad() if compiled(model) else
    torch.inference_mode()``). A summary of the function, computed once per run."""
    callee = resolve_callee(ctx, call)
    if callee is None:
        return None
    home, function = callee
    return run_summary(
        Definition(home, function), "torch.entered-grad", lambda _: _entered_effect(home, function), None
    )


def _entered_effect(ctx: FileContext, function: ast.AST) -> bool | None:
    if any(ctx.qualname(d) in torch_names.GENERATOR_CONTEXT_DECORATORS for d in function.decorator_list):
        return _yield_effect(ctx, function)
    return _returned_context_effect(ctx, function)


def _returned_context_effect(ctx: FileContext, function: ast.AST) -> bool | None:
    """The one grad switch every ``return`` of ``function`` hands back (a call of torch's switches,
    or of another such function), else None; a generator, or a bare ``return``, hands back none."""
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk_function_body(function)):
        return None
    returned = [ret.value for ret in returns_of(function)]
    if not returned or any(value is None for value in returned):
        return None
    effects = {grad_effect(ctx, value) for value in returned}
    return effects.pop() if len(effects) == 1 else None


def _yield_effect(ctx: FileContext, function: ast.AST) -> bool | None:
    yields = [n for n in walk_function_body(function) if isinstance(n, (ast.Yield, ast.YieldFrom))]
    effects = set()
    for point in yields:
        switch = _latest_switch(ctx, point)
        effects.add(None if switch is None else grad_effect(ctx, switch))
    return effects.pop() if len(effects) == 1 else None


def runs_without_grad(ctx: FileContext, call: ast.Call) -> bool:
    """Whether ``call`` runs a project function that switches autograd off around its whole body
    (a decorator, or a ``with torch.no_grad():`` holding every statement) and never back on inside:
    whatever it runs records no graph, so the call records none either."""
    callee = resolve_callee(ctx, call)
    if callee is None:
        return False
    home, function = callee
    return run_summary(
        Definition(home, function), "torch.body-without-grad", lambda _: _body_without_grad(home, function), False
    )


def called_elsewhere_without_grad(ctx: FileContext, function: ast.AST) -> bool:
    """Whether ``function`` (top level, called nowhere in its own file) is called from other files
    of the project, and every one of those calls runs with autograd off where it stands: inside a
    ``with torch.no_grad():`` block or a function decorated with one. Shown, else False: a caller
    the reverse index cannot see, or one that does not switch autograd off, keeps today's verdict."""
    sites = callers_elsewhere(Definition(ctx, function))
    return bool(sites) and all(lexical_grad_disabler(home, call) is not None for home, call in sites)


def instances_used_without_grad(ctx: FileContext, method: ast.AST) -> bool:
    """Whether every object whose ``method`` may run lives and is used only with autograd off: its
    class (top level, neither constructed, subclassed nor otherwise named in its own file) is
    constructed from other files of the project, each time bound to a local name there under a
    ``with torch.no_grad():`` block or a function decorated with one, and that name is only ever the
    receiver of method calls that run under the same switch (``solver = Solver(fn)`` ...
    ``solver.sample(x)`` in a ``@torch.no_grad()`` function), and the class never switches autograd
    back on: the object never leaves that region, so nothing runs its methods with autograd on.
    Shown, else False."""
    cls = ctx.parent(method)
    if not isinstance(method, FUNCTION_NODES) or not isinstance(cls, ast.ClassDef) or ctx.parent(cls) is not ctx.tree:
        return False
    return ctx.shared(("instances-used-without-grad", cls), lambda: _instances_without_grad(ctx, cls))


def _instances_without_grad(ctx: FileContext, cls: ast.ClassDef) -> bool:
    if any(name.id == cls.name for name in ctx.nodes(ast.Name)):
        return False  # built, subclassed or handed on in its own file: those objects are not followed
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and ctx.call_qualname(node) in _GRAD_SWITCHES:
            if grad_effect(ctx, node) is not False:
                return False  # a method may record again (`with torch.enable_grad():`)
    sites = callers_elsewhere(Definition(ctx, cls))
    return bool(sites) and all(_confined_without_grad(home, call) for home, call in sites)


def _confined_without_grad(ctx: FileContext, construction: ast.Call) -> bool:
    """``name = Cls(...)`` under a no-grad switch, every other mention of ``name`` in that scope
    (nested functions included) the receiver of a method call under a no-grad switch."""
    if lexical_grad_disabler(ctx, construction) is None:
        return False
    return _mentions_only_without_grad(ctx, construction, ctx.parent(construction), calls_itself=False)


def module_run_only_without_grad(ctx: FileContext, construction: ast.Call) -> bool:
    """Whether the module built by ``construction`` is bound to a local name (``net =
    Net(...).cuda()``, through moves and mode switches that hand back the module) and every other
    mention of that name in its scope is a call of it (``net(x)``) or of one of its methods
    (``net.reset()``), each under a no-grad switch: nothing ever records a graph through the
    module, so no backward reaches its weights (an augmentation or noise network). Shown, else
    False: a name handed on, returned, stored, rebound or iterated may be trained elsewhere."""
    value = construction
    while (found := _module_keeping_call(ctx, value)) is not None:
        value = found
    return _mentions_only_without_grad(ctx, construction, ctx.parent(value), calls_itself=True)


def _module_keeping_call(ctx: FileContext, value: ast.AST) -> ast.Call | None:
    """The call ``value.cuda()`` / ``value.train()`` / ``value.to(d)`` around ``value``, if any."""
    attribute = ctx.parent(value)
    call = ctx.parent(attribute) if isinstance(attribute, ast.Attribute) else None
    if isinstance(call, ast.Call) and call.func is attribute and attribute.attr in torch_names.MODULE_SELF_RETURNING:
        return call
    return None


# Module methods that hand its weights to other code (an optimizer, a checkpoint).
_HANDING_OUT_WEIGHTS = frozenset({"parameters", "named_parameters", "state_dict", "buffers", "modules", "children"})


def _mentions_only_without_grad(ctx: FileContext, construction: ast.Call, statement, calls_itself: bool) -> bool:
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return False
    bound = statement.targets[0]
    if not isinstance(bound, ast.Name):
        return False
    scope = ctx.enclosing_function(construction) or ctx.tree
    for node in ast.walk(scope):
        if not isinstance(node, ast.Name) or node.id != bound.id or node is bound:
            continue
        receiver = ctx.parent(node)
        if calls_itself and isinstance(receiver, ast.Call) and receiver.func is node:
            call = receiver
        else:
            call = ctx.parent(receiver)
            if not (isinstance(receiver, ast.Attribute) and isinstance(call, ast.Call) and call.func is receiver):
                return False  # handed on, returned, stored, rebound, or a bound method taken away
            if calls_itself and receiver.attr in _HANDING_OUT_WEIGHTS:
                return False  # `SGD(net.parameters())`: the weights go where an optimizer may step them
        if lexical_grad_disabler(ctx, call) is None:
            return False
    return True


def _body_without_grad(ctx: FileContext, function: ast.AST) -> bool:
    if not any(grad_effect(ctx, d) is False for d in function.decorator_list):
        body = function.body[1:] if _has_docstring(function) else function.body
        if not body or not all(_disables_grad(ctx, stmt) for stmt in body):
            return False
    # shown, else recording: a switch back on (or to a mode the code does not fix) inside may record
    for node in walk_function_body(function):
        if isinstance(node, ast.Call) and ctx.call_qualname(node) in _GRAD_SWITCHES:
            if grad_effect(ctx, node) is not False:
                return False
    return True


_GRAD_SWITCHES = torch_names.ENABLE_GRAD | torch_names.SET_GRAD_ENABLED | torch_names.GRAD_ENABLING_CONTEXTS


def _disables_grad(ctx: FileContext, stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.With, ast.AsyncWith)) and any(
        grad_effect(ctx, item.context_expr) is False for item in stmt.items
    )


def _has_docstring(function: ast.AST) -> bool:
    first = function.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def _is_false(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


def grad_mode_statements(ctx: FileContext) -> list[ast.Call]:
    """Bare grad switch statements (no ``with``): they switch the mode for the rest of the code that
    runs after them, until the next switch. ``torch.set_grad_enabled(...)``, and an explicit
    ``__enter__()`` of a grad context manager (``torch.no_grad().__enter__()``, or ``guard =
    torch.no_grad()`` ... ``guard.__enter__()``), whose ``__exit__(...)`` is a statement too: it puts
    back the mode from before (``statement_switch`` reads what each one switches to)."""

    def build() -> list[ast.Call]:
        return [
            c
            for c in ctx.calls
            if isinstance(ctx.parent(c), ast.Expr)
            and (ctx.call_qualname(c) in torch_names.SET_GRAD_ENABLED or _entered_context(ctx, c) is not None)
        ]

    return ctx.shared("grad-mode-statements", build)


def statement_switch(ctx: FileContext, statement: ast.Call) -> ast.AST | None:
    """The switch a grad statement (one of ``grad_mode_statements``) sets, as ``grad_effect`` reads
    it: the ``torch.set_grad_enabled(...)`` call itself, the context manager an ``__enter__()`` enters;
    None for an ``__exit__(...)`` (it restores an earlier mode, which this statement does not fix)."""
    if ctx.call_qualname(statement) in torch_names.SET_GRAD_ENABLED:
        return statement
    entered = _entered_context(ctx, statement)
    return entered if entered is not None and statement.func.attr == "__enter__" else None


_CONTEXT_PROTOCOL = ("__enter__", "__exit__")


def _entered_context(ctx: FileContext, call: ast.Call) -> ast.AST | None:
    """For ``<cm>.__enter__()`` / ``<cm>.__exit__(...)``: the grad context manager ``<cm>`` is (built
    right there, or the one value a name was bound to), else None."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in _CONTEXT_PROTOCOL):
        return None
    receiver = call.func.value
    if isinstance(receiver, ast.Name):
        origins = dataflow(ctx).origins(receiver)
        receiver = origins[0] if len(origins) == 1 else None
    if isinstance(receiver, ast.Call) and grad_effect(ctx, receiver) is not None:
        return receiver
    return None


def restores_grad_mode(ctx: FileContext, statement: ast.Call) -> bool:
    """A grad statement that is the ``__exit__(...)`` of a grad context manager."""
    return isinstance(statement.func, ast.Attribute) and statement.func.attr == "__exit__"


def statement_effect(ctx: FileContext, statement: ast.Call) -> bool | None:
    """What a grad statement switches autograd to (False: off), None when it does not fix it."""
    switch = statement_switch(ctx, statement)
    return None if switch is None else grad_effect(ctx, switch)


def is_inference_mode(ctx: FileContext, expr: ast.AST) -> bool:
    """``torch.inference_mode()`` (not ``inference_mode(False)``): unlike ``no_grad``, a
    ``torch.enable_grad()`` inside it records nothing (its tensors are inference tensors)."""
    call = expr if isinstance(expr, ast.Call) else None
    return ctx.qualname(call.func if call else expr) == torch_names.INFERENCE_MODE and grad_effect(ctx, expr) is False


def lexical_grad_switch(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The with-item or decorator that sets the grad mode where ``node`` runs, judged lexically
    within ``node``'s own function (the nearest enclosing switch, on or off), or None."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            for item in reversed(ancestor.items):
                if grad_effect(ctx, item.context_expr) is not None:
                    return item.context_expr
        elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in ancestor.decorator_list:
                if grad_effect(ctx, decorator) is not None:
                    return decorator
            return None
        elif isinstance(ancestor, (ast.Lambda, ast.ClassDef)):
            return None
    return None


def lexical_undecided_switch(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The argument of a ``with torch.set_grad_enabled(<expr>):`` around ``node`` (within its own
    function, nearer than any decided switch) whose value the code does not fix here
    (``self.model.training``, ``phase == "train"``): the mode there is whatever ``<expr>`` is on
    the path that runs ``node``."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            for item in reversed(ancestor.items):
                call = item.context_expr
                if grad_effect(ctx, call) is not None:
                    return None
                if isinstance(call, ast.Call) and call.args and ctx.call_qualname(call) in torch_names.SET_GRAD_ENABLED:
                    return call.args[0]
        elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
    return None


def conditional_switch(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether the with-item ``expr`` picks by a condition between a context manager that switches
    autograd off and one that does not (``torch.no_grad() if policy.training or not with_grad else
    nullcontext()``): the mode inside is whatever the condition makes it on the path that runs it."""
    if not isinstance(expr, ast.IfExp):
        return False
    effects = {grad_effect(ctx, expr.body), grad_effect(ctx, expr.orelse)}
    return len(effects) > 1 and False in effects


def lexical_grad_disabler(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The with-item or decorator that disables grad where ``node`` runs, judged lexically
    within ``node``'s own function (the nearest enclosing switch wins), or None."""
    switch = lexical_grad_switch(ctx, node)
    return switch if switch is not None and grad_effect(ctx, switch) is False else None


def lexical_unknown_switch(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """A with-item or decorator around ``node`` (within its own function, nearer than any known
    switch) whose context manager the linter cannot resolve at all (a name that may come from a
    star import it could not read, ``with torch.no_grad():`` with ``torch`` bound only there), or
    one a condition picks between a no-grad switch and another context manager
    (``conditional_switch``): it may switch autograd off, so whether grad is on at ``node`` is
    unknown."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            items = [item.context_expr for item in ancestor.items]
        elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            items = ancestor.decorator_list
        elif isinstance(ancestor, (ast.Lambda, ast.ClassDef)):
            return None
        else:
            continue
        for expr in reversed(items):
            if grad_effect(ctx, expr) is not None:
                return None
            if unknown_star_name(ctx, expr) or conditional_switch(ctx, expr):
                return expr
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
    return None


MAX_RECORDING_DEPTH = 3  # helper calls followed from a value to the statements that computed it


def recorded_with_grad(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether every value the tensor ``expr`` may hold is shown to have been computed where grad is
    switched back on (``with torch.enable_grad():``, ``torch.set_grad_enabled(True)``, a function
    decorated ``@torch.enable_grad()``), so that it carries a graph even where the code around
    ``expr`` runs under no-grad: recording happens when a value is computed, not when it is used.

    The value is followed through names to the expressions that computed it (also to the arguments
    the call sites of a parameter's function pass, and from a name unpacked from a call's result to
    that call), and from a call of a function of this file to what that function returns. A value of unknown origin, or one computed with no switch around it
    (in the mode of whoever runs the code), is not shown to be recorded."""
    return _recording(ctx, expr, 0) is True


def _recording(ctx: FileContext, expr: ast.AST, depth: int) -> bool | None:
    """True when every value of ``expr`` was computed with grad switched on, False when one was
    computed with it switched off, None when not shown either way (a value computed with no switch
    in its function, whose mode is that of whoever runs it, or one of unknown origin)."""
    if depth > MAX_RECORDING_DEPTH:
        return None
    origins = dataflow(ctx).origins(expr, parameters=True, unpacked=_computing_call)
    return _combined({_computed_with_grad(ctx, o, depth) if o is not None else None for o in origins})


def _computing_call(source: ast.AST, index: int) -> ast.AST | None:
    """A name unpacked from a call's result (``loss, kl = compute(batch)``) was computed by that
    call, in the mode it ran in (or the one its function's own switches decide)."""
    return source if isinstance(source, ast.Call) else None


def _combined(modes: set) -> bool | None:
    """All values recorded (True), one not (False), or not shown (None)."""
    if False in modes:
        return False
    return True if modes == {True} else None


def _computed_with_grad(ctx: FileContext, origin: ast.AST, depth: int) -> bool | None:
    """The grad mode ``origin`` was computed in: a call of a function of this file that switches
    the mode itself or returns values its own switches decide, else the nearest switch around it."""
    if isinstance(origin, (ast.List, ast.Tuple)):  # `torch.autograd.backward([a, b])`: each tensor's own place
        return _combined({_recording(ctx, elt, depth) for elt in origin.elts})
    if _inside_inference_mode(ctx, origin):
        return False
    if isinstance(origin, ast.Call):
        callee = resolve_local_call(ctx, origin)
        if isinstance(callee, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = _callee_recording(ctx, callee, depth)
            if own is not None:
                return own
    switch = _latest_switch(ctx, origin)
    return None if switch is None else grad_effect(ctx, switch)


def _latest_switch(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The switch in effect where ``node`` runs, within its function: the nearest enclosing with-item
    or decorator, unless a bare ``torch.set_grad_enabled(...)`` statement inside it surely ran
    later (before ``node``, in a block that encloses ``node``: not in a branch or a closed ``with``)."""
    switch = lexical_grad_switch(ctx, node)
    owner = ctx.parent(switch) if switch is not None else None  # the with-item's `with`, or the function
    if isinstance(owner, ast.withitem):
        owner = ctx.parent(owner)
    function = ctx.enclosing_function(node)
    enclosing = {id(a) for a in ctx.ancestors(node)}
    pos = (node.lineno, node.col_offset)
    latest = None
    for statement in grad_mode_statements(ctx):
        expr = ctx.parent(statement)
        if (
            ctx.enclosing_function(statement) is function
            and _block_encloses(ctx, expr, enclosing)
            and (statement.lineno, statement.col_offset) < pos
            and (statement_effect(ctx, statement) is not None or restores_grad_mode(ctx, statement))
            and (owner is None or ctx.is_inside(statement, owner))
            and (latest is None or (statement.lineno, statement.col_offset) > (latest.lineno, latest.col_offset))
        ):
            latest = statement
    # an `__exit__` puts back the mode from before its `__enter__`: taken as the enclosing switch's
    return statement_switch(ctx, latest) if latest is not None and not restores_grad_mode(ctx, latest) else switch


def _callee_recording(ctx: FileContext, callee: ast.AST, depth: int) -> bool | None:
    """The grad mode of what ``callee`` returns when its own decorator or switches decide it."""
    for decorator in callee.decorator_list:
        effect = grad_effect(ctx, decorator)
        if effect is not None:
            return effect
    returned = [ret.value for ret in returns_of(callee)]
    if not returned or any(v is None for v in returned):
        return None
    return _combined({_recording(ctx, v, depth + 1) for v in returned})


def _inside_inference_mode(ctx: FileContext, node: ast.AST) -> bool:
    """An ``inference_mode()`` block or decorator around ``node`` in its function, however deep."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            if any(is_inference_mode(ctx, item.context_expr) for item in ancestor.items):
                return True
        elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return any(is_inference_mode(ctx, d) for d in ancestor.decorator_list)
        elif isinstance(ancestor, (ast.Lambda, ast.ClassDef)):
            return False
    return False


def _block_encloses(ctx: FileContext, statement: ast.stmt, enclosing: set[int]) -> bool:
    """Whether the statement list ``statement`` sits in also holds a statement around the point
    whose ancestors' ids are ``enclosing`` (so that ``statement`` surely runs on the way to it)."""
    for _, block in ast.iter_fields(ctx.parent(statement)):
        if isinstance(block, list) and any(s is statement for s in block):
            return any(id(s) in enclosing for s in block)
    return False
