"""TL020 sigmoid-into-bce."""

from __future__ import annotations

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.activations import activations


@register
class SigmoidIntoBCE(Rule):
    code = "TL020"
    name = "sigmoid-into-bce"
    severity = "error"
    summary = "BCE-with-logits is given sigmoid output, so the sigmoid is applied twice."
    what = """
        Reports an `nn.BCEWithLogitsLoss` or `F.binary_cross_entropy_with_logits` call
        whose input is the output of `sigmoid` — `torch.sigmoid`, `F.sigmoid`,
        `x.sigmoid()`, an `nn.Sigmoid` module, or a model of the project whose last
        layer is `nn.Sigmoid` (or whose `forward` always returns a sigmoid). The value
        is followed through variables, `self` attributes and shape-only operations. A
        model whose layers the code replaces after building it
        (`model.classifier[-1] = nn.Identity()`) is not judged by its class.
    """
    why = """
        `BCEWithLogitsLoss` applies the sigmoid itself (in a numerically stable form).
        Given probabilities, it squashes them again into [0.5, 0.73]: the loss can
        never reach its minimum, its gradients are wrong and tiny, and the model
        trains badly without any error.
    """
    example = """
        import torch
        import torch.nn.functional as F

        probs = torch.sigmoid(model(x))
        loss = F.binary_cross_entropy_with_logits(probs, y)
    """
    instead = """
        import torch
        import torch.nn.functional as F

        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, y)
        probs = torch.sigmoid(logits)  # only for metrics / thresholds
    """
    VALID = [
        """
import torch
import torch.nn as nn
criterion = nn.BCEWithLogitsLoss()
def step(model, x, y):
    logits = model(x).squeeze(1)
    loss = criterion(logits, y)
    preds = torch.sigmoid(logits) > 0.5
    return loss, preds
""",
        """
import torch
import torch.nn.functional as F
def step(model, x, y):
    return F.binary_cross_entropy(torch.sigmoid(model(x)), y)
""",
    ]
    INVALID = [
        """
import torch
import torch.nn as nn
class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)
        self.act = nn.Sigmoid()
    def forward(self, x):
        return self.act(self.fc(x))
class Trainer:
    def __init__(self):
        self.netD = D()
        self.criterion = nn.BCEWithLogitsLoss()
    def step(self, x, y):
        return self.criterion(self.netD(x).view(-1), y)  # expect: TL020
""",
        """
import torch.nn.functional as F
def step(logits, y):
    p = logits.sigmoid()
    return F.binary_cross_entropy_with_logits(p, y)  # expect: TL020
""",
    ]

    def check(self, ctx):
        tracker = activations(ctx)
        for found in tracker.activation_inputs(
            frozenset({"sigmoid"}), torch_names.BCE_WITH_LOGITS_FUNCTIONS, torch_names.BCE_WITH_LOGITS_MODULES
        ):
            yield self.report(found.loss, self._message(ctx, found), evidence=found)

    @staticmethod
    def _message(ctx, found) -> Message:
        value = ctx.quote(found.input)
        if len(value) > 40:
            value = value[:37] + "..."
        return Message(
            f"BCE-with-logits is given probabilities: `{value}` is already sigmoid output "
            f"(sigmoid at {found.producer_place(ctx)})",
            why="BCE-with-logits applies `sigmoid` itself, so the sigmoid is applied twice and the loss and its "
            "gradients are wrong",
            help="pass the logits, or use `nn.BCELoss` / `F.binary_cross_entropy` on probabilities",
        )
