"""Mode switches on networks a model wrapper names at run time.

The pix2pix/CycleGAN family (and its many descendants) keeps its networks in attributes
``self.net_G``, ``self.net_D``, lists their names (``self.model_names = ["G", "D"]``) and lets a
base class in another file loop over them: ``net = getattr(self, "net_" + name); net.eval()``
in ``load_networks``, ``eval()`` or ``setup()``. Such a switch may put any attribute whose name
starts with ``"net_"`` in eval mode (``analysis.run_time_names``). When a method the class runs
(its own, or one they reach through ``self.m(...)``, also in project base classes) switches such
an attribute to eval mode -- or to a mode held in a value (``net.train(self.isTrain)``) -- the
mode of ``self.net_G`` where the wrapper evaluates it is not shown to be training: the rules stay
silent. A switch to training mode found this way proves nothing either way.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.nodes import walk_function_body
from torchlint.analysis.run_time_names import methods_run_by, self_attribute_prefix
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import EventKind

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Switches that may leave a network in eval mode: `.eval()`, `.train(False)`, `.train(<a value>)`.
_MAY_EVAL = frozenset({EventKind.EVAL, EventKind.SET_MODE})


def may_switch_to_eval_by_name(ctx: FileContext, cls: ast.ClassDef, attribute: str) -> bool:
    """Some method ``cls`` runs may switch ``self.<attribute>`` to eval mode through a name built
    at run time (see the module docstring)."""
    return any(attribute.startswith(prefix) for prefix in _switched_prefixes(ctx, cls))


def _switched_prefixes(ctx: FileContext, cls: ast.ClassDef) -> frozenset[str]:
    def build() -> frozenset[str]:
        found: set[str] = set()
        for method in methods_run_by(Definition(ctx, cls)):
            found.update(_prefixes_switched_in(method))
        return frozenset(found)

    return ctx.shared(("run-time-named-eval-switches", cls), build)


def _prefixes_switched_in(method: Definition) -> set[str]:
    mctx = method.ctx
    events = call_events(mctx)
    found = set()
    for node in walk_function_body(method.node):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("eval", "train"):
            continue
        event = events.classify(node)
        if event is None or event.kind not in _MAY_EVAL:
            continue
        receiver = node.func.value
        for origin in [receiver, *dataflow(mctx).origins(receiver)]:
            prefix = self_attribute_prefix(origin) if origin is not None else None
            if prefix is not None:
                found.add(prefix)
    return found
