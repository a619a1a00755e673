"""TL003 and a loop over optimizer configurations: each pass builds a new model and its optimizer
through a factory drawn from a table (``for name, make in optimizers.items(): ...;
opt = make(model.parameters())`` with entries ``lambda p: optim.SGD(p, lr=0.01)``). The call
builds an optimizer over the new model (runs.Constructions._calls_optimizer_factory_value), so the
pass is a training run of its own."""

from expect_markers import check

_SWEEP = """
import torch
from torch import nn, optim

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 1)

    def forward(self, x):
        return self.fc(x)

def make_adam(m):
    return optim.Adam(m.parameters(), lr=1e-3)

factories = {table}

for name, make in {items}:
    torch.manual_seed(0)
    model = Net(){marker}
    optimizer = make({handed})
    for _ in range(100):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(X), y).backward()
        optimizer.step()
    print(name, nn.functional.mse_loss(model(X), y).item())
"""

_DICT = '{"sgd": lambda p: optim.SGD(p, lr=0.01, momentum=0.9), "adam": lambda p: optim.Adam(p, lr=1e-3)}'
_LIST = '[("sgd", lambda m: optim.SGD(m.parameters(), lr=0.01)), ("adam", make_adam)]'


def test_dict_of_optimizer_lambdas_is_a_sweep(lint):
    source = _SWEEP.format(table=_DICT, items="factories.items()", marker="", handed="model.parameters()")
    check(lint, source, "TL003")


def test_list_of_named_factories_is_a_sweep(lint):
    check(lint, _SWEEP.format(table=_LIST, items="factories", marker="", handed="model"), "TL003")


def test_table_with_an_entry_that_cannot_be_told_is_reported(lint):
    table = '{"sgd": lambda p: optim.SGD(p, lr=0.01), "lamb": build_lamb}'
    source = "from registry import build_lamb\n" + _SWEEP
    source = source.format(
        table=table, items="factories.items()", marker="  # expect: TL003", handed="model.parameters()"
    )
    check(lint, source, "TL003")
