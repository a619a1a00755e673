"""TL008's fix: `.view(...)` -> `.reshape(...)` on the reported call."""

from __future__ import annotations

from torchlint.engine.finding import SAFE, Fix
from torchlint.engine.fixers import RuleFix, register_fix


@register_fix
class ViewToReshape(RuleFix):
    codes = ("TL008",)
    applicabilities = (SAFE,)
    summary = "Replaces the reported `.view(...)` with `.reshape(...)`."
    safety = """
        `reshape` returns the very same view wherever `view` succeeds and copies only where
        `view` would raise, so nothing that ran before changes.
    """
    EXAMPLES = [
        (
            """
import torch
def rows_of(conv, x):
    feat = conv(x)
    n, c, h, w = feat.shape
    return feat.permute(0, 2, 3, 1).view(n, h, w * c)  # expect: TL008
""",
            """
import torch
def rows_of(conv, x):
    feat = conv(x)
    n, c, h, w = feat.shape
    return feat.permute(0, 2, 3, 1).reshape(n, h, w * c)  # expect: TL008
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        call = diagnostic.node
        return Fix(
            "Use `.reshape(...)`", applicability=SAFE, build=lambda edit: edit.rename_attribute(call.func, "reshape")
        )
