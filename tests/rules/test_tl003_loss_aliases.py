"""TL003 and losses under deprecated names: `nn.NLLLoss2d` is `nn.NLLLoss` under its old name, a
criterion (its `weight` is a buffer), so building it every epoch loses nothing."""

from expect_markers import check

_EPOCH = """
import torch
from torch import nn

net = SegNet()
optimizer = torch.optim.Adam(net.parameters())
for epoch in range(50):
    criterion = {built}{marker}
    for x, y in loader:
        optimizer.zero_grad()
        criterion(net(x), y).backward()
        optimizer.step()
"""


def test_the_deprecated_nll_loss_2d_is_a_criterion(lint):
    check(lint, _EPOCH.format(built="nn.NLLLoss2d(weight=class_weights)", marker=""), "TL003")


def test_a_layer_with_weights_rebuilt_beside_it_is_still_reported(lint):
    findings = check(lint, _EPOCH.format(built="nn.Conv2d(64, 21, 1)", marker="  # expect: TL003"), "TL003")
    assert findings[0].message.startswith(
        "`nn.Conv2d(...)` builds a new model in every iteration of the loop at line 7"
    )
