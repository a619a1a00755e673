"""TL006 and a context manager built by a plain function of the project: a function whose every
``return`` hands back a switch that turns autograd off (``torch.no_grad()``,
``torch.inference_mode()``, or another such function's result) switches it off in the ``with``
block around its call, in this file or another (a summary of the function,
``gradmode._returned_context_effect``). One return that hands back something else
(``contextlib.nullcontext()``) leaves autograd on, and the evaluation is reported."""

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL006"

_RUNTIME = """\
import torch


def inference_context(model):
    if getattr(model, "_compiled_for_export", False):
        return torch.no_grad()
    return torch.inference_mode()
"""

_TRAINER = """\
import torch
from .runtime import inference_context


def fit(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        model.eval()
        total = 0.0
        with inference_context(model):
            for x, y in val_loader:
                total += torch.nn.functional.mse_loss(model(x), y).item()
        print(epoch, total / len(val_loader))
"""


def _files(runtime: str) -> dict[str, str]:
    return {"regress/__init__.py": "", "regress/runtime.py": runtime, "regress/trainer.py": _TRAINER}


def test_a_helper_of_another_module_returning_no_grad_or_inference_mode_is_silent(tmp_path):
    assert lint_in_project(tmp_path, _files(_RUNTIME), "regress/trainer.py", CODE) == []


def test_a_helper_that_may_return_a_plain_context_is_reported(tmp_path):
    runtime = _RUNTIME.replace("return torch.no_grad()", "return contextlib.nullcontext()")
    runtime = "import contextlib\n" + runtime
    findings = lint_in_project(tmp_path, _files(runtime), "regress/trainer.py", CODE)
    assert [f.line for f in findings] == [16]
    assert "`model(...)` evaluates with autograd on" in findings[0].message


def test_a_method_returning_the_switch_of_another_helper_is_silent(lint):
    check(
        lint,
        """
        import torch

        def frozen():
            return torch.no_grad()

        class Evaluator:
            def __init__(self, model, loader):
                self.model = model
                self.loader = loader

            def eval_context(self):
                return frozen()

            def evaluate(self):
                self.model.eval()
                correct = 0
                with self.eval_context():
                    for images, labels in self.loader:
                        correct += (self.model(images).argmax(1) == labels).sum().item()
                return correct / len(self.loader.dataset)
        """,
        CODE,
    )


def test_a_method_returning_an_autocast_context_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        class Evaluator:
            def __init__(self, model, loader):
                self.model = model
                self.loader = loader

            def eval_context(self):
                return torch.autocast("cuda", dtype=torch.bfloat16)

            def evaluate(self):
                self.model.eval()
                correct = 0
                with self.eval_context():
                    for images, labels in self.loader:
                        correct += (self.model(images).argmax(1) == labels).sum().item()  # expect: TL006
                return correct / len(self.loader.dataset)
        """,
        CODE,
    )
    assert "`self.model(...)` evaluates with autograd on in `evaluate()`" in findings[0].message
