"""TL005: a LightningModule's ``freeze()`` calls ``self.eval()`` (and turns every parameter's
``requires_grad`` off): evaluation after it runs in eval mode. Only a LightningModule's: another
object's ``freeze`` method is its own business, and ``unfreeze()`` switches back to training mode."""

from expect_markers import check

CODE = "TL005"

_LIT = """
import torch
import pytorch_lightning as pl
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class DigitNet({base}):
    def __init__(self, hidden=256, p=0.3):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(784, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(p), nn.Linear(hidden, 10)
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
{extra}

def predict_labels(model, loader):
    {freeze}
    labels = []
    for x, _ in loader:
        labels.append(model(x).argmax(1)){mark}
    return torch.cat(labels)


if __name__ == "__main__":
    tfm = transforms.ToTensor()
    train_loader = DataLoader(datasets.MNIST("data", train=True, download=True, transform=tfm), batch_size=128)
    test_loader = DataLoader(datasets.MNIST("data", train=False, transform=tfm), batch_size=512)
    model = DigitNet()
    pl.Trainer(max_epochs=3).fit(model, train_loader)
    print(predict_labels(model, test_loader)[:20])
"""

_OWN_FREEZE = """
    def freeze(self):
        for p in self.net[1].parameters():
            p.requires_grad = False
"""


def _source(base="pl.LightningModule", freeze="model.freeze()", mark="", extra=""):
    return _LIT.format(base=base, freeze=freeze, mark=mark, extra=extra)


def test_lightning_freeze_before_evaluation_is_silent(lint):
    assert lint(_source(), CODE) == []


def test_lightning_freeze_then_unfreeze_is_reported(lint):
    check(lint, _source(freeze="model.freeze()\n    model.unfreeze()", mark="  # expect: TL005"), CODE)


def test_freeze_method_of_a_plain_module_is_reported(lint):
    # The project's own `freeze()` freezes one layer and switches no mode.
    check(lint, _source(base="nn.Module", mark="  # expect: TL005", extra=_OWN_FREEZE), CODE)


def test_evaluation_without_freeze_is_reported(lint):
    check(lint, _source(freeze="pass", mark="  # expect: TL005"), CODE)


def test_freeze_inside_a_helper_counts_for_the_caller_loop(lint):
    source = _source().replace(
        "    print(predict_labels(model, test_loader)[:20])\n",
        """    confident = []
    for x, y in test_loader:
        preds = predict_labels(model, [(x, y)])
        confident.append(model(x[preds == y]).softmax(1).amax(1))
    print(torch.cat(confident).mean())
""",
    )
    assert lint(source, CODE) == []
