"""TL004 and an optimizer rebuilt after the model was given new parameters: a helper the epoch
calls assigns a new head into the model (re-clustering with a new number of classes), so an
optimizer built before would never train it (module_growth.grown_before)."""

from expect_markers import check

_CLUSTER = """
import torch
from torch import nn

def recluster(loader, model, n_clusters):
    centers = cluster_features(loader, model, n_clusters)
    {grow}
    return make_pseudo_labelled_loader(loader, centers)

def train(model, loader, epochs):
    for epoch in range(epochs):
        pseudo_loader = recluster(loader, model, 100 + epoch)
        optimizer = torch.optim.Adam(model.module.parameters(), lr=3e-4){marker}
        for x, y in pseudo_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
"""


def test_a_new_head_assigned_by_a_called_helper_requires_the_rebuild(lint):
    grow = "model.module.head = nn.Linear(model.module.dim, n_clusters, bias=False).cuda()"
    check(lint, _CLUSTER.format(grow=grow, marker=""), "TL004")


def test_a_parameter_registered_in_the_loop_body_requires_the_rebuild(lint):
    check(
        lint,
        """
import torch
from torch import nn

model = make_model()
for epoch in range(10):
    if epoch in grow_at:
        model.add_module(f"extra{epoch}", nn.Linear(16, 16))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
""",
        "TL004",
    )


def test_weights_copied_into_the_old_head_keep_the_finding(lint):
    # The head's weights are overwritten in place: same parameters, the old optimizer still holds them.
    grow = "model.module.head.weight.data.copy_(centers)"
    findings = check(lint, _CLUSTER.format(grow=grow, marker="  # expect: TL004"), "TL004")
    assert "loop at line 11 (`for epoch in range(epochs)`)" in findings[0].message


def test_a_new_head_on_another_model_keeps_the_finding(lint):
    # The helper grows the teacher; the optimizer is over the student, whose parameters stay.
    source = _CLUSTER.replace("recluster(loader, model, 100 + epoch)", "recluster(loader, teacher, 100 + epoch)")
    source = source.replace("def train(model, loader, epochs)", "def train(model, teacher, loader, epochs)")
    grow = "model.module.head = nn.Linear(model.module.dim, n_clusters)"
    check(lint, source.format(grow=grow, marker="  # expect: TL004"), "TL004")


_PRUNING = """
import torch
from torch import nn

def drop_filter(net, index):
    {prune}
    return net

class Pruner:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader

    def fine_tune(self, optimizer):
        for x, y in self.loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(self.model(x), y).backward()
            optimizer.step()

    def run(self, rounds):
        for step in range(rounds):
            net = self.model.cpu()
            for index in self.ranked_filters():
                net = drop_filter(net, index)
            self.model = net.cuda()
            optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-3, momentum=0.9){marker}
            self.fine_tune(optimizer)
"""


def test_layers_rebuilt_in_an_alias_of_the_model_require_the_rebuild(lint):
    # The helper puts a new Sequential into the alias bound to `self.model`: new parameters.
    prune = "net.features = nn.Sequential(*[m for i, m in enumerate(net.features) if i != index])"
    check(lint, _PRUNING.format(prune=prune, marker=""), "TL004")


def test_filters_zeroed_in_place_in_the_alias_keep_the_finding(lint):
    # Zeroing a filter keeps the same parameter tensors: the optimizer's state is lost for nothing.
    prune = "net.features[index].weight.data.zero_()"
    findings = check(lint, _PRUNING.format(prune=prune, marker="  # expect: TL004"), "TL004")
    assert "loop at line 21 (`for step in range(rounds)`)" in findings[0].message


def test_layers_rebuilt_in_another_attribute_keep_the_finding(lint):
    # The alias is of the teacher, not of the model the optimizer takes.
    prune = "net.features = nn.Sequential(*[m for i, m in enumerate(net.features) if i != index])"
    source = _PRUNING.replace("net = self.model.cpu()", "net = self.teacher.cpu()")
    source = source.replace("self.model = net.cuda()", "self.teacher = net.cuda()")
    check(lint, source.format(prune=prune, marker="  # expect: TL004"), "TL004")
