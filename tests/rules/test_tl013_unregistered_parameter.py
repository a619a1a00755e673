"""TL013 unregistered-parameter: submodules in plain containers, trainable bare tensors."""

import pytest
from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL013"


# ----- positives ------------------------------------------------------------------------------


def test_list_comprehension_of_layers(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn

        class MLP(nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.layers = [nn.Linear(a, b) for a, b in zip(dims, dims[1:])]  # expect: TL013

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        """,
        CODE,
    )
    finding = findings[0]
    assert finding.severity == "error" and finding.name == "unregistered-parameter"
    assert "`self.layers` keeps submodules in a plain list" in finding.message
    assert "`nn.ModuleList(...)`" in finding.message


def test_blocks_appended_in_loop(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.fc = nn.Linear(dim, dim)
        class Transformer(nn.Module):
            def __init__(self, depth, dim):
                super().__init__()
                self.blocks = []  # expect: TL013
                for _ in range(depth):
                    block = Block(dim)
                    self.blocks.append(block)
        """,
        CODE,
    )
    assert "`self.blocks` keeps submodules in a plain list (filled later in `__init__`)" in findings[0].message


def test_dict_of_heads(lint):
    findings = check(
        lint,
        """
        from torch import nn
        class MultiTask(nn.Module):
            def __init__(self, tasks):
                super().__init__()
                self.backbone = nn.Linear(32, 32)
                self.heads = {name: nn.Linear(32, n) for name, n in tasks.items()}  # expect: TL013
        """,
        CODE,
    )
    assert "plain dict" in findings[0].message and "`nn.ModuleDict(...)`" in findings[0].message


def test_tensor_with_requires_grad(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn
        class Scale(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.gamma = torch.ones(n, requires_grad=True)  # expect: TL013
                self.beta = torch.zeros(n).requires_grad_()  # expect: TL013
                self.w: torch.Tensor = torch.empty(n, n).normal_().requires_grad_(True)  # expect: TL013
        """,
        CODE,
    )
    assert "`self.gamma` is a tensor made trainable with `requires_grad=True` but not an `nn.Parameter`" in (
        findings[0].message
    )
    assert "`requires_grad_()`" in findings[1].message


def test_list_of_parameters_and_tuple_of_layers(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn
        class Mix(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.weights = [nn.Parameter(torch.randn(4)) for _ in range(k)]  # expect: TL013
                self.pair = (nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))  # expect: TL013
        """,
        CODE,
    )
    assert "`nn.ParameterList(...)`" in findings[0].message
    assert "plain tuple" in findings[1].message


def test_lightning_module_list_of_layers(lint):
    check(
        lint,
        """
        import torch.nn as nn
        from lightning.pytorch import LightningModule
        class Lit(LightningModule):
            def __init__(self):
                super().__init__()
                self.encoders = [nn.GRU(8, 8), nn.GRU(8, 8)]  # expect: TL013
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_layers_collected_then_wrapped(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, depth):
                super().__init__()
                self.stages = []
                for i in range(depth):
                    self.stages.append(nn.Conv2d(8, 8, 3))
                self.stages = nn.Sequential(*self.stages)
                self.heads = [nn.Linear(8, 2)]
                self.heads = nn.ModuleList(self.heads)
        """,
            CODE,
        )
        == []
    )


def test_references_to_registered_modules_and_plain_data(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(3, 8, 3)
                self.conv2 = nn.Conv2d(8, 8, 3)
                self.convs = [self.conv1, self.conv2]
                self.feature_info = [dict(num_chs=8, reduction=2, module="conv1")]
                self.channels = (8, 16, 32)
                self.names = {"a": 1}
                self.out_indices = []
                self.out_indices.append(3)
        """,
            CODE,
        )
        == []
    )


def test_registered_by_hand(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.layers = []
                for i in range(n):
                    layer = nn.Linear(4, 4)
                    self.add_module(f"layer{i}", layer)
                    self.layers.append(layer)
                w = torch.zeros(4, requires_grad=True)
                self.register_parameter("w", nn.Parameter(w))
        """,
            CODE,
        )
        == []
    )


def test_parameters_buffers_and_frozen_tensors(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.alpha = nn.Parameter(torch.zeros(1), requires_grad=True)
                self.beta = torch.nn.Parameter(torch.ones(3))
                self.register_buffer("running", torch.zeros(3))
                self.mask = torch.ones(3, requires_grad=False)
                self.scale = torch.tensor(2.0)
                self.params = nn.ParameterList([nn.Parameter(torch.ones(2)) for _ in range(3)])
        """,
            CODE,
        )
        == []
    )


def test_not_a_module_class(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        class Ensemble:
            def __init__(self, n):
                self.models = [nn.Linear(4, 4) for _ in range(n)]
                self.temperature = torch.ones(1, requires_grad=True)
        """,
            CODE,
        )
        == []
    )


def test_outside_init_and_wrapped_parameter(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.randn(4, 4, requires_grad=True)
                self.w = nn.Parameter(self.w)
            def reset(self):
                self.cache = [nn.Linear(2, 2)]
        """,
            CODE,
        )
        == []
    )


# ----- further cases (both kinds), from the audit and real-world shapes ---------------------


def test_repeated_list_and_moved_trainable_tensor(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n, device):
                super().__init__()
                self.convs = [nn.Conv2d(8, 8, 3)] * n  # expect: TL013
                self.bias = torch.zeros(8, requires_grad=True).to(device)  # expect: TL013
                self.moved = nn.Linear(8, 8).to(device)
        """,
        CODE,
    )
    assert "plain list" in findings[0].message
    assert "`self.bias` is a tensor made trainable" in findings[1].message


def test_stateless_layers_in_a_list_lose_nothing(lint):
    check(
        lint,
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.pools = [nn.MaxPool2d(2), nn.AvgPool2d(2)]
                self.acts = {"relu": nn.ReLU(), "gelu": nn.GELU()}
                self.drops = [nn.Dropout(0.1), nn.ReLU()]  # expect: TL013
        """,
        CODE,
    )
    # Dropout has train/eval behaviour: `model.eval()` never reaches it in a plain list.


def test_buffers_elsewhere_do_not_hide_a_plain_list(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        class Decoder(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("pos", torch.arange(n))
                self.layers = [nn.TransformerDecoderLayer(64, 4) for _ in range(n)]  # expect: TL013
        """,
        CODE,
    )


def test_list_of_a_generator_of_layers(lint):
    check(
        lint,
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.layers = list(nn.Linear(8, 8) for _ in range(n))  # expect: TL013
                self.sizes = list(range(n))
        """,
        CODE,
    )


# ----- miss: instances of layer classes imported from another package ---------------------------


def test_imported_layer_instances_appended_to_a_plain_list(lint):
    check(
        lint,
        """
        import torch.nn as nn
        from fairseq.modules import FairseqDropout, LayerNorm
        from .blocks import ResidualBlock

        class TransformerEncoder(nn.Module):
            def __init__(self, args, dim, layers):
                super().__init__()
                self.dropouts = []  # expect: TL013
                for i in range(layers):
                    self.dropouts.append(FairseqDropout(args.dropout, module_name=f"layer{i}"))
                self.norms = [LayerNorm(dim) for _ in range(layers)]  # expect: TL013
                self.res = [ResidualBlock(dim)]  # expect: TL013

            def forward(self, x):
                for drop, norm in zip(self.dropouts, self.norms):
                    x = norm(drop(x))
                return self.res[0](x)
        """,
        "TL013",
    )


def test_imported_non_layer_objects_in_plain_lists_are_silent(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        from torchvision.transforms import RandomCrop, Normalize
        from .losses import FocalLoss
        from .utils.meters import AverageMeter
        from .models.layers import Mlp

        class Wrapper(nn.Module):
            def __init__(self, backbone, dims):
                super().__init__()
                self.backbone = backbone
                self.augment = [RandomCrop(224), Normalize((0.5,), (0.5,))]
                self.meters = [AverageMeter() for _ in range(3)]
                self.criteria = [FocalLoss(gamma=2.0)]
                self.heads = nn.ModuleList([Mlp(d, d) for d in dims])
        """,
            "TL013",
        )
        == []
    )


# ----- a plain dict of candidates whose chosen entry is registered ------------------------------

_CANDIDATES = """
    import torch.nn as nn
    import torchvision.models as models


    class SimCLR(nn.Module):
        def __init__(self, base_model, out_dim):
            super().__init__()
            self.resnet_dict = {MARK
                "resnet18": models.resnet18(num_classes=out_dim),
                "resnet50": models.resnet50(num_classes=out_dim),
            }
            self.backbone = self._get_basemodel(base_model)
            dim_mlp = self.backbone.fc.in_features
            self.backbone.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.backbone.fc)
            self.heads = {MARK
                "proj": nn.Linear(out_dim, out_dim),
                "pred": nn.Linear(out_dim, out_dim),
            }
            head = self.heads["proj"] if out_dim > 64 else self.heads["pred"]
            self.head = head

        def _get_basemodel(self, model_name):
            try:
                model = self.resnet_dict[model_name]
            except KeyError:
                raise ValueError(f"{model_name} is none of {sorted(self.resnet_dict)}")
            else:
                return model

        def extra_repr(self):
            return f"{len(self.heads)} heads, backbones: {list(self.resnet_dict.keys())}"

        def forward(self, x):
            USE
            return self.head(self.backbone(x))
"""


def test_candidates_whose_chosen_entry_is_stored_in_a_registered_attribute_are_silent(lint):
    # The dict is a lookup table: the module picked from it becomes `self.backbone` (through a
    # method's return) or `self.head` (through a local), which registers it.
    check(lint, _CANDIDATES.replace("MARK", "").replace("USE", "pass"), CODE)


def test_candidates_also_used_straight_from_the_dict_are_reported(lint):
    # forward runs a module read from the dict itself (and iterates the other one): those reads
    # are stored nowhere, so the parameters they use are not the model's.
    source = _CANDIDATES.replace("MARK", "  # expect: TL013")
    source = source.replace("USE", 'x = self.resnet_dict["resnet18"](x) + sum(h(x) for h in self.heads.values())')
    check(lint, source, CODE)


# ----- a plain dict whose entries a registering container also holds --------------------------------
def test_dict_values_handed_to_a_module_list_are_registered(lint):
    check(
        lint,
        """
        from collections import OrderedDict
        import torch.nn as nn

        class PoseHead(nn.Module):
            def __init__(self, channels, frames):
                super().__init__()
                self.stages = OrderedDict()
                self.stages["squeeze"] = nn.Conv2d(channels, 256, 1)
                self.stages["pose", 0] = nn.Conv2d(frames * 256, 256, 3, padding=1)
                self.stages["pose", 1] = nn.Conv2d(256, 6 * frames, 1)
                self.registered = nn.ModuleList(list(self.stages.values()))

            def forward(self, features):
                out = self.stages["squeeze"](features)
                for i in range(2):
                    out = self.stages["pose", i](out)
                return out.mean(3).mean(2)
        """,
        CODE,
    )


def test_dict_values_spread_into_a_sequential_are_registered(lint):
    check(
        lint,
        """
        import torch.nn as nn

        class Tower(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.blocks = {}
                for i in range(4):
                    self.blocks[i] = nn.Linear(width, width)
                self.body = nn.Sequential(*[block for block in self.blocks.values()])

            def forward(self, x):
                return self.blocks[3](self.body(x))
        """,
        CODE,
    )


def test_dict_values_only_listed_in_a_plain_list_stay_unregistered(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn

        class Tower(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.blocks = {}  # expect: TL013
                for i in range(4):
                    self.blocks[i] = nn.Linear(width, width)
                self.order = list(self.blocks.values())

            def forward(self, x):
                for block in self.order:
                    x = block(x)
                return x
        """,
        CODE,
    )
    assert "`self.blocks` keeps submodules in a plain dict (filled later in `__init__`)" in findings[0].message


# Instances of the file's own module classes in a plain list: lost state only when the class
# (transitively) owns a parameter, a buffer or mode-dependent behaviour.
_SMOOTHERS = """
import torch
from torch import nn

class Smooth(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.width = width
        self.pool = nn.AvgPool1d(width, stride=1)

    def forward(self, x):
        pad = (self.width - 1) // 2
        x = torch.cat([x[..., :1].repeat(1, 1, pad), x, x[..., -1:].repeat(1, 1, pad)], dim=-1)
        return self.pool(x)

class Split(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.smooth = Smooth(width)

    def forward(self, x):
        trend = self.smooth(x)
        return x - trend, trend

LAYER

class MultiSplit(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.splits = [KIND(w) for w in widths]MARK

    def forward(self, x):
        parts = [split(x) for split in self.splits]
        return sum(p[0] for p in parts) / len(parts)
"""

_LEARNED = """class Learned(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.smooth = Smooth(width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(self.smooth(x)), x
"""

_HANDED_IN = """class Wrapped(nn.Module):
    def __init__(self, width, inner=None):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x), x
"""


def test_a_plain_list_of_stateless_project_modules_loses_nothing(lint):
    source = _SMOOTHERS.replace("LAYER", "").replace("KIND", "Split").replace("MARK", "")
    assert lint(source, CODE) == []


@pytest.mark.parametrize(("layer", "kind"), [(_LEARNED, "Learned"), (_HANDED_IN, "Wrapped")])
def test_a_plain_list_of_project_modules_with_state_is_reported(lint, layer, kind):
    source = _SMOOTHERS.replace("LAYER", layer).replace("KIND", kind).replace("MARK", "  # expect: TL013")
    findings = check(lint, source, CODE)
    assert "`self.splits` keeps submodules in a plain list" in findings[0].message


def test_a_stateless_module_class_of_another_file(tmp_path):
    library = _SMOOTHERS.split("LAYER")[0]
    model = _SMOOTHERS.split("LAYER")[1].replace("KIND", "Split").replace("MARK", "")
    model = "from torch import nn\nfrom decomposition import Split\n" + model
    files = {"decomposition.py": library, "model.py": model}
    assert lint_in_project(tmp_path, files, "model.py", CODE) == []


# ----- gradient probes -----------------------------------------------------------------------------


def test_scale_differentiated_against_for_a_gradient_penalty_is_a_probe(lint):
    # The dummy scale is only multiplied in and handed to `autograd.grad` as its input: nothing
    # trains it, so it needs no optimizer, device move or checkpoint.
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch import autograd

        class PenaltyLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.dummy = torch.tensor(1.0).requires_grad_()

            def forward(self, logits, labels):
                even = F.cross_entropy(logits[::2] * self.dummy, labels[::2])
                odd = F.cross_entropy(logits[1::2] * self.dummy, labels[1::2])
                (g_even,) = autograd.grad(even, [self.dummy], create_graph=True)
                g_odd = torch.autograd.grad(odd, inputs=self.dummy, create_graph=True)[0]
                return (g_even * g_odd).sum()
        """,
        CODE,
    )


def test_probed_tensor_that_is_also_trained_is_reported(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn

        class Calibrated(nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net
                self.temperature = torch.ones(1, requires_grad=True)  # expect: TL013
                self.bias = torch.zeros(1, requires_grad=True)  # expect: TL013
                self.shift = torch.zeros(1, requires_grad=True)  # expect: TL013
                self.calib_opt = torch.optim.LBFGS([self.temperature], lr=0.01)

            def forward(self, x):
                return self.net(x) / self.temperature + self.bias + self.shift

            def sharpness(self, loss):
                return torch.autograd.grad(loss, [self.temperature, self.bias, self.shift], create_graph=True)

            def nudge(self, loss, lr):
                (g,) = torch.autograd.grad(loss, [self.bias])
                self.bias.data -= lr * g
                self.shift = self.shift - lr * self.shift.grad
        """,
        CODE,
    )
    assert findings[0].message.startswith("`self.temperature` is a tensor made trainable with `requires_grad=True`")


# ----- containers indexing modules installed elsewhere, tensors reset by hand -------------------


def test_index_of_wrappers_installed_into_the_network_is_fine(lint):
    check(
        lint,
        """
        import torch.nn as nn

        def replace_at(root, dotted, module):
            *outer, name = dotted.split(".")
            owner = root
            for part in outer:
                owner = getattr(owner, part)
            setattr(owner, name, module)

        class Adapted(nn.Module):
            def __init__(self, module):
                super().__init__()
                self.module = module

        class AdaptedModel(nn.Module):
            def __init__(self, net, paths):
                super().__init__()
                self.net = net
                self.adapters = {}
                for path in paths:
                    adapter = Adapted(net.get_submodule(path))
                    replace_at(net, path, adapter)
                    self.adapters[path] = adapter
        """,
        CODE,
    )


def test_index_of_wrappers_only_some_installed_is_reported(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn

        def replace_at(root, dotted, module):
            setattr(root, dotted, module)

        class Adapted(nn.Module):
            def __init__(self, module):
                super().__init__()
                self.module = module

        class AdaptedModel(nn.Module):
            def __init__(self, net, paths, extra):
                super().__init__()
                self.net = net
                self.adapters = {}  # expect: TL013
                for path in paths:
                    adapter = Adapted(net.get_submodule(path))
                    replace_at(net, path, adapter)
                    self.adapters[path] = adapter
                for path in extra:
                    spare = Adapted(nn.Linear(4, 4))
                    print(path, spare)
                    self.adapters[path] = spare
        """,
        CODE,
    )
    assert "`self.adapters` keeps submodules in a plain dict (filled later in `__init__`)" in findings[0].message


def test_context_tensor_reset_per_task_is_fine(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn

        class ContextPolicy(nn.Module):
            def __init__(self, n_in, n_out, n_context):
                super().__init__()
                self.context = torch.zeros(n_context, requires_grad=True)
                self.body = nn.Linear(n_in + n_context, n_out)

            def forward(self, obs):
                return self.body(torch.cat([obs, self.context.expand(obs.shape[0], -1)], dim=-1))

            def new_task(self):
                with torch.no_grad():
                    self.context.zero_()
        """,
        CODE,
    )


def test_tensor_initialised_by_a_method_init_runs_is_reported(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn

        class Scaled(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.scale = torch.ones(n, requires_grad=True)  # expect: TL013
                self.reset_parameters()

            def reset_parameters(self):
                self.scale.data.fill_(1.0)
                self.scale[:] = 1.0

            def forward(self, x):
                return x * self.scale
        """,
        CODE,
    )
    assert "`self.scale` is a tensor made trainable with `requires_grad=True` but not an `nn.Parameter`" in (
        findings[0].message
    )


# ----- indexes of layers installed by the dunder `__setattr__` spelled out ---------------------------


def test_index_of_layers_installed_by_dunder_setattr_is_fine(lint):
    check(
        lint,
        """
        import torch.nn as nn

        class Trunk(nn.Module):
            def __init__(self, sizes, norm=True):
                super().__init__()
                self.hidden = []
                self.norms = []
                self.heads = {}
                width = sizes[0]
                for i, size in enumerate(sizes[1:]):
                    layer = nn.Linear(width, size)
                    self.__setattr__("hidden{}".format(i), layer)
                    self.hidden.append(layer)
                    if norm:
                        ln = nn.LayerNorm(size)
                        nn.Module.__setattr__(self, f"norm{i}", ln)
                        self.norms.append(ln)
                    head = nn.Linear(size, 1)
                    super().__setattr__(f"head{i}", head)
                    self.heads[i] = head
                    width = size
        """,
        CODE,
    )


def test_index_of_layers_set_through_object_setattr_is_reported(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn

        class Trunk(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                self.hidden = []  # expect: TL013
                self.frozen = []  # expect: TL013
                width = sizes[0]
                for i, size in enumerate(sizes[1:]):
                    layer = nn.Linear(width, size)
                    object.__setattr__(self, "hidden{}".format(i), layer)
                    self.hidden.append(layer)
                    probe = nn.Linear(size, 1)
                    self.__setattr__("probe{}".format(i), width)
                    self.frozen.append(probe)
                    width = size
        """,
        CODE,
    )
    assert "`self.hidden` keeps submodules in a plain list (filled later in `__init__`)" in findings[0].message
