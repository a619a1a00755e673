"""TL005 eval-without-eval-mode."""

from __future__ import annotations

import ast
from dataclasses import replace

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.evaluation import NOT_REACHED, evaluation_analysis
from torchlint.torchmodel.explicit_train_mode import switched_to_train_for


@register
class EvalWithoutEvalMode(Rule):
    code = "TL005"
    name = "eval-without-eval-mode"
    severity = "warning"
    summary = "Evaluation code runs the model while it is still in training mode."
    what = """
        Reports the first model call of evaluation code — a function named for
        evaluation (`validate`, `evaluate`, `test`, `estimate_loss`, `predict`,
        `infer`...), a loop over validation/test data (`for x, y in val_loader`), a
        function the training loop calls that runs the model over data without
        training it, a function that runs the model on one batch drawn from
        evaluation data (`next(iter(val_loader))`), or the evaluation path of a
        function that serves both phases (`run_epoch(model, loader, optimizer,
        mode)` called with `"val"`, `_run_batch(..., train=False)`, read with that
        value: `model.train(mode == "train")` counts) — when no `model.eval()` /
        `model.train(False)` reaches it (a LightningModule's `model.freeze()`, which calls
        `self.eval()`, counts, and its `unfreeze()` as `model.train()`; only on a model built
        from a `LightningModule` subclass, loaded by its `load_from_checkpoint`, or a parameter
        annotated with one, not another object's `freeze`): not
        earlier in the function, not in a context manager around it, and not before
        the calls into it in this file. Evaluation runs a model trained or loaded in
        this program on data: a call on synthetic input only (`net(torch.randn(2, 3,
        32, 32))`, a shape probe or warm-up, also through a parameter that every call site
        of the function in the file fills with such a tensor; or on a collection of values written in
        the code, such as a tokenizer's encoding of two literal sentences) and a
        freshly built model that nothing trains, loads or hands on are not
        evaluation, nor are unit tests (`test_*` functions that assert,
        `unittest.TestCase` classes and their mixins, helpers that only they call),
        whatever the file's path. A model starts in the mode its loader gives it: one
        from a loader documented to return eval mode (`X.from_pretrained(...)`), also
        handed through helpers, moves and `DataParallel`/`DDP` wrappers, is in eval
        mode unless a `.train()` of this program may reach it (one that runs only after
        the evaluation, in the same block as the load, does not) or it is handed to code
        the linter cannot read (a library trainer); one from `torch.hub.load(...)` is
        the hub entry point's business. Only a model shown to behave differently in the two modes is
        reported: data flow takes it to dropout, batch norm, an instance norm
        tracking running statistics, a recurrent or attention layer given a
        dropout, a class (through its bases and the helpers that build its layers)
        that builds one or reads `self.training` -- judged with the constants its
        constructions pass, so a layer built only in a constructor branch they rule out
        (`Block(..., resample="down")` for a `BatchNorm2d` under `if resample == "up":`, a
        norm factory given `"layer"`) does not count -- or a library constructor
        documented to (torchvision's ResNets, a batch-norm `timm` family, a Hugging
        Face `from_pretrained` of a class whose configuration has dropout). A model
        the linter cannot see into (a parameter no call site of the file fills, a
        class of another package) is not reported, nor one of `Linear`/`ReLU`
        layers, one whose only functional dropout or batch norm is told no mode
        (`F.dropout(x, 0.5)` is on in both modes: TL011 reports that; a value such as
        `training=self.training` makes it follow the mode), an `nn.RNN` with its
        default dropout 0, or a recurrent layer whose
        `num_layers` is 1 on every path (its dropout acts between stacked layers
        only; an unknown count may be more, and is reported). A parameter holds what
        any call site passes (of the `def` that call runs, when a notebook redefines
        the function), a dropout rate from a constructor parameter what its callers
        give it; an evaluation that runs several models (an encoder, then a decoder)
        is reported when one of them depends on the mode, and the message names it. Lightning's
        `validation_step`/`test_step` and other framework hooks
        are not reported: the framework switches modes. A function that receives its
        model from a caller outside this file is not judged, nor a model call right after an
        explicit `model.train()` on every path to it (nothing in between runs, trains or
        hands on that model): training mode is asked for on purpose (a test comparing two
        batch-norm layers in training mode, Monte Carlo dropout).
    """
    why = """
        In training mode dropout keeps zeroing activations and batch norm normalises
        with the statistics of the current batch and keeps updating its running
        averages with evaluation data. Validation metrics come out noisy and too low,
        depend on the batch size, and the evaluation data leaks into the model's
        batch-norm statistics.
    """
    example = """
        import torch
        import torchvision

        model = torchvision.models.resnet18(num_classes=10)  # batch norm: the mode matters


        def evaluate(model, loader):
            correct = 0
            with torch.no_grad():
                for x, y in loader:
                    correct += (model(x).argmax(1) == y).sum().item()
            return correct


        for epoch in range(epochs):
            train_one_epoch(model, optimizer, train_loader)  # calls model.train()
            evaluate(model, val_loader)
    """
    instead = """
        import torch


        def evaluate(model, loader):
            model.eval()
            correct = 0
            with torch.no_grad():
                for x, y in loader:
                    correct += (model(x).argmax(1) == y).sum().item()
            return correct
    """
    VALID = [
        """
import torch

def train(model, loader, opt):
    model.train()
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

def test(model, loader):
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            out = model(x)

for epoch in range(3):
    train(model, train_loader, opt)
    test(model, test_loader)
""",
    ]
    INVALID = [
        """
import torch

model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.Dropout(0.5), torch.nn.Linear(10, 2))

def train(model, loader, opt):
    model.train()
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

def test(model, loader):
    with torch.no_grad():
        for x, y in loader:
            out = model(x)  # expect: TL005

for epoch in range(3):
    train(model, train_loader, opt)
    test(model, test_loader)
""",
        """
import torch
import torchvision

model = torchvision.models.resnet18(num_classes=10)
for epoch in range(10):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        for x, y in val_loader:
            val_loss = criterion(model(x), y)  # expect: TL005
""",
    ]

    def check(self, ctx):
        analysis = evaluation_analysis(ctx)
        for unit in analysis.units:
            # The finding is about the evaluation: any model it runs that depends on the mode makes
            # it depend on the mode; the message names that model.
            dependent = analysis.mode_dependent_call(unit)
            if dependent is None:
                continue
            verdict = analysis.eval_mode(unit, dependent)
            if verdict.reached is NOT_REACHED and not switched_to_train_for(ctx, dependent):
                # (an explicit `.train()` right before the forward asks for training mode on purpose)
                # The fix switches the model that depends on the mode (evidence: the unit seen from it).
                evidence = replace(unit, first_call=dependent)
                yield self.report(unit.first_call, self._message(ctx, unit, verdict, dependent), evidence=evidence)

    @staticmethod
    def _message(ctx, unit, verdict, dependent) -> Message:
        call = f"`{ast.unparse(dependent.func)}(...)`"
        if dependent is not unit.first_call:
            call += f" (line {dependent.lineno})"
        where = unit.label
        if verdict.site is not None:
            where += f", called at line {verdict.site.lineno} where no `.eval()` precedes it"
        return Message(
            f"{call} evaluates in training mode in {where}",
            why="the model is still in training mode: dropout stays active and batch norm uses and updates "
            "batch statistics",
            help="call `model.eval()` before evaluating (and `model.train()` before training again)",
        )
