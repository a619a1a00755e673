"""TL007 train-mode-not-restored."""

from __future__ import annotations

import ast

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.restore import restore_analysis


@register
class TrainModeNotRestored(Rule):
    code = "TL007"
    name = "train-mode-not-restored"
    severity = "error"
    summary = "The model is switched to eval mode inside the training loop and never back to train mode."
    what = """
        Reports a `model.eval()` (or `model.train(False)`), or the call into a
        function that makes it, inside a training loop when no `model.train()`
        follows it before the loop's next training step: not later in the
        iteration, not at the top of the next one, not at the top of the training
        function the loop calls. EMA, teacher and target copies that are never
        trained are not reported, also when a flag that holds one value picks the
        copy to evaluate (`--use-ema` declared `action="store_true", default=True`,
        then `if args.use_ema: test_model = ema_model` `else: test_model = model`), nor is the switch of a separate network built in
        the iteration for evaluation (`net = Detector(deploy=True);
        net.load_state_dict(model.state_dict()); evaluate(net)`: another object,
        which no optimizer steps), nor is an unconditional `model.eval()` placed
        before the iteration's first training step (fine-tuning with frozen
        batch-norm statistics on purpose) -- then the training code owns the mode,
        and an evaluation switching the model to eval before it changes nothing (a
        linear probe's `train()` that starts with `backbone.eval()`) -- nor an eval
        switch followed by `break` or by a call that ends the process (`evaluate();
        exit()`, also in a helper of the file it calls), nor a model not shown to behave differently in
        the two modes (only dropout, batch norm and the other mode-dependent layers
        of TL005, reached through data flow, count: a model of `Linear`/`ReLU`
        layers, or one the linter cannot see into, is not reported; a model parameter no
        call site of the file fills is followed to the scripts of the project that call
        the function, and a class that keeps a constructor argument on `self`,
        `Seq2Seq(encoder, decoder)`, holds the mode-dependent layers of what it is given). A switch under
        a condition inside the training
        function (`if freeze_bn: model.eval()`) configures training; it is not an
        evaluation. `x.eval()` where `x` is an instance of a project class that does
        not derive from `nn.Module` (an environment's own evaluation flag) is no
        switch at all, and `model.train(is_train)` before the first training step,
        with a flag that may be true, restores the mode. So does a method of the
        model's own class (`probe.train_custom()`, the class shown by data flow) that
        calls `self.train()` or `.train()` on a submodule (the trained head of a
        frozen encoder).
    """
    why = """
        After the first validation the model stays in eval mode for the rest of
        training: dropout is off (the model overfits as if it had none) and batch
        norm stops updating its running statistics and normalises with stale ones.
        Nothing fails; the run is just quietly worse after the first epoch.
    """
    example = """
        import torch
        import torchvision

        model = torchvision.models.resnet18(num_classes=10)  # batch norm: the mode matters
        for epoch in range(epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                val_loss = sum(criterion(model(x), y) for x, y in val_loader)
    """
    instead = """
        import torch
        import torchvision

        model = torchvision.models.resnet18(num_classes=10)  # batch norm: the mode matters
        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                val_loss = sum(criterion(model(x), y) for x, y in val_loader)
    """
    VALID = [
        """
import torch

@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = [model(x, y)[1] for x, y in val_batches]
    model.train()
    return sum(losses)

while True:
    if it % 100 == 0:
        estimate_loss()
    logits, loss = model(X, Y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
""",
    ]
    INVALID = [
        """
import torch

model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.BatchNorm1d(10), torch.nn.Linear(10, 2))
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    model.eval()  # expect: TL007
    with torch.no_grad():
        for x, y in val_loader:
            criterion(model(x), y)
""",
        """
import torch
import torchvision

model = torchvision.models.mobilenet_v3_small()

def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return [model(x) for x, _ in loader]

for step, (x, y) in enumerate(train_loader):
    optimizer.zero_grad()
    criterion(model(x), y).backward()
    optimizer.step()
    if step % 500 == 0:
        validate(model, val_loader)  # expect: TL007
""",
    ]

    def check(self, ctx):
        for found in restore_analysis(ctx).unrestored:
            yield self.report(found.site, self._message(ctx, found), evidence=found)

    @staticmethod
    def _message(ctx, found) -> Message:
        model = found.target or "model"
        switch = ast.unparse(found.switch)
        if found.site is found.switch:
            what = f"`{switch}`"
        else:
            what = f"`{ast.unparse(found.site.func)}(...)` (which calls `{switch}` at line {found.switch.lineno})"
        return Message(
            f"{what} switches the model to eval mode inside the training loop at line {found.loop.lineno}",
            why="nothing switches it back before the next training step, so training continues without dropout "
            "and with frozen batch-norm statistics",
            help=f"call `{model}.train()` at the start of each epoch (or right after evaluating)",
        )
