"""TL013 unregistered-parameter."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cached_property

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.destinations import stored_into
from torchlint.analysis.nodes import keyword, method_call
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import constructor_role
from torchlint.torchmodel.modules import imported_layer_class, installs_as_attribute, module_classes
from torchlint.torchmodel.roles import Role
from torchlint.torchmodel.stateless import stateless_class, stateless_layer

PARAMETER = "torch.nn.Parameter"
EMPTY_CONTAINER_CALLS = frozenset({"list", "dict", "tuple", "OrderedDict", "collections.OrderedDict"})
# Builtins that look at a container without reaching its entries (whatever its kind).
_SIZE_BUILTINS = frozenset({"len", "print", "isinstance", "repr", "str"})
# Methods that fill a container (not reads of what it holds).
_FILLING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault"})
# Builtins that only look at a container: passing `self.blocks` to them registers nothing.
INSPECTING_BUILTINS = frozenset(
    {
        "len",
        "enumerate",
        "zip",
        "range",
        "print",
        "isinstance",
        "iter",
        "reversed",
        "sorted",
        "min",
        "max",
        "repr",
        "str",
    }
)


@register
class UnregisteredParameter(Rule):
    code = "TL013"
    name = "unregistered-parameter"
    severity = "error"
    summary = "Submodules in a plain list/dict, or a trainable tensor that is not an `nn.Parameter`."
    what = """
        Reports, in the `__init__` of an `nn.Module` subclass, an attribute that holds
        newly built submodules (`nn.Linear(...)`, a module class of this file, a class
        imported from a package of layers such as `fairseq.modules`, `timm.layers` or
        `.models.blocks`, an `nn.Parameter`) in a plain `list`, `tuple` or `dict` — written as a literal, a
        comprehension, or filled with `.append(...)` — and a tensor made trainable with
        `requires_grad=True` or `.requires_grad_()` instead of `nn.Parameter`. Lists of
        modules that are registered anyway (passed to `nn.Sequential(*layers)`,
        `nn.ModuleList(...)`, `add_module`, or their entries handed to a torch container:
        `nn.ModuleList(list(self.convs.values()))`), lists of references to registered
        submodules, an index of modules each also set as an attribute elsewhere (`setattr`,
        `add_module`, or a helper that does so: `set_module_by_path(self.net, path, wrapper)`),
        buffers and plain-data lists are fine; so is a tensor that a method `__init__` does not
        run resets to a fresh value (`self.context[:] = 0` per task): state kept by hand.
    """
    why = """
        `nn.Module` registers only attributes that are modules, `nn.Parameter`s,
        `nn.ModuleList`/`nn.ModuleDict`/`nn.ParameterList` and buffers. Anything hidden
        in a plain container or a bare tensor is invisible: `model.parameters()` skips
        it, so the optimizer never updates it; `.to(device)`/`.cuda()` leave it on the
        CPU; `state_dict()` does not save it; `model.eval()` does not reach it. The
        model trains with frozen random layers and no error.
    """
    example = """
        import torch
        import torch.nn as nn


        class MLP(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.layers = [nn.Linear(a, b) for a, b in zip(dims, dims[1:])]
                self.scale = torch.ones(dims[-1], requires_grad=True)
    """
    instead = """
        import torch
        import torch.nn as nn


        class MLP(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
                self.scale = nn.Parameter(torch.ones(dims[-1]))
    """
    VALID = [
        """
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        layers = [nn.Linear(8, 8) for _ in range(n)]
        self.body = nn.Sequential(*layers)
        self.heads = nn.ModuleList([nn.Linear(8, 2), nn.Linear(8, 3)])
        self.alpha = nn.Parameter(torch.zeros(1))
        self.register_buffer("mask", torch.ones(8))
        self.out_channels = [8, 16, 32]
        self.stages = [self.body, self.heads]
""",
    ]
    INVALID = [
        """
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = [nn.Linear(8, 8) for _ in range(n)]  # expect: TL013
        self.temperature = torch.ones(1, requires_grad=True)  # expect: TL013
""",
        """
import torch.nn as nn
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3)
class Net(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.stages = []  # expect: TL013
        for i in range(depth):
            self.stages.append(Block())
""",
    ]

    def check(self, ctx):
        if not module_classes(ctx):
            return
        checkers: dict[ast.AST, _InitChecker] = {}
        for node in ctx.nodes(ast.Assign, ast.AnnAssign):
            if node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) for t in targets):
                continue
            init = ctx.enclosing_function(node)
            if init is None or init.name != "__init__" or not init.args.args:
                continue
            cls = ctx.parent(init)
            if not isinstance(cls, ast.ClassDef) or cls.name not in module_classes(ctx):
                continue
            checker = checkers.get(init)
            if checker is None:
                checker = checkers[init] = _InitChecker(self, ctx, cls, init)
            yield from checker.judge_assignment(node, targets)


class _InitChecker:
    def __init__(self, rule, ctx, cls, init):
        self.rule = rule
        self.ctx = ctx
        self.cls = cls
        self.init = init
        self.receiver = init.args.args[0].arg
        self.flow = dataflow(ctx)

    @cached_property
    def _class_calls(self) -> list[ast.Call]:
        # Only needed once a finding is about to be reported: most classes never get here.
        return [n for n in ast.walk(self.cls) if isinstance(n, ast.Call)]

    @cached_property
    def _registers_by_hand(self) -> bool:
        return any(self._is_registering_call(c) for c in self._class_calls)

    def judge_assignment(self, node, targets) -> Iterator:
        for target in targets:
            attr = self._self_attribute(target)
            if attr is None:
                continue
            judged = self._judge(attr, node.value)
            if judged:
                message, replacement = judged
                yield self.rule.report(node, message, evidence=replacement)

    # ----- what an assignment stores ------------------------------------------------------------
    def _judge(self, attr: str, value: ast.AST) -> tuple[Message, str] | None:
        """The message, and the class to hold the value instead (its qualified name)."""
        trainable = self._trainable_tensor(value)
        if trainable:
            if self._wrapped_later(attr) or self._gradient_probe(attr) or self._reset_by_hand(attr):
                return None
            return Message(
                f"`self.{attr}` is a tensor made trainable with `{trainable}` but not an `nn.Parameter`",
                why="the optimizer (`model.parameters()`), `.to(device)` and `state_dict()` never see it",
                help=f"wrap it: `self.{attr} = nn.Parameter(...)` (or `register_buffer` if it is not trained)",
            ), PARAMETER
        fresh = self._fresh_modules_in_container(value)
        filled = ""
        if fresh is None and self._is_empty_container(value):
            fresh = self._appended_modules(attr)
            filled = " (filled later in `__init__`)"
        kind = _container_kind(value)
        if (
            not fresh
            or self._registers_by_hand
            or self._wrapped_later(attr)
            or self._only_picked_into_registered(attr, kind)
            or (filled and self._installed_elsewhere(attr))
        ):
            return None
        if fresh == "parameter":
            replacement = "nn.ParameterDict" if kind == "dict" else "nn.ParameterList"
            what = "parameters"
        else:
            replacement = "nn.ModuleDict" if kind == "dict" else "nn.ModuleList"
            what = "submodules"
        return Message(
            f"`self.{attr}` keeps {what} in a plain {kind}{filled}",
            why="they are not registered, so the optimizer (`model.parameters()`), `.to(device)`, `state_dict()` "
            "and `model.eval()` never see them",
            help=f"use `{replacement}(...)` instead",
        ), "torch." + replacement

    def _trainable_tensor(self, value: ast.AST) -> str | None:
        # `torch.randn(n, requires_grad=True).to(device)`: look inside device/dtype moves.
        found = method_call(value)
        if found is not None and found[0] in torch_names.DEVICE_DTYPE_MOVES:
            inner = self._trainable_tensor(found[1])
            if inner:
                return inner
        if not isinstance(value, ast.Call):
            return None
        if found is not None and found[0] == "requires_grad_":
            if not value.args or _is_true(value.args[0]):
                return "requires_grad_()"
            return None
        requires_grad = keyword(value, "requires_grad")
        if requires_grad is None or not _is_true(requires_grad.value):
            return None
        qual = self.ctx.call_qualname(value)
        if qual in torch_names.PARAMETER_CLASSES:
            return None
        if (qual and qual.startswith("torch.")) or (found is not None and found[0].startswith("new_")):
            return "requires_grad=True"
        return None

    def _module_kind(self, expr: ast.AST) -> str | None:
        """ "module"/"parameter" when ``expr`` builds a new submodule or parameter here."""
        if isinstance(expr, ast.IfExp):
            return self._module_kind(expr.body) or self._module_kind(expr.orelse)
        if not isinstance(expr, ast.Call):
            return None
        qual = self.ctx.call_qualname(expr)
        if qual in torch_names.PARAMETER_CLASSES:
            return "parameter"
        if constructor_role(self.ctx, expr) == Role.MODEL or imported_layer_class(self.ctx, expr):
            if stateless_layer(qual) or stateless_class(self.ctx, expr):
                return None  # no parameters, buffers or train/eval behaviour: nothing is lost
            return "module"
        return None

    def _fresh_modules_in_container(self, value: ast.AST) -> str | None:
        if isinstance(value, (ast.ListComp, ast.SetComp)):
            elements = [value.elt]
        elif isinstance(value, ast.DictComp):
            elements = [value.value]
        elif isinstance(value, ast.Dict):
            elements = list(value.values)
        elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            elements = list(value.elts)
        elif _called(value) in ("list", "tuple", "dict") and len(value.args) == 1 and not value.keywords:
            # list(nn.Linear(8, 8) for _ in range(n)), tuple([...])
            inner = value.args[0]
            if isinstance(inner, ast.GeneratorExp):
                kinds = {self._module_kind(inner.elt)} - {None}
                return None if not kinds else "parameter" if kinds == {"parameter"} else "module"
            return self._fresh_modules_in_container(inner)
        elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
            # `[nn.Linear(8, 8)] * n`: the same module n times, still unregistered.
            for side in (value.left, value.right):
                if isinstance(side, (ast.List, ast.Tuple)):
                    return self._fresh_modules_in_container(side)
            return None
        else:
            return None
        kinds = {self._module_kind(e) for e in elements} - {None}
        if not kinds:
            return None
        return "parameter" if kinds == {"parameter"} else "module"

    @staticmethod
    def _is_empty_container(value: ast.AST) -> bool:
        if isinstance(value, (ast.List, ast.Tuple, ast.Dict)):
            return not (value.elts if not isinstance(value, ast.Dict) else value.keys)
        return _called(value) in EMPTY_CONTAINER_CALLS and not value.args and not value.keywords

    def _appended_modules(self, attr: str) -> str | None:
        """Modules put into ``self.attr`` later in ``__init__`` (append/extend/item/+=)."""
        kinds = {self._value_kind(expr) for expr in self._added_values(attr)}
        kinds.discard(None)
        if not kinds:
            return None
        return "parameter" if kinds == {"parameter"} else "module"

    def _added_values(self, attr: str) -> list[ast.AST]:
        """The values put into ``self.attr`` later in ``__init__`` (append/extend/item/+=)."""
        values: list[ast.AST] = []
        for node in ast.walk(self.init):
            added: list[ast.AST] = []
            found = method_call(node)
            if (
                found is not None
                and found[0] in ("append", "extend", "insert")
                and self._self_attribute(found[1]) == attr
            ):
                args = node.args[-1:] if found[0] == "insert" else node.args
                for arg in args:
                    added.extend(arg.elts if found[0] == "extend" and isinstance(arg, (ast.List, ast.Tuple)) else [arg])
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and self._self_attribute(target.value) == attr:
                        added.append(node.value)
            elif isinstance(node, ast.AugAssign) and self._self_attribute(node.target) == attr:
                if isinstance(node.value, (ast.List, ast.Tuple)):
                    added.extend(node.value.elts)
            values.extend(added)
        return values

    def _installed_elsewhere(self, attr: str) -> bool:
        """Every value put into ``self.attr`` is a local that ``__init__`` also sets as an attribute
        of some object (``set_module_by_path(self.net, path, wrapper)``, ``setattr``,
        ``add_module``), which registers it there: the container is only an index of modules
        registered elsewhere."""
        values = self._added_values(attr)
        return bool(values) and all(isinstance(v, ast.Name) and self._installed(v) for v in values)

    def _installed(self, value: ast.Name) -> bool:
        origins = self.flow.origins(value)
        return None not in origins and any(
            isinstance(node, ast.Call)
            and any(
                isinstance(a, ast.Name)
                and a.id == value.id
                and self.flow.origins(a) == origins
                and installs_as_attribute(self.ctx, node, a)
                for a in [*node.args, *(k.value for k in node.keywords)]
            )
            for node in ast.walk(self.init)
        )

    def _value_kind(self, expr: ast.AST) -> str | None:
        """Module kind of ``expr`` itself or of every value a local name may hold."""
        if isinstance(expr, ast.Name):
            origins = self.flow.origins(expr)
            kinds = {self._module_kind(o) if o is not None else None for o in origins}
            return kinds.pop() if len(kinds) == 1 else None
        return self._module_kind(expr)

    # ----- whether the container gets registered anyway --------------------------------------------
    def _wrapped_later(self, attr: str) -> bool:
        """``self.attr`` passed to a call anywhere in the class (``nn.Sequential(*self.attr)``,
        ``nn.Parameter(self.attr)``, a helper), other than builtins that only inspect it; or its
        entries handed to a registering torch container (``nn.ModuleList(list(self.convs.values()))``,
        ``nn.Sequential(*self.blocks.values())``), which registers the same objects."""
        for call in self._class_calls:
            if isinstance(call.func, ast.Name) and call.func.id in INSPECTING_BUILTINS:
                continue
            registering = self.ctx.call_qualname(call) in torch_names.REGISTERING_CONTAINERS
            for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                if isinstance(arg, ast.Starred):
                    arg = arg.value
                if self._self_attribute(arg) == attr:
                    return True
                if registering and self._self_attribute(_container_of_entries(arg)) == attr:
                    return True
        return False

    def _gradient_probe(self, attr: str) -> bool:
        """``self.attr`` is differentiated against and never trained: it is among the ``inputs`` of
        ``torch.autograd.grad(...)`` (a penalty on the gradient with respect to a dummy scale), and
        every other use in the file only reads it inside this class as an operand: no ``.grad``,
        ``.data`` or method of its own, no list handed on (an optimizer's parameters), no new value."""
        probed = False
        for node in self.ctx.nodes(ast.Attribute):
            if node.attr != attr:
                continue
            if self._self_attribute(node) != attr or not any(a is self.cls for a in self.ctx.ancestors(node)):
                return False  # used where this class's code does not show how
            if self._among_gradient_inputs(node):
                probed = True
            elif not isinstance(node.ctx, ast.Load):
                if self.ctx.enclosing_function(node) is not self.init:
                    return False  # a new value outside `__init__`: updated by hand
            elif isinstance(self.ctx.parent(node), ast.Attribute) or any(
                isinstance(above, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred))
                for above in self._ancestors_in_statement(node)
            ):
                return False  # `.grad`/`.data`/its own methods, or gathered into a list of parameters
        return probed

    def _reset_by_hand(self, attr: str) -> bool:
        """A method that ``__init__`` does not run resets ``self.attr`` to a value not made from the old
        one (``self.context[:] = 0``, ``self.state = torch.zeros(...)``, ``self.context.zero_()``): the
        class sets the tensor's value itself on each use (a per-task context, a carried state), which
        no optimizer trains -- an optimizer's parameter wiped by its own module between steps would
        never learn. An update from the old value (``self.w = self.w - lr * g``) is training by hand."""
        run_by_init = self._methods_run_by_init
        for node in ast.walk(self.cls):
            if self._self_attribute(node) != attr:
                continue
            method = self.ctx.enclosing_function(node)
            if method is None or method in run_by_init:
                continue
            parent = self.ctx.parent(node)
            written = node if not isinstance(node.ctx, ast.Load) else None
            if isinstance(parent, ast.Subscript) and parent.value is node and not isinstance(parent.ctx, ast.Load):
                written = parent
            if written is not None:
                assign = self.ctx.parent(written)
                if isinstance(assign, (ast.Assign, ast.AnnAssign)) and not self._reads(assign.value, attr):
                    return True
                continue
            call = self.ctx.parent(parent) if isinstance(parent, ast.Attribute) else None
            found = method_call(call)
            if (
                found is not None
                and found[1] is node
                and found[0] in torch_names.VALUE_RESETTING_METHODS
                and not any(self._reads(a, attr) for a in call.args)
            ):
                return True
        return False

    def _reads(self, expr: ast.AST | None, attr: str) -> bool:
        """``expr`` reads ``self.attr``: a new value made from the old one is an update, not a reset."""
        return expr is not None and any(self._self_attribute(n) == attr for n in ast.walk(expr))

    @cached_property
    def _methods_run_by_init(self) -> set[ast.AST]:
        """``__init__`` and the methods of this class it calls on itself, directly or through each other."""
        methods = {s.name: s for s in self.cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        run, pending = {self.init}, [self.init]
        while pending:
            for node in ast.walk(pending.pop()):
                found = method_call(node)
                if found is None or not (isinstance(found[1], ast.Name) and found[1].id == self.receiver):
                    continue
                method = methods.get(found[0])
                if method is not None and method not in run:
                    run.add(method)
                    pending.append(method)
        return run

    def _among_gradient_inputs(self, node: ast.AST) -> bool:
        parent = self.ctx.parent(node)
        holder = parent if isinstance(parent, (ast.List, ast.Tuple)) else node
        call = self.ctx.parent(holder)
        if not isinstance(call, ast.Call) or self.ctx.call_qualname(call) not in torch_names.GRADIENT_FUNCTIONS:
            return False
        inputs = keyword(call, "inputs")
        return holder is (inputs.value if inputs is not None else call.args[1] if len(call.args) > 1 else None)

    def _ancestors_in_statement(self, node: ast.AST) -> Iterator[ast.AST]:
        for above in self.ctx.ancestors(node):
            if isinstance(above, ast.stmt):
                return
            yield above

    def _only_picked_into_registered(self, attr: str, kind: str) -> bool:
        """``self.attr`` is a lookup table of candidates: every read of it picks one entry
        (``self.attr[key]``, ``self.attr.get(key)``) that is then stored in another attribute of the
        module (directly, through a local or a method's return), which registers it. Filling the
        container, and looking at its size or, for a dict, its keys (``len``, ``sorted(table)``,
        ``key in table``, ``.keys()``) reach no entry; any other read (iterating a list or the
        values, calling an entry straight from it) leaves the entries it reaches unregistered."""
        reads = 0
        for node in ast.walk(self.cls):
            if not (
                isinstance(node, ast.Attribute)
                and node.attr == attr
                and isinstance(node.value, ast.Name)
                and node.value.id == self.receiver
                and isinstance(node.ctx, ast.Load)
            ):
                continue
            parent = self.ctx.parent(node)
            if isinstance(parent, ast.Attribute) and parent.attr in _FILLING_METHODS:
                continue
            if _reaches_no_entry(node, parent, kind):
                continue
            if isinstance(parent, ast.Subscript) and parent.value is node:
                entry = parent
                if not isinstance(entry.ctx, ast.Load):
                    continue  # `self.attr[key] = module`: filling it
            elif isinstance(parent, ast.Attribute) and parent.attr == "get":
                entry = self.ctx.parent(parent)
                if not isinstance(entry, ast.Call):
                    return False
            else:
                return False
            if not any(
                isinstance(target, ast.Attribute) and self._self_attribute(target) not in (None, attr)
                for target in stored_into(self.ctx, entry)
            ):
                return False
            reads += 1
        return reads > 0

    def _is_registering_call(self, call: ast.Call) -> bool:
        found = method_call(call)
        if found is not None and found[0] in torch_names.PARAMETER_REGISTERING_METHODS:
            return True
        return isinstance(call.func, ast.Name) and call.func.id == "setattr"

    def _self_attribute(self, expr: ast.AST) -> str | None:
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == self.receiver:
            return expr.attr
        return None


def _container_of_entries(expr: ast.AST) -> ast.AST | None:
    """The container whose entries ``expr`` hands on as they are: ``table.values()``, ``list(...)``,
    ``tuple(...)`` of them, ``[*table.values()]``, ``[m for m in table.values()]``."""
    while True:
        if isinstance(expr, ast.Starred):
            expr = expr.value
        elif isinstance(expr, (ast.List, ast.Tuple)) and len(expr.elts) == 1 and isinstance(expr.elts[0], ast.Starred):
            expr = expr.elts[0].value
        elif isinstance(expr, (ast.ListComp, ast.GeneratorExp)) and len(expr.generators) == 1:
            loop = expr.generators[0]
            if not (isinstance(loop.target, ast.Name) and isinstance(expr.elt, ast.Name)):
                return None
            if expr.elt.id != loop.target.id or loop.ifs:
                return None
            expr = loop.iter
        elif _called(expr) in ("list", "tuple") and len(expr.args) == 1 and not expr.keywords:
            expr = expr.args[0]
        elif _called(expr) == "values" and isinstance(expr.func, ast.Attribute) and not expr.args:
            expr = expr.func.value
        else:
            return expr


def _reaches_no_entry(node: ast.AST, parent: ast.AST, kind: str) -> bool:
    """Whether reading the container ``node`` this way looks at no entry: its size, its printout,
    a membership test, or (a dict) its keys."""
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and node in parent.args:
        looks = INSPECTING_BUILTINS if kind == "dict" else _SIZE_BUILTINS
        return parent.func.id in looks
    if isinstance(parent, ast.Compare) and node in parent.comparators:
        return all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return kind == "dict" and isinstance(parent, ast.Attribute) and parent.attr == "keys"


def _container_kind(value: ast.AST) -> str:
    """How the message names the container: dict, tuple or list."""
    if isinstance(value, ast.BinOp):
        value = value.left if isinstance(value.left, (ast.List, ast.Tuple)) else value.right
    if isinstance(value, (ast.Dict, ast.DictComp)) or _called(value) in ("dict", "OrderedDict"):
        return "dict"
    if isinstance(value, ast.Tuple) or _called(value) == "tuple":
        return "tuple"
    return "list"


def _called(expr: ast.AST) -> str | None:
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name):
            return expr.func.id
        if isinstance(expr.func, ast.Attribute):
            return expr.func.attr
    return None


def _is_true(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True
