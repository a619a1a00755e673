"""Mixed precision facts shared by the AMP rules: which autocast regions run in
float16, and which backward passes go through a ``GradScaler``.

Autocast spellings differ in their default dtype, so the *spelling* matters here
and the canonical name (which folds ``torch.cuda.amp.autocast`` into
``torch.autocast``) is not enough:

* ``torch.cuda.amp.autocast()``        -> float16 unless ``dtype=`` says otherwise
* ``torch.cpu.amp.autocast()``         -> bfloat16 unless ``dtype=`` says otherwise
* ``torch.autocast("cuda")``           -> float16 (CUDA's default)
* ``torch.autocast("cpu")``            -> bfloat16 (CPU's default)
* ``torch.autocast(device, dtype=...)`` -> whatever ``dtype`` names, when it is a literal dtype

Anything the linter cannot tell for sure (a dtype held in a variable, a device
type that is not a string literal, ``enabled=False``) is "unknown", and the rules
stay silent on unknowns.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import argument
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.roles import Role, object_roles

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.events import Event

FLOAT16 = "float16"
BFLOAT16 = "bfloat16"

_DTYPES = {
    "torch.float16": FLOAT16,
    "torch.half": FLOAT16,
    "torch.bfloat16": BFLOAT16,
    "torch.float32": "float32",
    "torch.float": "float32",
}
# Raw (un-canonicalized) autocast spellings -> (default device, positional parameter names).
_AUTOCAST_SIGNATURES = {
    "torch.autocast": (None, ("device_type", "dtype", "enabled")),
    "torch.amp.autocast": (None, ("device_type", "dtype", "enabled")),
    "torch.amp.autocast_mode.autocast": (None, ("device_type", "dtype", "enabled")),
    "torch.cuda.amp.autocast": ("cuda", ("enabled", "dtype")),
    "torch.cuda.amp.autocast_mode.autocast": ("cuda", ("enabled", "dtype")),
    "torch.cpu.amp.autocast": ("cpu", ("enabled", "dtype")),
    "torch.cpu.amp.autocast_mode.autocast": ("cpu", ("enabled", "dtype")),
}
# Default autocast dtype per device type (only the ones we are sure of).
_DEFAULT_DTYPE = {"cuda": FLOAT16, "cpu": BFLOAT16}


@dataclass(frozen=True)
class Autocast:
    call: ast.Call
    device: str | None  # "cuda", "cpu", ... or None when not a literal
    dtype: str | None  # FLOAT16, BFLOAT16, "float32", or None when unknown
    enabled: bool | None  # False only for a literal enabled=False

    @property
    def is_float16(self) -> bool:
        return self.dtype == FLOAT16 and self.enabled is not False


def _argument(call: ast.Call, name: str, params: tuple[str, ...]) -> ast.AST | None:
    return argument(call, params.index(name) if name in params else len(call.args), name)


def autocast_of(ctx: FileContext, expr: ast.AST) -> Autocast | None:
    """Describe ``expr`` when it is a call to one of torch's autocast context managers."""
    if not isinstance(expr, ast.Call):
        return None
    qual = ctx.imports.raw_qualname(expr.func)
    signature = _AUTOCAST_SIGNATURES.get(qual or "")
    if signature is None:
        return None
    device, params = signature
    if device is None:
        device_arg = _argument(expr, "device_type", params)
        if isinstance(device_arg, ast.Constant) and isinstance(device_arg.value, str):
            device = device_arg.value.split(":", 1)[0]
    dtype_arg = _argument(expr, "dtype", params)
    if dtype_arg is not None:
        dtype = _DTYPES.get(ctx.qualname(dtype_arg) or "")
    else:
        dtype = _DEFAULT_DTYPE.get(device or "")
    enabled_arg = _argument(expr, "enabled", params)
    enabled = (
        enabled_arg.value if isinstance(enabled_arg, ast.Constant) and isinstance(enabled_arg.value, bool) else None
    )
    if enabled_arg is None:
        enabled = True
    return Autocast(expr, device, dtype, enabled)


def float16_autocast(ctx: FileContext, item_expr: ast.AST) -> Autocast | None:
    """The float16 autocast a with-item enters, if it certainly is one.

    Follows one level of naming: ``ctx = torch.autocast("cuda")`` then ``with ctx:`` (a name
    assigned once in its scope).
    """
    found = autocast_of(ctx, item_expr)
    if found is None and isinstance(item_expr, ast.Name):
        value = dataflow(ctx).sole_value(item_expr)
        if value is not None:
            found = autocast_of(ctx, value)
    return found if found is not None and found.is_float16 else None


def backward_scaler(ctx: FileContext, event: Event) -> ast.AST | None:
    """The GradScaler expression of ``scaler.scale(loss).backward()`` (also through
    ``scaled = scaler.scale(loss); scaled.backward()``), or None for any other event."""
    if event.kind is not EventKind.BACKWARD:
        return None
    call = event.node
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    inner = call.func.value
    if isinstance(inner, ast.Name):
        inner = dataflow(ctx).sole_value(inner) or inner
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "scale"):
        return None
    owner = inner.func.value
    return owner if object_roles(ctx).role_of(owner) == Role.SCALER else None


def scaled_backward(ctx: FileContext, event: Event) -> bool:
    """Whether a backward event goes through a GradScaler."""
    return backward_scaler(ctx, event) is not None


# Events that show a GradScaler (or a helper wrapping one) is looking after the gradients.
SCALER_EVENT_KINDS = frozenset({EventKind.UNSCALE, EventKind.SCALER_UPDATE, EventKind.OPAQUE_STEP})


def uses_scaler(ctx: FileContext, events) -> bool:
    """Whether a run of events goes through a GradScaler somewhere."""
    roles = object_roles(ctx)
    for event in events:
        if event.kind in SCALER_EVENT_KINDS or scaled_backward(ctx, event):
            return True
        if (
            event.kind is EventKind.STEP
            and isinstance(event.node, ast.Call)
            and isinstance(event.node.func, ast.Attribute)
        ):
            if roles.role_of(event.node.func.value) == Role.SCALER:
                return True
    return False
