"""TL005: a model wrapper (not an ``nn.Module``) whose project base class, in another file, loops
over network names and switches ``getattr(self, "net_" + name)`` to eval mode may have put any
``self.net_<x>`` in eval mode: when a method the wrapper runs (through ``self.m(...)``) does so,
the mode where it evaluates is not shown to be training. A prefix that matches no evaluated
attribute, a switch no method of the wrapper reaches, or one that switches to training mode
proves nothing: the missing ``eval()`` is still reported."""

from expect_markers import assert_marked
from project_helpers import lint_in_project

CODE = "TL005"

_BASE = """
    import os

    import torch


    class BaseModel:
        def initialize(self, opt):
            self.opt = opt
            self.gpu_ids = opt.gpu_ids
            self.is_train = opt.is_train
            self.network_names = []

        def restore(self, epoch):
            for name in self.network_names:
                path = os.path.join(self.opt.checkpoints, f"{epoch}_{name}.pth")
                network = getattr(self, PREFIX_EXPR)
                network.load_state_dict(torch.load(path))
                if not self.is_train:
                    network.SWITCH
"""

# The builder of the pix2pix family: a network wrapped for several GPUs when it is given some.
_NETWORKS = """
    from torch import nn


    def wrap_for_devices(net, gpu_ids):
        if len(gpu_ids) > 0:
            net = nn.DataParallel(net, gpu_ids).cuda()
        return net


    def build_translator(channels, dropout, gpu_ids):
        layers = [nn.Conv2d(channels, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.Dropout(dropout)]
        net = nn.Sequential(*layers, nn.Conv2d(64, channels, 3, padding=1))
        return wrap_for_devices(net, gpu_ids)
"""

_WRAPPER = """
    import torch

    from .base import BaseModel
    from .networks import build_translator


    class InferenceModel(BaseModel):
        def initialize(self, opt):
            assert not opt.is_train
            BaseModel.initialize(self, opt)
            self.network_names = ["translator"]
            self.net_translator = build_translator(opt.channels, opt.dropout, opt.gpu_ids)
            RESTORE

        def test(self, images):
            with torch.no_grad():
                self.fake = self.net_translator.forward(images)  # MARKER
            return self.fake
"""


def _lint(tmp_path, prefix='"net_" + name', switch="eval()", restore="self.restore(opt.epoch)", marker=""):
    wrapper = _WRAPPER.replace("RESTORE", restore).replace("# MARKER", marker)
    files = {
        "models/__init__.py": "",
        "models/base.py": _BASE.replace("PREFIX_EXPR", prefix).replace("SWITCH", switch),
        "models/networks.py": _NETWORKS,
        "models/inference.py": wrapper,
    }
    findings = lint_in_project(tmp_path, files, "models/inference.py", CODE)
    assert_marked(findings, wrapper, (CODE,))
    return findings


def test_a_base_class_loop_switching_networks_named_at_run_time_may_put_them_in_eval_mode(tmp_path):
    _lint(tmp_path)


def test_every_spelling_of_a_run_time_name_with_that_prefix_counts(tmp_path):
    for prefix in ('f"net_{name}"', '"net_%s" % name', '"net_{}".format(name)', "name"):
        _lint(tmp_path, prefix=prefix)


def test_a_switch_to_a_mode_held_in_a_value_leaves_the_mode_unknown(tmp_path):
    _lint(tmp_path, switch="train(not self.is_train)")


def test_a_prefix_that_names_no_evaluated_network_is_still_reported(tmp_path):
    (finding,) = _lint(tmp_path, prefix='"disc_" + name', marker="# expect: TL005")
    assert finding.line == 18
    assert finding.message.startswith("`self.net_translator.forward(...)` evaluates in training mode in `test()`")


def test_a_switch_no_method_of_the_wrapper_reaches_is_still_reported(tmp_path):
    (finding,) = _lint(tmp_path, restore="self.ready = True", marker="# expect: TL005")
    assert finding.message.startswith("`self.net_translator.forward(...)` evaluates in training mode in `test()`")


def test_a_switch_to_training_mode_does_not_prove_eval_mode(tmp_path):
    _lint(tmp_path, switch="train()", marker="# expect: TL005")
