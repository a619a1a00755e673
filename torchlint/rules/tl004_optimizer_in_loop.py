"""TL004 optimizer-in-loop."""

from __future__ import annotations

import ast

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.roles import Role
from torchlint.torchmodel.runs import describe_loop, run_analysis


@register
class OptimizerInLoop(Rule):
    code = "TL004"
    name = "optimizer-in-loop"
    severity = "error"
    summary = "An optimizer is built inside the training loop, so its state restarts every iteration."
    what = """
        Reports the constructor of an optimizer (`torch.optim.*`, and well-known
        third-party ones such as `transformers.AdamW`, `timm.optim.*`,
        `bitsandbytes.optim.*`, or a local function returning one) that runs inside
        the loop whose iterations continue one training run — per batch, per step or
        per epoch, including inside a function the epoch loop calls (a
        `train_one_epoch` that starts with `optimizer = SGD(...)`) and a loop nested in
        the epoch loop (`for shard_id ...:`). An optimizer built with its model in such
        a loop is reported along with the model (TL003): fixing one leaves the other.
        An outer loop whose body is a whole training run with its own model (folds,
        trials, seeds, hyper-parameter values, tasks, federated rounds, a literal list of
        settings such as `for device in ["cpu", "cuda"]:`, a loop handing out a different
        model each iteration that trains it with an optimizer over its parameters:
        `for net in ensemble: train(net)`, a class the loop hands out, built and
        wrapped: `for cls in [nn.RNN, nn.GRU]: learner = MAML(cls(2, 1))`, a model
        built each iteration by a constructor drawn from a table whose every entry
        builds a new model, a model class or a function returning one it constructs:
        `build = MODELS[name]` before the loop, `net = build()` in it, alone or as a
        list `nets = [build() for _ in range(k)]` handed out to one optimizer each by
        a loop in the iteration) is not reported, nor is an inner optimizer over a copy of the model made in the same
        iteration (`copy.deepcopy(model)`, meta-learning) or over a tensor made anew
        in it (moved or not; a copy of a detached tensor; or a tensor the body rebinds
        in every pass to a new one, `output = F.interpolate(output, scale_factor=2).detach()`
        at the end of a multiscale phase), nor an optimizer that cannot hold state: plain
        `torch.optim.SGD` with `momentum` left out or 0 and no scheduler built over
        it (weight decay, dampening and nesterov keep no state), a project subclass
        whose `step` does nothing, or one built with no argument whose `__init__`
        takes no parameters and never reaches `Optimizer.__init__` (a stand-in handed
        to the evaluation pass of a shared `run_epoch`). Nor is a construction built on first use
        only: under a test that its holder is still empty (`if self.crit is None:`,
        `if not hasattr(self, "opt"):`, `if key not in cache:`) in a block that fills that
        holder, including a getter `opt = get_optimizer(opt, ...)` that builds only
        `if opt is None:` and returns it, unless the loop empties the holder again.
    """
    why = """
        An optimizer carries state between steps: momentum buffers, Adam's first
        and second moments and step count (which drives its bias correction), and
        the learning-rate schedule attached to it. Rebuilding it every epoch or
        every batch silently resets all of it: Adam restarts with bias-corrected
        large steps, momentum never builds up, and a scheduler keeps stepping an
        optimizer that is no longer used, so the learning rate never decays.
    """
    example = """
        import torch

        model = Net().to(device)
        for epoch in range(num_epochs):
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
    """
    instead = """
        import torch

        model = Net().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(num_epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
    """
    VALID = [
        """
import torch

def train(cfg):
    model = build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        for x, y in loader:
            opt.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            opt.step()

for seed in (0, 1, 2):
    torch.manual_seed(seed)
    train(cfg)
""",
        """
import torch

model = make_model()
for epoch in range(10):
    if epoch == 5:
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
""",
    ]
    INVALID = [
        """
import torch

model = make_model()
for epoch in range(10):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # expect: TL004
    for x, y in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
""",
        """
import torch

def train_one_epoch(model, loader, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)  # expect: TL004
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

def main(model, loader):
    for epoch in range(90):
        train_one_epoch(model, loader, lr=0.1 * 0.1 ** (epoch // 30))
""",
    ]

    def check(self, ctx):
        for call, found in run_analysis(ctx).rebuilt(Role.OPTIMIZER):
            yield self.report(call, self._message(ctx, call, found), evidence=found)

    @staticmethod
    def _message(ctx, call, found) -> Message:
        text = ast.unparse(call.func) + "(...)"
        where = describe_loop(ctx, found.loop)
        if found.via:
            where += f", through the call at line {found.via[0].lineno}"
        return Message(
            f"`{text}` builds a new optimizer in every iteration of {where}",
            why="the loop continues one training run, but the optimizer's state (momentum buffers, Adam moments "
            "and step count, the scheduler attached to it) restarts each time",
            help="build the optimizer once, before the loop, and change the learning rate through "
            "`param_groups` or a scheduler",
        )
