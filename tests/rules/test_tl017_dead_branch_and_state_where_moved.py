"""TL017: state given in a branch whose condition constants decide false (``if resume and False:``)
is given on no path; and state given while the model sat where the move sends it (``model.cuda()``
before building and loading the optimizer, ``model.cuda()`` again, or back after a ``model.cpu()``
around a save) is already on the parameters' device after the move."""

from expect_markers import check

_RESUME = """
import os
import torch
from torch import optim

if os.path.isfile(opt.model_file) CONDITION:
    checkpoint = torch.load(opt.model_file)
    model = checkpoint["model"]
    optimizer = optim.Adam(model.parameters(), opt.lrt)
    optimizer.load_state_dict(checkpoint["optimizer"])
else:
    model = build_model(opt)
    optimizer = optim.Adam(model.parameters(), opt.lrt)

model.cuda()  # MARK
for epoch in range(100):
    train(model, optimizer)
"""


def test_state_loaded_in_a_dead_branch_is_silent(lint):
    assert lint(_RESUME.replace("CONDITION", "and False"), "TL017") == []


def test_state_loaded_in_a_live_branch_is_reported(lint):
    check(lint, _RESUME.replace("CONDITION", "").replace("# MARK", "# expect: TL017"), "TL017")


_ALREADY_THERE = """
import os
import torch
from torch import optim

if os.path.isfile(mfile):
    checkpoint = torch.load(mfile)
    model = checkpoint["model"]
    EARLY_MOVE
    optimizer = optim.Adam(model.parameters(), opt.lrt)
    optimizer.load_state_dict(checkpoint["optimizer"])
else:
    model = build_model(opt)
    optimizer = optim.Adam(model.parameters(), opt.lrt)

model.cuda()  # MARK

for i in range(200):
    train(opt.epoch_size)
    model.cpu()
    torch.save({"model": model, "optimizer": optimizer.state_dict()}, mfile)
    model.cuda()  # MARK
"""


def test_state_loaded_after_the_same_move_is_silent(lint):
    assert lint(_ALREADY_THERE.replace("EARLY_MOVE", "model.cuda()"), "TL017") == []


def test_state_loaded_before_any_move_is_reported(lint):
    source = _ALREADY_THERE.replace("EARLY_MOVE", "model.eval()").replace("# MARK", "# expect: TL017")
    check(lint, source, "TL017")


def test_state_loaded_after_a_different_cast_is_reported(lint):
    source = _ALREADY_THERE.replace("EARLY_MOVE", "model.half()").replace("# MARK", "# expect: TL017")
    check(lint, source, "TL017")
