"""TL017 follows a method called on an instance of the file's own class (a module-level
``manager = CheckpointManager()`` included) to see whether it gives the optimizer state, and
counts ``Net().to(device)`` at the construction as the model's first placement: moving it again
to the same device after a checkpoint is loaded leaves nothing stale."""

_SOURCE = """\
import torch
import torch.nn as nn


class CheckpointManager:
    def register(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def restore(self, path, optimizer):
        optimizer.load_state_dict(torch.load(path)["optimizer"])


manager = CheckpointManager()


def main(device, loader, path):
    model = nn.Linear(3, 1).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    CALL
    model = model.to(MOVE)
    for x, y in loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
"""


def _lint(lint, call: str, move: str = "device"):
    return lint(_SOURCE.replace("CALL", call).replace("MOVE", move), "TL017")


def test_a_method_that_only_keeps_references_gives_no_state(lint):
    assert _lint(lint, "manager.register(model, optimizer)", "'cpu'") == []


def test_a_method_that_loads_the_optimizers_state_gives_state(lint):
    found = _lint(lint, "manager.restore(path, optimizer)", "'cpu'")
    assert [(f.line, f.code) for f in found] == [(21, "TL017")]
    assert "was given state on line 20" in found[0].message


def test_a_move_to_where_the_model_was_placed_when_built_leaves_nothing_stale(lint):
    assert _lint(lint, "manager.restore(path, optimizer)") == []


def test_a_move_elsewhere_after_the_state_is_loaded_is_reported(lint):
    found = _lint(lint, "manager.restore(path, optimizer)", "torch.device('cuda:1')")
    assert [(f.line, f.code) for f in found] == [(21, "TL017")]
