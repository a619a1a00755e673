"""TL016 backward-under-no-grad: a backward pass where autograd is disabled."""

import pytest
from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL016"


def test_no_grad_function_calling_a_helper_that_runs_backward(lint):
    findings = check(
        lint,
        """
        import torch

        def optimize_step(model, optimizer, batch):
            loss = model(batch).mean()
            loss.backward()  # expect: TL016
            optimizer.step()
            optimizer.zero_grad()

        @torch.inference_mode()
        def adapt(model, optimizer, stream):
            for batch in stream:
                optimize_step(model, optimizer, batch)
        """,
        CODE,
    )
    message = findings[0].message
    assert "runs under `torch.inference_mode()` (line 10) (called from line 13)" in message


def test_set_grad_enabled_false_decorator_and_nested_helper(lint):
    check(
        lint,
        """
        import torch

        def _backward(loss):
            loss.backward()  # expect: TL016

        def step(model, x):
            _backward(model(x).sum())

        @torch.set_grad_enabled(False)
        def run(model, xs):
            for x in xs:
                step(model, x)
        """,
        CODE,
    )


def test_no_grad_function_whose_helper_enables_grad_again(lint):
    # Test-time adaptation and saliency: the helper turns autograd back on around its backward.
    check(
        lint,
        """
        import torch

        def saliency(model, x):
            with torch.enable_grad():
                x = x.clone().requires_grad_(True)
                model(x).max(1).values.sum().backward()
            return x.grad.abs()

        @torch.enable_grad()
        def adapt_step(model, optimizer, x):
            model(x).entropy().mean().backward()
            optimizer.step()

        @torch.no_grad()
        def explain(model, loader, optimizer):
            maps = [saliency(model, x) for x, _ in loader]
            for x, _ in loader:
                adapt_step(model, optimizer, x)
            return maps
        """,
        CODE,
    )


def test_no_grad_function_that_only_evaluates(lint):
    check(
        lint,
        """
        import torch

        def train_step(model, optimizer, x, y):
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

        @torch.no_grad()
        def evaluate(model, loader):
            return sum((model(x).argmax(1) == y).sum().item() for x, y in loader)

        def fit(model, optimizer, loader):
            for x, y in loader:
                train_step(model, optimizer, x, y)
            return evaluate(model, loader)
        """,
        CODE,
    )


# ----- `x.backward(...)` is an autograd backward only when x may be a tensor -----------------------
_CUSTOM_KERNEL = """
import torch
from torch.utils.cpp_extension import load

KERNEL = None


class WKV(torch.autograd.Function):
    @staticmethod
    def forward(ctx, k, v):
        with torch.no_grad():
            y = torch.empty_like(v)
            KERNEL.forward(k, v, y)
            ctx.save_for_backward(k, v)
            return y

    @staticmethod
    def backward(ctx, gy):
        k, v = ctx.saved_tensors
        with torch.no_grad():
            gk, gv = torch.empty_like(k), torch.empty_like(v)
            KERNEL.backward(k, v, gy, gk, gv)MARK
            return gk, gv


def setup():
    global KERNEL
    KERNEL = LOADER
"""


@pytest.mark.parametrize(
    "loader",
    ['load(name="wkv", sources=["wkv_op.cpp", "wkv_cuda.cu"])', 'importlib.import_module("wkv_cuda")'],
)
def test_a_kernel_of_a_loaded_extension_called_backward_is_no_autograd_backward(lint, loader):
    source = _CUSTOM_KERNEL.replace("LOADER", loader).replace("MARK", "")
    assert lint("import importlib\n" + source, CODE) == []


def test_a_kernel_of_an_imported_extension_module_is_no_autograd_backward(lint):
    source = _CUSTOM_KERNEL.replace("\ndef setup():\n    global KERNEL\n    KERNEL = LOADER\n", "")
    source = source.replace("KERNEL = None", "import wkv_cuda as KERNEL").replace("MARK", "")
    assert lint(source, CODE) == []


def test_a_tensor_bound_to_the_same_name_still_runs_an_autograd_backward(lint):
    """The name is bound to the extension once and to a loss once: it may be a tensor."""
    source = _CUSTOM_KERNEL.replace("LOADER", 'load(name="wkv", sources=["wkv.cu"])\n    KERNEL = model(x).sum()')
    check(lint, source.replace("MARK", "  # expect: TL016"), CODE)


def test_a_local_named_like_a_loaded_extension_is_a_tensor(lint):
    source = _CUSTOM_KERNEL.replace("LOADER", 'load(name="wkv", sources=["wkv.cu"])').replace(
        "        with torch.no_grad():\n            gk, gv",
        "        KERNEL = (gy * v).sum()\n        with torch.no_grad():\n            gk, gv",
    )
    source = source.replace("KERNEL.backward(k, v, gy, gk, gv)MARK", "KERNEL.backward()  # expect: TL016")
    check(lint, source, CODE)


_REGISTERED_OP = """
import torch
from torch.utils.cpp_extension import load

load(name="wkv", sources=["wkv_op.cpp", "wkv_cuda.cu"], is_python_module=False)


class WKV(torch.autograd.Function):
    @staticmethod
    def backward(ctx, gy):
        k, v = ctx.saved_tensors
        with torch.no_grad():
            gk, gv = torch.empty_like(k), torch.empty_like(v)
            RECEIVER.backward(k, v, gy, gk, gv)MARK
            return gk, gv
"""


def test_an_op_of_the_operator_registry_called_backward_is_no_autograd_backward(lint):
    """`torch.ops.<namespace>` holds the ops a loaded library registered: a namespace, no tensor."""
    source = _REGISTERED_OP.replace("RECEIVER", "torch.ops.wkv").replace("MARK", "")
    assert lint(source, CODE) == []


@pytest.mark.parametrize("receiver", ["ctx.ops.wkv", "self.ops.wkv", "ops.wkv"])
def test_an_attribute_spelled_like_the_registry_elsewhere_may_be_a_tensor(lint, receiver):
    """Only `torch.ops` reached from the imported torch is the registry; `ctx.ops.wkv` may hold a loss."""
    findings = check(lint, _REGISTERED_OP.replace("RECEIVER", receiver).replace("MARK", "  # expect: TL016"), CODE)
    assert f"`{receiver}.backward(k, v, gy, gk, gv)` runs under `torch.no_grad()` (line 12)" in findings[0].message


def test_torch_rebound_to_a_value_is_no_registry(lint):
    source = _REGISTERED_OP.replace("RECEIVER", "torch.ops.wkv").replace("MARK", "  # expect: TL016")
    source = source.replace(
        "        k, v = ctx.saved_tensors\n", "        k, v = ctx.saved_tensors\n        torch = gy\n"
    )
    check(lint, source, CODE)


# ----- one function for both phases: the no-grad call is judged on the path its arguments select -------
_SOLVER = """
import torch

class Solver:
    def __init__(self, model, optimizer, loader):
        self.model, self.optimizer, self.loader = model, optimizer, loader

    def _run_one_epoch(self, epoch, train=True):
        total = 0.0
        for x, y in self.loader:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            if train:
                loss.backward()MARK
                self.optimizer.step()
                self.optimizer.zero_grad()
            total += loss.item()
        return total

    def train(self, epochs):
        for epoch in range(epochs):
            self.model.train()
            self._run_one_epoch(epoch)
            self.model.eval()
            with torch.no_grad():
                valid = self._run_one_epoch(epochARGS)
"""


@pytest.mark.parametrize("args", [", train=False", ", False"])
def test_a_no_grad_call_selecting_the_evaluation_path_runs_no_backward(lint, args):
    assert lint(_SOLVER.replace("ARGS", args).replace("MARK", ""), CODE) == []


@pytest.mark.parametrize("args", ["", ", train=True", ", train=args.finetune"])
def test_a_no_grad_call_that_may_select_the_training_path_is_reported(lint, args):
    """The default, an explicit True, or a value the linter cannot read: the backward may run."""
    source = _SOLVER.replace("ARGS", args).replace("MARK", "  # expect: TL016")
    findings = check(lint, source, CODE)
    assert "(called from line" in findings[0].message


# The grad mode that matters is where the backpropagated tensor was computed (recording), not
# where backward is called: a loss computed under `torch.enable_grad()` has its graph even when
# its backward runs under no-grad, in the helper itself or because the whole helper is called
# from a no-grad block.


def test_a_loss_computed_under_no_grad_in_a_helper_called_from_no_grad_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        class Attack:
            def input_gradient(self, images, labels):
                images = images.clone().requires_grad_()
                scores = self.model(images)
                loss = scores.gather(1, labels[:, None]).sum()
                loss.backward()  # expect: TL016
                return images.grad

            def run(self, images, labels, steps):
                for _ in range(steps):
                    with torch.no_grad():
                        grad = self.input_gradient(images, labels)
                        images = images + 0.01 * grad.sign()
                return images
        """,
        CODE,
    )
    assert "`loss.backward()` runs under `torch.no_grad()` (line 14) (called from line 15)" in findings[0].message


@pytest.mark.parametrize(
    "switch",
    ["with torch.enable_grad():", "with torch.set_grad_enabled(True):", "with torch.no_grad(), torch.enable_grad():"],
)
def test_a_loss_recorded_under_enable_grad_keeps_its_graph_outside_the_block(lint, switch):
    check(
        lint,
        f"""
        import torch

        class Attack:
            def logit_jacobian(self, images):
                images = images.clone().requires_grad_()
                {switch}
                    logits = self.model(images)
                rows = []
                seed = torch.zeros_like(logits)
                for k in range(logits.shape[1]):
                    seed[:, k] = 1.0
                    logits.backward(seed, retain_graph=True)
                    seed[:, k] = 0.0
                    rows.append(images.grad.clone())
                    images.grad.zero_()
                return torch.stack(rows, 1)

            def margin_gradient(self, images, a, b):
                images = images.clone().requires_grad_()
                {switch}
                    logits = self.model(images)
                    margin = (logits[:, a] - logits[:, b]).sum()
                margin.backward()
                return images.grad

            def run(self, images, a, b):
                with torch.no_grad():
                    jac = self.logit_jacobian(images)
                    step = self.margin_gradient(images, a, b)
                return jac, step
        """,
        CODE,
    )


def test_a_loss_returned_by_an_enable_grad_helper_keeps_its_graph_under_no_grad(lint):
    check(
        lint,
        """
        import torch

        @torch.enable_grad()
        def energy(model, x):
            return model(x).logsumexp(1).sum()

        def refine(model, x, scaler):
            x = x.detach().requires_grad_()
            with torch.no_grad():
                e = energy(model, x)
                e.backward()
                x -= 0.1 * x.grad
            return x
        """,
        CODE,
    )


def test_a_value_computed_from_the_recorded_one_under_no_grad_has_no_graph(lint):
    # Only where the backpropagated tensor itself was computed counts: `.sum()` under no-grad
    # records nothing, even of a tensor that carries a graph.
    findings = check(
        lint,
        """
        import torch

        def score_gradient(model, x):
            x = x.clone().requires_grad_()
            with torch.no_grad():
                with torch.enable_grad():
                    logits = model(x)
                total = logits.sum()
                total.backward()  # expect: TL016
            return x.grad
        """,
        CODE,
    )
    assert "`total.backward()` runs under `torch.no_grad()` (line 6)" in findings[0].message


def test_enable_grad_inside_inference_mode_records_nothing(lint):
    # Inference mode is not undone by enable_grad: its tensors never record a graph.
    check(
        lint,
        """
        import torch

        def input_gradient(model, x):
            x = x.clone().requires_grad_()
            with torch.enable_grad():
                loss = model(x).sum()
            loss.backward()  # expect: TL016
            return x.grad

        @torch.inference_mode()
        def explain(model, batches):
            return [input_gradient(model, x) for x in batches]
        """,
        CODE,
    )


def test_a_bare_set_grad_enabled_true_before_the_loss_records_it(lint):
    # `torch.set_grad_enabled(True)` as a statement switches recording on for what follows;
    # one in a branch may not run, and a later `False` switches it off again.
    check(
        lint,
        """
        import torch

        def refine(model, x, steps):
            x = x.clone().requires_grad_()
            torch.set_grad_enabled(True)
            energy = model(x).logsumexp(1).sum()
            energy.backward()
            return x.grad

        def maybe_refine(model, x, enable):
            x = x.clone().requires_grad_()
            if enable:
                torch.set_grad_enabled(True)
            energy = model(x).sum()
            energy.backward()  # expect: TL016
            return x.grad

        def switched_off_again(model, x):
            x = x.clone().requires_grad_()
            torch.set_grad_enabled(True)
            torch.set_grad_enabled(False)
            energy = model(x).sum()
            energy.backward()  # expect: TL016
            return x.grad

        @torch.no_grad()
        def sample(model, x):
            a = refine(model, x, 3)
            b = maybe_refine(model, x, True)
            c = switched_off_again(model, x)
            return a, b, c
        """,
        CODE,
    )


# The phase argument may be a name that stands for one constant: an enum member, a class
# attribute or a module-level constant, defined in this file or imported from another.
_PHASED = """
import enum
import torch

DEFINITIONS

def run_epoch(net, optimizer, batches, stage):
    net.train() if stage == Stage.FIT else net.eval()
    total = 0.0
    for inputs, targets in batches:
        loss = torch.nn.functional.mse_loss(net(inputs), targets)
        if stage == Stage.FIT:
            optimizer.zero_grad()
            loss.backward()MARK
            optimizer.step()
        total += loss.item()
    return total

def fit(net, optimizer, train_batches, val_batches, epochs):
    for _ in range(epochs):
        run_epoch(net, optimizer, train_batches, Stage.FIT)
        with torch.no_grad():
            run_epoch(net, optimizer, val_batches, stage=Stage.CHOSEN)
"""

_ENUM = "class Stage(enum.Enum):\n    FIT = enum.auto()\n    CHECK = enum.auto()"
_CLASS = "class Stage:\n    FIT = 'fit'\n    CHECK = 'check'"
_INT_ENUM = "class Stage(enum.IntEnum):\n    FIT = 0\n    CHECK = 1"


@pytest.mark.parametrize("definitions", [_ENUM, _CLASS, _INT_ENUM])
def test_a_no_grad_call_passing_another_member_runs_no_backward(lint, definitions):
    source = _PHASED.replace("DEFINITIONS", definitions).replace("CHOSEN", "CHECK").replace("MARK", "")
    assert lint(source, CODE) == []


@pytest.mark.parametrize("definitions", [_ENUM, _CLASS, _INT_ENUM])
def test_a_no_grad_call_passing_the_training_member_is_reported(lint, definitions):
    source = _PHASED.replace("DEFINITIONS", definitions).replace("CHOSEN", "FIT").replace("MARK", "  # expect: TL016")
    findings = check(lint, source, CODE)
    assert "runs under `torch.no_grad()` (line 24) (called from line 25)" in findings[0].message


def test_an_enum_alias_of_the_training_member_is_the_training_member(lint):
    """``enum`` makes a member with an equal value an alias: ``Stage.TRAIN is Stage.FIT``."""
    definitions = "class Stage(enum.Enum):\n    FIT = 0\n    CHECK = 1\n    TRAIN = 0"
    source = _PHASED.replace("DEFINITIONS", definitions).replace("CHOSEN", "TRAIN").replace("MARK", "  # expect: TL016")
    check(lint, source, CODE)


def test_a_class_whose_attributes_a_base_may_change_is_not_read(lint):
    definitions = "class Stage(Base):\n    FIT = 'fit'\n    CHECK = 'check'"
    source = _PHASED.replace("DEFINITIONS", "from phases import Base\n" + definitions)
    source = source.replace("CHOSEN", "CHECK").replace("MARK", "  # expect: TL016")
    check(lint, source, CODE)


def test_module_constants_select_the_path(lint):
    source = _PHASED.replace("DEFINITIONS", "FIT = 'fit'\nCHECK = 'check'").replace("Stage.", "")
    assert lint(source.replace("CHOSEN", "CHECK").replace("MARK", ""), CODE) == []
    check(lint, source.replace("CHOSEN", "FIT").replace("MARK", "  # expect: TL016"), CODE)


def test_a_module_name_assigned_twice_is_no_constant(lint):
    source = _PHASED.replace("DEFINITIONS", "FIT = 'fit'\nCHECK = 'check'\nCHECK = FIT").replace("Stage.", "")
    check(lint, source.replace("CHOSEN", "CHECK").replace("MARK", "  # expect: TL016"), CODE)


@pytest.mark.parametrize("imports", ["from constants import *", "from constants import Stage"])
def test_a_member_of_an_enum_defined_in_another_file(tmp_path, imports):
    for chosen, expected in (("CHECK", []), ("FIT", [14])):
        source = _PHASED.replace("DEFINITIONS", imports).replace("CHOSEN", chosen).replace("MARK", "")
        files = {"constants.py": "import enum\n\n" + _ENUM + "\n", "train.py": source}
        assert [f.line for f in lint_in_project(tmp_path, files, "train.py", CODE)] == expected


def test_training_flag_guard_still_reported_when_eval_mode_is_not_shown(lint):
    findings = check(
        lint,
        """
        import torch
        from torch import nn

        class Trainer(nn.Module):
            def run_batch(self, batch):
                loss = self.net(batch).mean()
                if self.training:
                    self.accelerator.backward(loss)  # expect: TL016
                return loss.item()

            @torch.no_grad()
            def validate(self, batch):
                return self.run_batch(batch)
        """,
        CODE,
    )
    assert "runs under `torch.no_grad()` (line 12) (called from line 14)" in findings[0].message


def test_training_flag_guard_dead_after_eval_decorator_or_eval_call(lint):
    check(
        lint,
        """
        import torch
        from torch import nn

        def evaluating(fn):
            def wrapper(module, *args, **kwargs):
                before = module.training
                module.eval()
                result = fn(module, *args, **kwargs)
                module.train(before)
                return result
            return wrapper

        class Trainer(nn.Module):
            def run_batch(self, batch):
                loss = self.net(batch).mean()
                if self.training:
                    self.accelerator.backward(loss)
                return loss.item()

            def forward(self, batch):
                return self.run_batch(batch)

            @torch.no_grad()
            @evaluating
            def validate(self, batch):
                return self(batch)

            @torch.no_grad()
            def score(self, batch):
                self.train(False)
                return self.forward(batch)
        """,
        CODE,
    )


def test_training_flag_guard_counts_only_for_the_object_switched(lint):
    check(
        lint,
        """
        import torch
        from torch import nn

        class Trainer(nn.Module):
            def run_batch(self, batch):
                loss = self.net(batch).mean()
                if self.training:
                    loss.backward()  # expect: TL016
                return loss.item()

            @torch.no_grad()
            def score(self, other, batch):
                other.eval()
                return self.run_batch(batch)
        """,
        CODE,
    )


def test_flag_guard_decided_by_keywords_unpacked_from_a_local_dict(lint):
    check(
        lint,
        """
        import torch

        def run_epoch(loader, model, loss_fn, train, optimizer):
            for x, y in loader:
                loss = loss_fn(model(x), y)
                if train and optimizer is not None:
                    optimizer.zero_grad()
                    loss.backward()  # expect: TL016
                    optimizer.step()

        def evaluate(loaders, model, loss_fn):
            with torch.no_grad():
                common = {"model": model, "loss_fn": loss_fn, "train": False, "optimizer": None}
                for loader in loaders:
                    run_epoch(loader, **common)

        def refine(loader, model, loss_fn, optimizer):
            with torch.no_grad():
                run_epoch(loader, model=model, loss_fn=loss_fn, **dict(train=True, optimizer=optimizer))
        """,
        CODE,
    )


def test_flag_guard_unknown_when_the_unpacked_dict_is_changed_or_not_shown(lint):
    check(
        lint,
        """
        import torch

        def run_epoch(loader, model, train=False):
            loss = model(loader).mean()
            if train:
                loss.backward()  # expect: TL016

        def evaluate(loader, model, options):
            with torch.no_grad():
                common = {"train": False}
                common["train"] = options.train
                run_epoch(loader, model, **common)
        """,
        CODE,
    )
    check(
        lint,
        """
        import torch

        def run_epoch(loader, model, train=False):
            loss = model(loader).mean()
            if train:
                loss.backward()  # expect: TL016

        def evaluate(loader, model, options):
            with torch.no_grad():
                run_epoch(loader, model, **options)
        """,
        CODE,
    )


def test_no_backward_when_every_no_grad_call_unpacks_a_dict_that_turns_training_off(lint):
    check(
        lint,
        """
        import torch

        def run_epoch(loader, model, loss_fn, train, optimizer):
            for x, y in loader:
                loss = loss_fn(model(x), y)
                if train and optimizer is not None:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()

        def fit(loaders, model, loss_fn, optimizer):
            run_epoch(loaders[0], model, loss_fn, True, optimizer)
            with torch.no_grad():
                common = {"model": model, "loss_fn": loss_fn, "train": False, "optimizer": None}
                for loader in loaders:
                    run_epoch(loader, **common)
                run_epoch(loaders[0], **{"model": model, "loss_fn": loss_fn}, train=False, optimizer=None)
        """,
        CODE,
    )
