"""TL003 model-in-loop."""

from __future__ import annotations

import ast

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.roles import Role
from torchlint.torchmodel.runs import describe_loop, run_analysis


@register
class ModelInLoop(Rule):
    code = "TL003"
    name = "model-in-loop"
    severity = "error"
    summary = "A model is built inside the loop that trains it, so its weights restart every iteration."
    what = """
        Reports the constructor of a model — a class of this file deriving from
        `nn.Module`, a `torch.nn` layer with weights, `torchvision.models.*`,
        `timm.create_model(...)`, `AutoModel*.from_pretrained(...)`, or a local
        function returning one — that runs inside the loop whose iterations continue
        one training run: per batch, per step or per epoch, including inside a
        function the epoch loop calls and in a loop nested in the epoch loop (a
        data-shard loop). An outer loop whose body is a whole training
        run (folds, trials, seeds, hyper-parameter values, tasks, federated rounds)
        is not reported, including one that hands the new model to a function, of
        this file or another, that builds its own optimizer over it and trains it, or
        builds the optimizer through a factory drawn from a table whose every entry
        builds one over what it is handed (`for name, make in optimizers.items():`
        with entries `lambda p: optim.SGD(p, lr=0.01)`);
        nor are loss modules, weightless layers (`nn.ReLU()`, `nn.Dropout()`) or
        `copy.deepcopy(model)`. Nor is a construction built on first use
        only: under a test that its holder is still empty (`if self.crit is None:`,
        `if not hasattr(self, "opt"):`, `if key not in cache:`) in a block that fills that
        holder, including a getter `opt = get_optimizer(opt, ...)` that builds only
        `if opt is None:` and returns it, unless the loop empties the holder again.
    """
    why = """
        Each iteration trains a freshly initialised network and throws away what
        the previous iterations learned; the loss never goes down across epochs. If
        the optimizer was built once, before the loop, it even keeps updating the
        parameters of the first model, which nothing uses any more.
    """
    example = """
        import torch
        from torch import nn

        for epoch in range(num_epochs):
            model = nn.Linear(784, 10)  # a new, untrained model every epoch
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
    """
    instead = """
        import torch
        from torch import nn

        model = nn.Linear(784, 10)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(num_epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
    """
    VALID = [
        """
import torch
import torch.nn as nn
from sklearn.model_selection import KFold

def fit(model, opt, loader, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

for fold, (tr, va) in enumerate(KFold(5).split(data)):
    model = nn.Linear(10, 2)
    opt = torch.optim.Adam(model.parameters())
    fit(model, opt, make_loader(tr), epochs=3)
""",
        """
import torch
import torch.nn as nn

model = nn.Linear(10, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    criterion = nn.CrossEntropyLoss()
    act = nn.ReLU()
    opt.zero_grad()
    criterion(act(model(x)), y).backward()
    opt.step()
""",
    ]
    INVALID = [
        """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 2)
    def forward(self, x):
        return self.fc(x)

for epoch in range(10):
    model = Net()  # expect: TL003
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
""",
        """
import torch
import torchvision

opt = None
for images, labels in train_loader:
    model = torchvision.models.resnet18(num_classes=10)  # expect: TL003
    if opt is None:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    ]

    def check(self, ctx):
        for call, found in run_analysis(ctx).rebuilt(Role.MODEL):
            yield self.report(call, self._message(ctx, call, found), evidence=found)

    @staticmethod
    def _message(ctx, call, found) -> Message:
        text = ast.unparse(call.func) + "(...)"
        where = describe_loop(ctx, found.loop)
        if found.via:
            where += f", through the call at line {found.via[0].lineno}"
        if found.partner_rebuilt:
            consequence = "so every iteration trains a freshly initialised network"
        else:
            consequence = "and the optimizer built outside the loop keeps updating the old model's parameters"
        return Message(
            f"`{text}` builds a new model in every iteration of {where}",
            why=f"the loop continues one training run: the weights learned so far are thrown away, {consequence}",
            help="build the model once, before the loop",
        )
