"""TL006: a LightningModule's ``freeze()`` sets ``requires_grad = False`` on every parameter: a
forward on loader data records no graph, here or in a caller after a helper froze the model it was
handed. Another object's ``freeze`` method is unknown; ``unfreeze()`` switches gradients back on;
a module that is not frozen, feeding the frozen one, still records."""

from expect_markers import check

CODE = "TL006"

_LIT = """
import torch
import lightning as L
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class DigitNet({base}):
    def __init__(self, hidden=256):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
{extra}

def evaluate(model, loader):
    model.eval()
    {freeze}
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item(){mark}
    return correct / len(loader.dataset)


if __name__ == "__main__":
    test_loader = DataLoader(datasets.MNIST("data", train=False, transform=transforms.ToTensor()), batch_size=512)
    model = DigitNet.load_from_checkpoint("checkpoints/last.ckpt")
    print(evaluate(model, test_loader))
"""

_OWN_FREEZE = """
    def freeze(self):
        self.net[1].weight.requires_grad = False
"""


def _source(base="L.LightningModule", freeze="model.freeze()", mark="", extra=""):
    return _LIT.format(base=base, freeze=freeze, mark=mark, extra=extra)


def test_lightning_freeze_of_a_checkpoint_is_silent(lint):
    assert lint(_source(), CODE) == []


def test_without_freeze_is_reported(lint):
    check(lint, _source(freeze="pass", mark="  # expect: TL006"), CODE)


def test_unfreeze_before_the_loop_is_reported(lint):
    check(lint, _source(freeze="model.freeze()\n    model.unfreeze()", mark="  # expect: TL006"), CODE)


def test_freeze_method_of_a_plain_module_is_reported(lint):
    check(lint, _source(base="nn.Module", mark="  # expect: TL006", extra=_OWN_FREEZE), CODE)


_HELPER = """
import torch
import pytorch_lightning as pl
from torch import nn
from data import train_loader, test_loader
from encoders import LitEncoder


def embed(x, model: pl.LightningModule):
    model.freeze()
    return model(x)


def predict_embeddings(model, loader, adapter):
    rows = []
    for x, _ in loader:
        rows.append(embed(x, model))
        rows.append(model({feed}){mark})
    return torch.cat(rows)


if __name__ == "__main__":
    encoder = LitEncoder.load_from_checkpoint("encoder.ckpt")
    adapter = nn.Linear(784, 784)
    opt = torch.optim.SGD(adapter.parameters(), lr=0.1)
    for x, _ in train_loader:
        opt.zero_grad()
        nn.functional.mse_loss(encoder(adapter(x)), x).backward()
        opt.step()
    predict_embeddings(encoder, test_loader, adapter)
"""


def test_helper_freezing_an_annotated_lightning_model_is_silent(lint):
    assert lint(_HELPER.format(feed="x.flip(0)", mark=""), CODE) == []


def test_helper_without_freeze_is_reported(lint):
    source = _HELPER.format(feed="x.flip(0)", mark="").replace("    model.freeze()\n", "")
    findings = lint(source, CODE)
    assert [f.line for f in findings] == [17]


def test_input_from_an_unfrozen_module_still_records(lint):
    # The stem trains: its output requires grad, so the frozen model's forward records through it.
    source = (
        _source(mark="  # expect: TL006")
        .replace("def evaluate(model, loader):", "def evaluate(model, loader, stem):")
        .replace("model(x).argmax(1)", "model(stem(x)).argmax(1)")
        .replace(
            "    print(evaluate(model, test_loader))\n",
            """    stem = nn.Sequential(nn.Conv2d(1, 1, 3, padding=1), nn.BatchNorm2d(1))
    opt = torch.optim.SGD(stem.parameters(), lr=0.1)
    for x, _ in test_loader:
        opt.zero_grad()
        nn.functional.mse_loss(stem(x), x).backward()
        opt.step()
    print(evaluate(model, test_loader, stem))
""",
        )
    )
    check(lint, source, CODE)
