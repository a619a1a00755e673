"""PyTorch's names, as data: the one place that says which classes, functions and methods mean what.

Every model of ``torchmodel`` and every rule takes its PyTorch names from here, so that a
name added once (a new optimizer package, a new wrapper) is seen by all of them. Qualified
names are canonical (``analysis.imports.canonical``: ``torch.nn.modules.loss.MSELoss`` is
``torch.nn.MSELoss``). Prefixes end with a dot when they name a package, and without one when
they name a class or function that may be followed by an attribute.

Where two lists look alike but differ, the difference is meant and said next to them.
"""

from __future__ import annotations

# ----- optimizers, schedulers, scalers ------------------------------------------------------------
# `torch.optim.<Capitalised>` is an optimizer, except what lives in these packages.
NOT_OPTIMIZER_PACKAGES = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
# Optimizer classes of other libraries (a scheduler among them is told by its own name: "...Scheduler",
# "get_..."; `schedulefree.AdamWScheduleFree` is an optimizer).
THIRD_PARTY_OPTIMIZERS = (
    "transformers.AdamW",
    "transformers.Adafactor",
    "transformers.optimization.AdamW",
    "transformers.optimization.Adafactor",
    "timm.optim.",
    "bitsandbytes.optim.",
    "bnb.optim.",
    "apex.optimizers.",
    "torch_optimizer.",
    "deepspeed.ops.adam.",
    "deepspeed.ops.lamb.",
    "lion_pytorch.Lion",
    "schedulefree.",
)
# Optimizers that keep per-parameter state only when one setting turns it on: that argument (its
# keyword, its position in the call). `torch.optim.SGD` fills a momentum buffer only when `momentum` is
# not 0; its learning rate, weight decay, dampening and nesterov flag need no state between steps.
STATE_SWITCHES = {"torch.optim.SGD": ("momentum", 2), "torch.optim.sgd.SGD": ("momentum", 2)}
# Base classes that make a class of the project an optimizer / a learning-rate scheduler.
OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})
SCHEDULER_BASES = ("torch.optim.lr_scheduler.",)
SCHEDULERS = (
    "torch.optim.lr_scheduler.",
    "transformers.get_",
    "transformers.optimization.get_",
    # `AdafactorSchedule(optimizer)`: a LambdaLR that reads Adafactor's own relative step size.
    "transformers.AdafactorSchedule",
    "transformers.optimization.AdafactorSchedule",
    "timm.scheduler.",
    "diffusers.optimization.get_",
    # pytorch-transformers 1.x: its `optimization` schedules are subclasses of torch's LambdaLR.
    *(
        f"pytorch_transformers.{module}{name}"
        for module in ("", "optimization.")
        for name in (
            "ConstantLRSchedule",
            "WarmupConstantSchedule",
            "WarmupCosineSchedule",
            "WarmupCosineWithHardRestartsSchedule",
            "WarmupLinearSchedule",
        )
    ),
)
# Libraries that projects often ship as a copy inside a package of their own
# (`from mypkg.pytorch_transformers import WarmupLinearSchedule`): the copy's names mean the library's.
VENDORED_LIBRARIES = frozenset({"pytorch_transformers"})
SCALERS = frozenset({"torch.amp.GradScaler", "torch.GradScaler"})

# ----- frameworks -----------------------------------------------------------------------------------
# Top-level packages of other deep-learning frameworks: a file that imports one of them and nothing
# of PyTorch runs that framework's models (``torchmodel.frameworks``).
OTHER_FRAMEWORKS = frozenset(
    {"tensorflow", "keras", "tf_keras", "jax", "flax", "haiku", "paddle", "mxnet", "mindspore", "oneflow"}
)
# Top-level packages whose import shows PyTorch code: torch itself and libraries built only on it.
TORCH_PACKAGES = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "torchtext",
        "torchmetrics",
        "pytorch_lightning",
        "lightning",
        "timm",
        "accelerate",
        "deepspeed",
        "apex",
        "monai",
        "fairseq",
        "detectron2",
        "mmcv",
        "peft",
    }
)

# ----- models ---------------------------------------------------------------------------------------
# Base classes that make a class a torch module (its instances are models).
MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "pytorch_lightning.LightningModule",
        "pytorch_lightning.core.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "transformers.PreTrainedModel",
        "transformers.modeling_utils.PreTrainedModel",
    }
)
# The same bases spelled without an import the linter can resolve (`class Net(nn.Module)` in a
# snippet that imports nothing).
MODULE_BASE_SPELLINGS = frozenset({"nn.Module", "Module", "LightningModule"})
# Lightning's module base: its subclasses' instances have the methods below.
LIGHTNING_MODULE_BASES = frozenset(base for base in MODULE_BASES if base.endswith(".LightningModule"))
LIGHTNING_MODULE_SPELLINGS = frozenset({"LightningModule", "pl.LightningModule", "L.LightningModule"})
# `LightningModule.freeze()` sets `requires_grad = False` on every parameter and calls `self.eval()`;
# `unfreeze()` sets `requires_grad = True` on every parameter and calls `self.train()`.
LIGHTNING_FREEZE_METHOD = "freeze"
LIGHTNING_UNFREEZE_METHOD = "unfreeze"
# `Cls.load_from_checkpoint(path)`: a LightningModule classmethod that builds an instance of `Cls`.
LIGHTNING_CHECKPOINT_LOADER = "load_from_checkpoint"
# Factories and zoos whose calls build a model.
MODEL_FACTORIES = ("torchvision.models.", "timm.create_model", "timm.models.")
# `torch.nn.<Capitalised>` builds a model (a layer is a module), except these containers of
# tensors and the two that hold no weights of their own.
NOT_MODEL_LAYERS = frozenset({"Parameter", "ParameterList", "ParameterDict", "Module", "Identity"})
# Calls that hand back their (first) argument wrapped, compiled or converted: the result is the
# same model (`DDP(model)`, `torch.compile(model)`).
MODEL_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.compile",
        "torch.jit.script",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    }
)
# The same wrappers by their bare names (imported from places the linter does not resolve:
# `from fairscale... import FSDP`, a project's `DDP = DistributedDataParallel`).
MODEL_WRAPPER_NAMES = frozenset({"DDP", "DistributedDataParallel", "DataParallel", "FSDP"})
# Methods that move or convert a module (or a tensor) to a device or dtype and return it:
# the result holds what the receiver held.
DEVICE_DTYPE_MOVES = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16"})
# Methods of a module that return the module itself: the moves, and the mode switches.
MODULE_SELF_RETURNING = DEVICE_DTYPE_MOVES | {"train", "eval"}
# Wrappers whose parameters are the wrapped module's own Parameter objects, none added or copied
# (`nn.DataParallel(model)` broadcasts them to its replicas through autograd, so a frozen parameter
# stays frozen in every replica): what was frozen on the module is frozen through the wrapper.
PARAMETER_SHARING_WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.compile",
    }
)
# `a, b = accelerator.prepare(a, b)`: frameworks whose setup call returns its arguments, wrapped, in order.
PREPARE_METHODS = frozenset({"prepare", "setup", "initialize", "prepare_model", "setup_module"})
# Optimizer wrappers that hand out the torch optimizer they wrap as `.optimizer` and whose `step()` and
# `zero_grad()` are that optimizer's: Lightning's LightningOptimizer (what `self.optimizers()` returns in
# a LightningModule), accelerate's AcceleratedOptimizer (`accelerator.prepare(opt)`) and Fabric's
# optimizer (`fabric.setup(model, opt)`, `fabric.setup_optimizers(opt)`). Clearing `opt.optimizer`
# clears what `opt.step()` applies. Not DeepSpeed's or apex's FP16 optimizers (their `.optimizer`
# steps fp32 master copies, other gradients than the model's), so not `initialize`.
WRAPPED_OPTIMIZER_ATTRIBUTE = "optimizer"
LIGHTNING_OPTIMIZERS_METHOD = "optimizers"
OPTIMIZER_WRAPPING_METHODS = frozenset({"prepare", "setup", "setup_optimizers"})
# Methods whose result is a module's trainable tensors (what an optimizer is built from).
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
# Methods of a module with no tensor counterpart: an object asked for them is a model, never the
# output of one (`.to()`, `.cuda()`, `.float()` are tensors' too).
MODULE_ONLY_METHODS = frozenset(
    {
        *PARAMETER_METHODS,
        "eval",
        "train",
        "load_state_dict",
        "state_dict",
        "modules",
        "named_modules",
        "children",
        "named_children",
        "buffers",
        "named_buffers",
    }
)
# Methods of a module that load trained weights into it (a checkpoint, a pretrained state).
STATE_LOADING_METHODS = frozenset({"load_state_dict", "load", "load_weights", "from_pretrained"})
# ... and those that load, reset or re-initialise its weights in place.
WEIGHT_LOADING_METHODS = STATE_LOADING_METHODS | {"apply", "init_weights", "reset_parameters"}
# Methods that hook code into a module's forward or backward: what the module computes reaches the hook
# even when the caller drops the call's value.
HOOK_REGISTRATIONS = frozenset(
    {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "register_backward_hook"}
)
# Methods of a module that read it or move it and leave its weights as they are, whatever they are
# handed (`model.to(device)`, `model.parameters()`, `model.register_forward_hook(fn)`).
WEIGHT_KEEPING_METHODS = (
    MODULE_SELF_RETURNING
    | PARAMETER_METHODS
    | {
        "state_dict",
        "buffers",
        "named_buffers",
        "modules",
        "named_modules",
        "children",
        "named_children",
        "zero_grad",
        "requires_grad_",
        "register_buffer",
    }
    | HOOK_REGISTRATIONS
)

# ----- layers -----------------------------------------------------------------------------------------
# torch.nn layers without weights or buffers: building one costs nothing and keeping one in a plain
# list loses no state.
WEIGHTLESS_LAYERS = frozenset(
    {
        "ReLU",
        "ReLU6",
        "LeakyReLU",
        "ELU",
        "SELU",
        "CELU",
        "GELU",
        "SiLU",
        "Mish",
        "Sigmoid",
        "Tanh",
        "Hardtanh",
        "Hardswish",
        "Hardsigmoid",
        "Softplus",
        "Softsign",
        "Softmax",
        "LogSoftmax",
        "Softmin",
        "Softmax2d",
        "Tanhshrink",
        "Softshrink",
        "Hardshrink",
        "Threshold",
        "GLU",
        "LogSigmoid",
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "AlphaDropout",
        "FeatureAlphaDropout",
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d",
        "LPPool1d",
        "LPPool2d",
        "MaxUnpool1d",
        "MaxUnpool2d",
        "MaxUnpool3d",
        "Flatten",
        "Unflatten",
        "Upsample",
        "UpsamplingNearest2d",
        "UpsamplingBilinear2d",
        "PixelShuffle",
        "PixelUnshuffle",
        "ChannelShuffle",
        "ZeroPad1d",
        "ZeroPad2d",
        "ZeroPad3d",
        "ConstantPad1d",
        "ConstantPad2d",
        "ConstantPad3d",
        "ReflectionPad1d",
        "ReflectionPad2d",
        "ReflectionPad3d",
        "ReplicationPad1d",
        "ReplicationPad2d",
        "ReplicationPad3d",
        "CircularPad1d",
        "CircularPad2d",
        "CircularPad3d",
        "Fold",
        "Unfold",
        "CosineSimilarity",
        "PairwiseDistance",
        "Identity",
    }
)
# Packages of torch whose classes may be nn.Modules; any other class of torch (a distribution,
# `torch.Size`, `torch.Generator`, a dataset or loader, an optimizer) builds no submodule.
MODULE_PACKAGES = ("torch.nn.", "torch.ao.nn.", "torch.jit.", "torch.fx.", "torch.export.", "torch.hub.")


def builds_no_module(qual: str) -> bool:
    """Whether the torch name ``qual`` is a class that surely builds no ``nn.Module`` (functions such
    as ``torch.compile`` may return one)."""
    return qual.startswith("torch.") and qual.rsplit(".", 1)[-1][:1].isupper() and not qual.startswith(MODULE_PACKAGES)


# Dropout layers: weightless, yet not "stateless": they behave differently in train and eval mode,
# so `model.eval()` must reach them.
DROPOUT_LAYERS = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
# ----- train/eval mode ---------------------------------------------------------------------------------------
# TL005/TL007 speak only of models shown to compute differently in train and eval mode: built (through
# classes, containers, helpers) from one of these. Anything else -- a layer the linter cannot see, a
# model from an unknown place -- is unknown, and unknown is silent.
# torch.nn layers (qualified) whose output depends on the mode as built with their defaults: dropout
# (zeroes activations in training only) and batch norm (batch statistics and running-average updates
# in training, running averages in eval).
MODE_DEPENDENT_LAYERS = frozenset(
    "torch.nn." + name
    for name in DROPOUT_LAYERS
    | {
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "LazyBatchNorm1d",
        "LazyBatchNorm2d",
        "LazyBatchNorm3d",
        "SyncBatchNorm",
    }
)
# torch.nn layers whose mode dependence is their `dropout` argument: (its position, whether the
# default is non-zero). Recurrent layers and MultiheadAttention default to 0.0 (the same in both
# modes); the Transformer layers to 0.1.
DROPOUT_ARGUMENT_LAYERS = {
    "torch.nn.RNN": (6, False),
    "torch.nn.LSTM": (5, False),
    "torch.nn.GRU": (5, False),
    "torch.nn.MultiheadAttention": (2, False),
    "torch.nn.Transformer": (5, True),
    "torch.nn.TransformerEncoderLayer": (3, True),
    "torch.nn.TransformerDecoderLayer": (3, True),
}
# Recurrent layers apply their `dropout` only between stacked layers, never after the last one
# (PyTorch warns when `num_layers` is 1): the position of `num_layers`, whose default is 1.
STACKED_DROPOUT_LAYERS = {"torch.nn.RNN": 2, "torch.nn.LSTM": 2, "torch.nn.GRU": 2}
# torch.nn containers whose mode is that of the layers handed to them (positionally).
LAYER_CONTAINERS = frozenset(
    {
        "torch.nn.Sequential",
        "torch.nn.ModuleList",
        "torch.nn.ModuleDict",
        "torch.nn.TransformerEncoder",
        "torch.nn.TransformerDecoder",
    }
)
# torch.nn containers that register the very modules or parameters handed to them (not copies:
# `TransformerEncoder` clones its layer, so the layer handed to it stays unregistered).
REGISTERING_CONTAINERS = frozenset(
    {
        "torch.nn.Sequential",
        "torch.nn.ModuleList",
        "torch.nn.ModuleDict",
        "torch.nn.ParameterList",
        "torch.nn.ParameterDict",
    }
)
# Norm layers that keep running statistics, and so differ between modes, only when asked
# (`track_running_stats=True`; batch norm, above, keeps them by default).
RUNNING_STATS_NORMS = frozenset(
    "torch.nn." + name
    for name in (
        "InstanceNorm1d",
        "InstanceNorm2d",
        "InstanceNorm3d",
        "LazyInstanceNorm1d",
        "LazyInstanceNorm2d",
        "LazyInstanceNorm3d",
    )
)
# Model constructors of libraries documented to build mode-dependent models (qualified-name
# prefixes), each with what makes it so. torchvision's ViTs are left out on purpose: LayerNorm and
# dropout 0.0 by default, the same in both modes.
MODE_DEPENDENT_CONSTRUCTORS = {
    "torchvision.models.resnet": "BatchNorm2d",
    "torchvision.models.resnext": "BatchNorm2d",
    "torchvision.models.wide_resnet": "BatchNorm2d",
    "torchvision.models.vgg": "Dropout in the classifier (and BatchNorm2d in the _bn variants)",
    "torchvision.models.alexnet": "Dropout in the classifier",
    "torchvision.models.densenet": "BatchNorm2d",
    "torchvision.models.inception": "BatchNorm2d and Dropout",
    "torchvision.models.googlenet": "BatchNorm2d and Dropout",
    "torchvision.models.mobilenet": "BatchNorm2d and Dropout",
    "torchvision.models.mnasnet": "BatchNorm2d and Dropout",
    "torchvision.models.shufflenet": "BatchNorm2d",
    "torchvision.models.squeezenet": "Dropout",
    "torchvision.models.efficientnet": "BatchNorm2d, Dropout and stochastic depth",
    "torchvision.models.regnet": "BatchNorm2d",
    "torchvision.models.convnext": "stochastic depth (training only)",
    "torchvision.models.swin": "stochastic depth (training only)",
    "torchvision.models.maxvit": "BatchNorm2d and stochastic depth",
    "torchvision.models.detection.": "forward returns losses in training mode, detections in eval mode",
    "torchvision.models.segmentation.": "BatchNorm2d backbones and heads",
    "torchvision.models.video.": "BatchNorm3d",
    "torchvision.models.quantization.": "BatchNorm2d",
}
# `timm.create_model("<name>")`: families whose every variant has batch norm.
TIMM_MODE_DEPENDENT_FAMILIES = (
    "resnet",
    "resnext",
    "seresnet",
    "wide_resnet",
    "efficientnet",
    "tf_efficientnet",
    "mobilenet",
    "densenet",
    "regnet",
    "inception",
    "vgg",
    "dla",
    "dpn",
    "mnasnet",
    "ghostnet",
    "rexnet",
    "hrnet",
    "cspresnet",
    "cspdarknet",
    "darknet",
    "xception",
    "nfnet",
    "res2net",
    "resnest",
    "selecsls",
)
# `timm.create_model(...)` keywords that switch on dropout or stochastic depth when non-zero.
TIMM_DROP_KEYWORDS = frozenset({"drop_rate", "drop_path_rate", "drop_block_rate"})
# Loader methods documented to hand back their model in eval mode: transformers'
# `PreTrainedModel.from_pretrained` and diffusers' `ModelMixin.from_pretrained` call `model.eval()`
# before returning (so does peft's `PeftModel.from_pretrained` unless asked for a trainable model).
EVAL_MODE_LOADER_METHODS = frozenset({"from_pretrained"})
# Hugging Face classes (`<Prefix>...from_pretrained(...)`) whose default configuration has dropout
# (hidden/attention dropout 0.1). Llama-style models (dropout 0.0) are not among them.
HF_DROPOUT_MODEL_PREFIXES = (
    "Bert",
    "Roberta",
    "XLMRoberta",
    "DistilBert",
    "Electra",
    "GPT2",
    "OpenAIGPT",
    "T5",
    "MT5",
    "Bart",
    "MBart",
    "Marian",
    "Pegasus",
    "XLNet",
    "Deberta",
    "Camembert",
    "Longformer",
    "BigBird",
    "Wav2Vec2",
    "Whisper",
)
# Functional dropouts, with the position and name of the parameter that says whether it applies.
DROPOUT_FUNCTIONS = {
    "torch.nn.functional.dropout": (2, "training"),
    "torch.nn.functional.dropout1d": (2, "training"),
    "torch.nn.functional.dropout2d": (2, "training"),
    "torch.nn.functional.dropout3d": (2, "training"),
    "torch.nn.functional.alpha_dropout": (2, "training"),
    "torch.nn.functional.feature_alpha_dropout": (2, "training"),
    "torch.dropout": (2, "train"),
    "torch.alpha_dropout": (2, "train"),
    "torch.feature_dropout": (2, "train"),
    "torch.feature_alpha_dropout": (2, "train"),
}
# Functions whose result depends on the mode they are told, and where they are told it (position,
# keyword): the functional dropouts and batch norm. Not told, a dropout is on in both modes and batch
# norm uses its running statistics in both: the call computes the same whatever the module's mode.
MODE_FUNCTIONS = {**DROPOUT_FUNCTIONS, "torch.nn.functional.batch_norm": (5, "training")}
# Wrappers that hold the wrapped model's weights, not new ones (built per iteration, they cost nothing).
WRAPPING_LAYERS = frozenset({"DataParallel", "DistributedDataParallel", "SyncBatchNorm"})

# ----- losses and activations -------------------------------------------------------------------------
# `torch.nn.<Name>Loss` is a criterion class, and so are these deprecated aliases of one whose name
# does not end in "Loss" (`NLLLoss2d` is `NLLLoss` under an old name; its `weight` is a buffer, not a
# parameter).
LOSS_ALIASES = frozenset({"torch.nn.NLLLoss2d"})
# torch.nn loss modules that hold parameters of their own (their result carries a graph whatever
# their operands).
LOSSES_WITH_PARAMETERS = frozenset({"torch.nn.AdaptiveLogSoftmaxWithLoss"})
# The functional losses (torch.nn.functional.<name>).
FUNCTIONAL_LOSSES = frozenset(
    {
        "cross_entropy",
        "nll_loss",
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "kl_div",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "margin_ranking_loss",
        "cosine_embedding_loss",
        "triplet_margin_loss",
        "ctc_loss",
        "poisson_nll_loss",
        "gaussian_nll_loss",
        "soft_margin_loss",
        "multilabel_soft_margin_loss",
        "hinge_embedding_loss",
        "multi_margin_loss",
    }
)
FUNCTIONAL = "torch.nn.functional."
# Reductions that average what they reduce: a loss built with one is a mean, not a sum over its samples.
MEAN_REDUCTION_METHODS = frozenset({"mean", "nanmean"})
MEAN_REDUCTION_FUNCTIONS = frozenset({"torch.mean", "torch.nanmean"})
CROSS_ENTROPY_FUNCTIONS = frozenset({"torch.nn.functional.cross_entropy"})
# Tensor methods a loss is followed back through to what it is computed from (a loss reduced, cast or
# reshaped): a subset of graphs.GRAPH_KEEPING_METHODS, which says more broadly whose result keeps a graph.
LOSS_CARRYING_METHODS = frozenset({"mean", "sum", "float", "to", "squeeze", "view", "reshape", "clone"})
# Functions that combine the tensors of a collection (their first argument) into one that carries
# all their graphs: `sum(costs)`, `torch.stack(losses)` -- a loss built from per-sample losses.
COLLECTION_REDUCTIONS = frozenset({"sum", "torch.stack", "torch.cat", "torch.sum", "torch.mean"})
CROSS_ENTROPY_MODULES = frozenset({"torch.nn.CrossEntropyLoss"})
BCE_WITH_LOGITS_FUNCTIONS = frozenset(
    {"torch.nn.functional.binary_cross_entropy_with_logits", "torch.binary_cross_entropy_with_logits"}
)
BCE_WITH_LOGITS_MODULES = frozenset({"torch.nn.BCEWithLogitsLoss"})
# Output activations, by kind: (functions taking the tensor first, tensor methods, module classes).
ACTIVATION_FUNCTIONS = {
    "softmax": frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}),
    "log_softmax": frozenset({"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"}),
    "sigmoid": frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"}),
}
ACTIVATION_METHODS = {
    "softmax": frozenset({"softmax"}),
    "log_softmax": frozenset({"log_softmax"}),
    "sigmoid": frozenset({"sigmoid"}),
}
ACTIVATION_MODULES = {
    "softmax": frozenset({"torch.nn.Softmax"}),
    "log_softmax": frozenset({"torch.nn.LogSoftmax"}),
    "sigmoid": frozenset({"torch.nn.Sigmoid"}),
}
SEQUENTIAL = "torch.nn.Sequential"

# ----- the training step --------------------------------------------------------------------------------
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})  # accelerator/fabric .backward(loss)
# Calls that return a loaded module (a compiled extension's kernels): `ext.backward(...)` on what
# they return is the extension's function, no autograd backward.
MODULE_LOADERS = frozenset(
    {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline", "importlib.import_module"}
)
# The same kernels reached through the operator registry instead: `torch.ops.<namespace>` is the
# namespace of the ops a loaded library registered (`load(..., is_python_module=False)`), no tensor.
OPERATOR_NAMESPACES = frozenset({"torch.ops"})
STEP_METHODS = frozenset({"step", "optimizer_step"})  # opt.step(), xm.optimizer_step(opt)
XLA_OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"
CLIP_FUNCTIONS = frozenset(
    {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm"}
)
CLIP_METHODS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_gradients"})
FOREACH_ZERO = "torch._foreach_zero_"
# Mixed-precision calls whose result is their first argument, scaled (`scaler.scale(loss)`, apex's `amp.scale_loss`).
LOSS_SCALING_METHODS = frozenset({"scale", "scale_loss"})

# ----- autograd mode -------------------------------------------------------------------------------------
INFERENCE_MODE = "torch.inference_mode"
NO_GRAD = frozenset({"torch.no_grad", INFERENCE_MODE})
ENABLE_GRAD = frozenset({"torch.enable_grad"})
SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})
# Code that asks autograd for gradients, so it needs autograd on wherever it runs (saliency maps,
# adversarial examples, losses on input gradients, gradient-based inference): these methods of a
# tensor, these functions, and a call given one of these keywords as `True`
# (`torch.zeros(n, requires_grad=True)`, `torch.autograd.grad(..., create_graph=True)`).
AUTOGRAD_METHODS = frozenset({"backward", "requires_grad_", "retain_grad"})
AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.grad", "torch.autograd.backward", "torch.enable_grad"})
AUTOGRAD_KEYWORDS = frozenset({"requires_grad", "create_graph"})
# Functions that return the gradients of outputs with respect to `inputs` (their second argument)
# without touching `.grad`: a tensor made trainable only to be one of those inputs is a probe.
GRADIENT_FUNCTIONS = frozenset({"torch.autograd.grad"})
# Functions whose results carry an autograd graph only when asked for one: the parameter that
# asks (`create_graph`, false by default) and its position. Without it the gradients (and, for
# `torch.autograd.functional`, the function's outputs too) come back with `requires_grad=False`.
GRAPH_ON_REQUEST_FUNCTIONS = {
    "torch.autograd.grad": ("create_graph", 4),
    "torch.autograd.functional.jacobian": ("create_graph", 2),
    "torch.autograd.functional.hessian": ("create_graph", 2),
    "torch.autograd.functional.vjp": ("create_graph", 3),
    "torch.autograd.functional.jvp": ("create_graph", 3),
    "torch.autograd.functional.vhp": ("create_graph", 3),
    "torch.autograd.functional.hvp": ("create_graph", 3),
}
# Context managers of other libraries, whose source the linter does not read, that switch autograd
# while they are entered, as their documentation says (a project's own ones are read: a generator
# context manager whose `yield` sits inside a switch, see `gradmode.grad_effect`).
# MONAI's `eval_mode(*nets)` puts the networks in eval mode and yields inside `torch.no_grad()`;
# its `train_mode(*nets)` puts them in train mode and yields inside `torch.set_grad_enabled(True)`.
GRAD_DISABLING_CONTEXTS = frozenset({"monai.networks.utils.eval_mode", "monai.networks.eval_mode"})
GRAD_ENABLING_CONTEXTS = frozenset({"monai.networks.utils.train_mode", "monai.networks.train_mode"})
# `contextlib.contextmanager`: a generator function made a context manager; its body up to the
# `yield` runs on entry, so what is switched around the `yield` is switched inside the `with` block.
GENERATOR_CONTEXT_DECORATORS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})

# `nn.Parameter(...)`, by both of its spellings.
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Methods of a module that register a new submodule or parameter (its last argument) into it.
PARAMETER_REGISTERING_METHODS = frozenset({"register_parameter", "add_module", "register_module"})
# `obj.__setattr__(name, value)` spelled out (`self.__setattr__`, `super().__setattr__`) sets an
# attribute as `setattr(obj, name, value)` does, so a module set by it is registered. Called through
# a class (`nn.Module.__setattr__(self, name, value)`) it registers only when that class is a torch
# module: `object.__setattr__(self, name, net)` skips registration (the usual way to hide a network).
ATTRIBUTE_SETTING_METHOD = "__setattr__"
# ... and those that register any state, buffers included.
REGISTERING_METHODS = PARAMETER_REGISTERING_METHODS | {"register_buffer"}
# In-place tensor methods that overwrite every element with a new value (a reset, not an update).
VALUE_RESETTING_METHODS = frozenset({"zero_", "fill_", "copy_", "normal_", "uniform_"})
# The legacy `Variable(x)` wrapper: since PyTorch 0.4 it hands back the tensor `x` itself (same
# data; `requires_grad=True` marks it a leaf to optimise, `volatile` is ignored).
VARIABLE_WRAPPERS = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Tensor methods that hand back a new leaf tensor object cut from the receiver's graph
# (`feats.detach()`): an optimizer over the result holds an object made by that call, no other.
NEW_LEAF_METHODS = frozenset({"detach"})
# Functions that rearrange, join or reduce the tensors of their first argument (a tensor or a sequence
# of them) and read nothing else; the other arguments are a pattern, sizes or dimensions. What they return
# is made from those tensors only (`einops.rearrange(torch.randn(...), "b c h w -> b (h w) c")` is still
# a synthetic batch).
TENSOR_SHAPE_FUNCTIONS = frozenset(
    {
        "einops.rearrange",
        "einops.repeat",
        "einops.reduce",
        "torch.cat",
        "torch.concat",
        "torch.stack",
        "torch.reshape",
        "torch.flatten",
        "torch.permute",
        "torch.transpose",
        "torch.squeeze",
        "torch.unsqueeze",
    }
)

# Tensor methods that read their receiver and nothing else (shape, device, dtype, a copy, a reshape): called
# on a tensor that stays the same, they give the same data back -- unlike `loader_iter.next()`.
TENSOR_VALUE_METHODS = frozenset(
    {"size", "dim", "detach", "clone", "view", "reshape", "contiguous", "expand", "expand_as", "long", "int"}
)
# torch functions that draw random numbers: noise added to a batch leaves it the same batch, but an index
# drawn from them (`data[torch.randint(n, (bs,))]`) picks new samples.
RANDOM_FUNCTIONS = frozenset(
    {
        "torch.rand",
        "torch.randn",
        "torch.randint",
        "torch.randperm",
        "torch.rand_like",
        "torch.randn_like",
        "torch.randint_like",
        "torch.multinomial",
        "torch.bernoulli",
        "torch.normal",
    }
)
# Builtins that compute a value from their arguments only.
PURE_BUILTINS = frozenset({"max", "min", "abs", "sum", "float", "int", "len", "round", "pow"})

# ----- data ------------------------------------------------------------------------------------------------
DATALOADER = "torch.utils.data.DataLoader"
DISTRIBUTED_SAMPLER = "torch.utils.data.DistributedSampler"
# DataLoader's positional parameters, in order.
DATALOADER_PARAMS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")
# Worker start methods. With "fork" a worker is a copy of the running process and never re-imports
# the main script; "spawn" (Windows, macOS) and "forkserver" re-import it.
FORK_START_METHOD = "fork"
START_METHOD_SETTERS = frozenset({"multiprocessing.set_start_method", "torch.multiprocessing.set_start_method"})
# Linux-only markers: code that uses one of these unconditionally runs only on Linux, whose default
# start method is fork. The Ascend NPU stack (the `torch_npu` plugin, the `torch.npu` module of its
# builds) ships for Linux only; its collective backend is "hccl".
LINUX_ONLY_MODULES = frozenset({"torch_npu", "torch.npu"})
LINUX_ONLY_BACKENDS = frozenset({"hccl"})

# ----- distributed training -----------------------------------------------------------------------------
# Wrappers that train one model data-parallel: every rank holds the model (or a shard of it), reads its
# own part of the data, and the gradients are averaged across ranks.
DATA_PARALLEL_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.distributed._composable.fully_shard",
        "fairscale.nn.FullyShardedDataParallel",
        "fairscale.nn.data_parallel.FullyShardedDataParallel",
        "fairscale.nn.data_parallel.ShardedDataParallel",
    }
)
# The same wrappers by the bare names they are imported under from places the linter does not resolve.
DATA_PARALLEL_WRAPPER_NAMES = frozenset(
    {"DDP", "DistributedDataParallel", "FSDP", "FullyShardedDataParallel", "fully_shard"}
)
# Collectives that sum (or average) a tensor across ranks: handed parameter gradients, they make a
# hand-written data-parallel step.
REDUCING_COLLECTIVES = frozenset(
    {
        "torch.distributed.all_reduce",
        "torch.distributed.all_reduce_coalesced",
        "torch.distributed.reduce",
        "torch.distributed.reduce_scatter",
        "torch.distributed.reduce_scatter_tensor",
    }
)
# Calls that start the processes' communication without saying how the work is split.
PROCESS_GROUP_SETUP = frozenset({"torch.distributed.init_process_group"})
# Seeding functions that do not reach the generator a shuffling DataLoader draws from (torch's default
# CPU generator): a per-rank seed given only to these leaves every rank's shuffle the same.
SEEDS_OUTSIDE_TORCH = frozenset(
    {
        "random.seed",
        "numpy.random.seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "tensorflow.random.set_seed",
    }
)

# The installed PyTorch's version string, and the functions that parse a version string into an
# object ordered like versions (`LooseVersion(torch.__version__) < LooseVersion("0.4.0")`).
TORCH_VERSION = "torch.__version__"
VERSION_PARSERS = frozenset(
    {
        "distutils.version.LooseVersion",
        "distutils.version.StrictVersion",
        "packaging.version.parse",
        "packaging.version.Version",
        "pkg_resources.parse_version",
    }
)
# The release where autograd's Variable merged into Tensor: before it, `Variable(x, volatile=True)`
# made every result of `x` record no graph; since it, `volatile` is ignored.
VOLATILE_REMOVED_IN = (0, 4)
# Code written for a PyTorch before this release (it reads a scalar's `.data[0]`, or the project pins
# one) runs either on a release that honours `volatile=True` or on one where that code raises: its
# evaluation fed volatile inputs records no graph on any release it runs through.
VOLATILE_HONOURED_BY_CODE_BEFORE = (1, 0)
# The release where the functional dropouts' `training` began to default to True (pytorch#10417):
# before it, `F.dropout(x, p)` without `training=` dropped nothing in either mode.
DROPOUT_TRAINING_DEFAULT_ON_SINCE = (1, 0)
