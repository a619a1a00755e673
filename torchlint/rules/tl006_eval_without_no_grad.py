"""TL006 eval-without-no-grad."""

from __future__ import annotations

import ast

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.evaluation import NOT_REACHED, evaluation_analysis


@register
class EvalWithoutNoGrad(Rule):
    code = "TL006"
    name = "eval-without-no-grad"
    severity = "warning"
    summary = "Evaluation code runs the model with autograd on."
    what = """
        Reports the first model call of evaluation code — a function named for
        evaluation (`validate`, `evaluate`, `test`, `estimate_loss`, `predict`,
        `infer`...), a loop over validation/test data, a function the training
        loop calls that runs the model over data without training it, a function
        that runs it on one batch drawn from evaluation data
        (`next(iter(val_loader))`), or the evaluation path of a function that
        serves both phases (`run_epoch(..., mode)` called with `"val"`, read with
        that value: `torch.set_grad_enabled(mode == "train")` counts, as a `with`
        block or a bare statement before the call; one whose value the path cannot
        decide leaves the mode unknown and is not reported) — when
        autograd is still on there: no `torch.no_grad()`, `torch.inference_mode()` or
        `torch.set_grad_enabled(False)` as a `with` block or decorator, nor such a
        switch as a bare statement before the call (`torch.set_grad_enabled(False)`, or
        an explicit `torch.no_grad().__enter__()`, also of a context manager bound to a
        name first, in force until its `__exit__(...)` or a switch back on), nor a context
        manager that switches it off (a `@contextmanager` of the project whose `yield`
        runs under one, MONAI's `eval_mode`, or a function of the project, in this file or
        another, every `return` of which hands one back: `return torch.no_grad()` or
        `return torch.inference_mode()`; a `with` item a condition picks between such a switch
        and a context manager that is none, `torch.no_grad() if frozen else nullcontext()`,
        leaves the mode to the condition: unknown, not reported), nor a decorator of the project, in this
        file or another, whose wrapper calls the decorated function only under one
        (`def frozen(fn): ... def run(*a, **kw): with torch.no_grad(): return fn(*a, **kw)`;
        a wrapper that only times or logs the call, or calls it once with and once without
        no-grad, leaves autograd on), in the function or around the calls into
        it in this file, nor, in a branch that runs only on PyTorch before 0.4 (`if
        torch.__version__[:3] == "0.3":`, the `else` of `>= "0.4"`), a call fed a
        `Variable(x, volatile=True)`, which recorded no graph there, nor a call fed one
        in a file written for PyTorch before 1.0 (it reads a scalar's `loss.data[0]`, or
        the project pins such a release): it runs either where `volatile` works or where
        its own `.data[0]` raises (elsewhere `volatile` has had no effect since 0.4 and
        is reported). A helper shared with the training step is judged by each path
        into it: a call whose result is backpropagated, or goes into the loss that is
        (`loss_fn(positive, self._negative_scores(users))`), trains, it is no evaluation, and
        a call whose constant arguments select a branch without the model call
        (`infer(model, framework="tf")` for `model(**x) if framework == "pt" else ...`)
        is no path into it, nor is a call under a branch the file's constants rule out
        (`if DUMP_MASKS and epoch % 10 == 0:` with `DUMP_MASKS = False` bound once and
        never rebound), nor one that never runs: after a `return` or a call that ends the
        process (`exit()`, `sys.exit(0)`, `os._exit(0)`) in its block, or after a loop
        every turn of which ends with one (a debugging `exit()` after the first step).
        Evaluation that needs gradients on purpose (it calls
        `backward()` or `torch.autograd.grad`, or marks a tensor `requires_grad`, e.g.
        saliency maps, adversarial examples, losses on input gradients) is not
        reported, nor are
        Lightning's `validation_step`/`test_step`, which the framework runs under
        no-grad. Evaluation runs a model trained or loaded in this program on data:
        shape probes and warm-ups on synthetic input (`torch.randn(...)`,
        `torch.randint(...).bool()`, `torch.arange(n)`, also a parameter that every call site of
        the function in the file fills with one: `estimate_latency(model, torch.rand(8, 3, 224,
        224))`) of a model not yet trained (every
        run of the call after a training step of the program, e.g. a trained generator
        sampled from noise for a grid of images, is evaluation, unless the function around
        the call builds the model itself), calls a test expects to
        raise (inside `with pytest.raises(...)` or `self.assertRaises(...)`), manual
        checks on a collection of values written in the code (a tokenizer's encoding
        of two literal sentences, `torch.tensor([[0.1, 0.9]])`), freshly built models
        nothing trains or loads (also a model parameter that every call site of the
        function in the file fills with one, `validate(Probe(256), val_loader)`, in a
        file that takes no training step; a function no code of the file calls is
        judged by its body), or run only before anything in the program trains
        or loads them (a shape check called before the optimizer exists), unit tests (`test_*` functions, and their private `_test_*` implementations that no code of
        the file but tests calls, that assert on what they compute, themselves or through a helper they call, in this file or another of
        the project (a test class's mixin) — an assert only on the batches a loop reads and the
        configuration, `assert x.size(2) >= args.window` in a `test()` over `test_loader`, is a
        sanity check on the input, not a test —
        `unittest.TestCase` classes, helpers that only they call), checking helpers
        nothing in their file calls whose only outcome is their assertions (they return,
        show and keep nothing: a check, for other files' tests to import, that an exported
        model reproduces the outputs), and models from
        `torch.hub.load(...)`
        (whose entry point may wrap them in its own no-grad), and objects only a
        conventional name calls a model that a function or class of another package the
        linter cannot read builds (`quality_model = make_metric("lpips")`: a metric may
        run its network under no-grad itself) and that the file never uses as a module
        (`.load_state_dict(...)`, `.eval()`, `.parameters()`) are not reported,
        whatever the file's path. Helpers called through an object a test case
        holds (`self.tester.check_prediction(...)`, with `self.tester =
        Tester(self)` in `setUp`) are unit-test helpers too. Code that can only
        see another framework (a file importing TensorFlow, Keras or JAX and
        nothing of PyTorch at its top level, outside functions that import torch
        themselves) runs that framework's models and is not reported; in a file
        importing both, neither is a call of a model that framework built
        (`tf.keras.Sequential(...)`, a `tf.keras.Model` subclass, a `@tf.function`)
        nor one fed only its tensors (`tf.convert_to_tensor(x.cpu().numpy())`). The finding
        points at the first call there that records a graph: a model call whose value is kept (a
        forward made as a statement, its output dropped -- `model(**dummy)  # should not raise`,
        `model(x)[0]` -- or stored in a local name that nothing reads afterwards (`_ = model(x)`
        in a warm-up loop; a read by the next iteration or a nested function counts) frees its
        graph at once and evaluates nothing, unless hooks registered in
        its function, or in its class's `__init__`, capture what the model computes), or a
        model's method that runs it (`model.process(x)`), or a helper of the project
        whose body runs one with autograd on; not a module shown to hold no parameters (a metric,
        a distance written as a module), whose graph depends on the tensors its caller passes, nor a model whose every parameter
        is frozen before the call (`model.requires_grad_(False)`, a loop setting each parameter's
        `requires_grad = False`, a LightningModule's `model.freeze()` -- only on a model built from
        a `LightningModule` subclass, loaded by its `load_from_checkpoint`, or a parameter
        annotated with one -- also in a helper of the file that freezes the model it is handed on
        every path, `predict(x, model)`, with no `unfreeze()` / `requires_grad_()` in between):
        on inputs that do not require grad it records no graph; one fed by a module that is not
        frozen still records, and is reported.
    """
    why = """
        With autograd on, every forward pass records its graph and keeps every
        intermediate activation alive until the outputs are freed: evaluation
        uses several times the memory it needs (often running out of GPU memory
        with the larger evaluation batch size) and runs slower. Accumulating an
        output tensor (`total_loss += loss`) keeps every batch's graph alive.
    """
    example = """
        import torch


        def validate(model, loader):
            model.eval()
            total = 0.0
            for x, y in loader:
                total += criterion(model(x), y).item()
            return total / len(loader)
    """
    instead = """
        import torch


        @torch.no_grad()
        def validate(model, loader):
            model.eval()
            total = 0.0
            for x, y in loader:
                total += criterion(model(x), y).item()
            return total / len(loader)
    """
    VALID = [
        """
import torch

@torch.inference_mode()
def validate(model, loader):
    model.eval()
    return [model(x) for x, _ in loader]
""",
        """
import torch

def saliency(model, loader):
    model.eval()
    for x, y in loader:
        x.requires_grad_(True)
        model(x).gather(1, y[:, None]).sum().backward()
        yield x.grad.abs()
""",
    ]
    INVALID = [
        """
import torch

def validate(model, loader, criterion):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += criterion(model(x), y).item()  # expect: TL006
    return total / len(loader)
""",
        """
import torch

def evaluate(model, loader):
    model.eval()
    return sum((model(x).argmax(1) == y).sum().item() for x, y in loader)  # expect: TL006

for epoch in range(5):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    evaluate(model, val_loader)
""",
    ]

    def check(self, ctx):
        analysis = evaluation_analysis(ctx)
        for unit in analysis.units:
            if unit.needs_grad or not analysis.records_graph(unit):
                continue
            verdict = analysis.no_grad(unit)
            if verdict.reached is NOT_REACHED:
                anchor = analysis.recording_call(unit)
                yield self.report(anchor, self._message(anchor, unit, verdict), evidence=unit)

    @staticmethod
    def _message(anchor, unit, verdict) -> Message:
        call = ast.unparse(anchor.func)
        where = unit.label
        if verdict.site is not None:
            where += f", called at line {verdict.site.lineno} outside any no-grad block"
        if unit.phase is not None:
            fix = f"wrap its forward passes in `with torch.set_grad_enabled(...)` on `{unit.phase.param}`"
        elif unit.kind == "batch":
            fix = "run it under `with torch.no_grad():` (or use `torch.inference_mode()`)"
        elif unit.kind != "loop" and hasattr(unit.node, "name"):
            fix = f"decorate `{unit.node.name}` with `@torch.no_grad()` (or use `torch.inference_mode()`)"
        else:
            fix = "wrap the evaluation loop in `with torch.no_grad():` (or use `torch.inference_mode()`)"
        return Message(
            f"`{call}(...)` evaluates with autograd on in {where}",
            why="every forward pass records a graph and keeps its activations alive, wasting memory and time",
            help=fix,
        )
