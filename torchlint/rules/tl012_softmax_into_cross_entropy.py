"""TL012 softmax-into-cross-entropy."""

from __future__ import annotations

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.activations import activations


@register
class SoftmaxIntoCrossEntropy(Rule):
    code = "TL012"
    name = "softmax-into-cross-entropy"
    severity = "error"
    summary = "Cross-entropy is given probabilities (softmax output) instead of logits."
    what = """
        Reports an `nn.CrossEntropyLoss` or `F.cross_entropy` call whose input is the
        output of `softmax` — `F.softmax`, `torch.softmax`, `x.softmax(dim)`, an
        `nn.Softmax` module, or a model of the project whose last layer is `nn.Softmax`
        (or whose `forward` always returns a softmax) — or of `log_softmax`. The value
        is followed through variables, `self` attributes and shape-only operations
        (`.view`, `.squeeze`, indexing). A softmax computed for metrics or logging next
        to a loss on the logits is fine. A model whose layers the code replaces after
        building it (`model.fc[-1] = nn.Identity()`) is not judged by its class.
    """
    why = """
        `CrossEntropyLoss` applies `log_softmax` to its input itself. Given
        probabilities, it computes the softmax of the softmax: every input lies in
        [0, 1], so the loss can never get near zero, its gradients shrink by orders of
        magnitude and training stalls or converges to a poor model, with no error.
        Given `log_softmax` output the value happens to be right but the normalisation
        runs twice and the intent (`nll_loss`) is hidden.
    """
    example = """
        import torch.nn as nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def forward(self, x):
                return F.softmax(self.fc(x), dim=1)


        model = Net()
        loss = F.cross_entropy(model(x), y)
    """
    instead = """
        import torch.nn as nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def forward(self, x):
                return self.fc(x)  # logits; apply softmax only for predictions


        model = Net()
        loss = F.cross_entropy(model(x), y)
        probs = F.softmax(model(x), dim=1)  # when probabilities are needed
    """
    VALID = [
        """
import torch.nn as nn
import torch.nn.functional as F
def step(model, x, y):
    logits = model(x)
    probs = F.softmax(logits, dim=-1)
    loss = F.cross_entropy(logits, y)
    acc = (probs.argmax(-1) == y).float().mean()
    return loss, acc
""",
        """
import torch.nn.functional as F
def step(model, x, y):
    logp = F.log_softmax(model(x), dim=1)
    return F.nll_loss(logp, y)
""",
    ]
    INVALID = [
        """
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 3), nn.Softmax(dim=1))
    def forward(self, x):
        return self.body(x)
model = Net()
criterion = nn.CrossEntropyLoss()
def train(x, y):
    out = model(x)
    loss = criterion(out, y)  # expect: TL012
""",
        """
import torch
import torch.nn.functional as F
def step(logits, y):
    probs = torch.softmax(logits, dim=-1)
    return F.cross_entropy(probs.view(-1, probs.size(-1)), y.view(-1))  # expect: TL012
""",
    ]

    def check(self, ctx):
        tracker = activations(ctx)
        kinds = frozenset({"softmax", "log_softmax"})
        for found in tracker.activation_inputs(
            kinds, torch_names.CROSS_ENTROPY_FUNCTIONS, torch_names.CROSS_ENTROPY_MODULES
        ):
            yield self.report(found.loss, self._message(ctx, found), evidence=found)

    @staticmethod
    def _message(ctx, found) -> Message:
        value = ctx.quote(found.input)
        if len(value) > 40:
            value = value[:37] + "..."
        source = f"{found.kind} at {found.producer_place(ctx)}"
        if found.kind == "softmax":
            return Message(
                f"cross-entropy is given probabilities: `{value}` is already softmax output ({source})",
                why="cross-entropy applies `log_softmax` itself, so the loss is computed on probabilities, "
                "gradients vanish and training stalls",
                help="pass the logits (drop the softmax, keep it only for predictions)",
            )
        return Message(
            f"cross-entropy is given log-probabilities: `{value}` is already log_softmax output ({source})",
            why="cross-entropy applies `log_softmax` itself, a second time: the loss comes out the same, "
            "but the normalisation runs twice and hides the intended `nll_loss`",
            help="use `F.nll_loss` / `nn.NLLLoss` on log-probabilities, or pass the logits to cross-entropy",
        )
