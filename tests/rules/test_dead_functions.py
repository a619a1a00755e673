"""Findings inside functions that never run because nothing calls them (``analysis.liveness``): a
script's evaluation function whose every call is commented out, and a ``def`` replaced by a second
``def`` of the same name before anything reads it. What a function does when it runs (TL005, TL006,
TL008) is not reported there (TL006 and TL008 here); the same function called for real, or reachable some other way, still is.
"""

from project_helpers import lint_in_project

# A speaker-embedding training script: `eval_trials` evaluates with autograd on (line 44),
# `accuracy` views a transposed tensor (line 20). The options are printed with `vars(args)` and the EER is logged under a label
# spelled like the function: neither reaches a function by its name.
_SCRIPT = """
import argparse

import torch
import torch.nn.functional as F
from torch.utils.tensorboard import SummaryWriter

parser = argparse.ArgumentParser(description="x-vector training")
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
writer = SummaryWriter("runs/xvector")


def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    return [correct[:k].view(-1).float().sum(0) for k in topk]


def train(model, loader, optimizer, epoch):
    model.train()
    for feats, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(feats), labels)
        loss.backward()
        optimizer.step()
    writer.add_scalar("Train/Loss", loss.item(), epoch)


def valid(model, loader, epoch):
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(feats) for feats, _ in loader])
    writer.add_scalar("Valid/Loss", logits.mean().item(), epoch)


def eval_trials(model, trials, epoch):
    model.eval()
    scores = []
    for enroll, probe in trials:
        scores.append(F.cosine_similarity(model(enroll), model(probe)))
    writer.add_scalars("Test/EER", {"eval_trials": torch.cat(scores).mean().item()}, epoch)
    return scores


def main():
    print("Parsed options: {}".format(vars(args)))
    model = torch.nn.Sequential(
        torch.nn.Linear(40, 512), torch.nn.BatchNorm1d(512), torch.nn.Dropout(0.2), torch.nn.Linear(512, 1211)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    train_loader, valid_loader, trials = torch.load("egs.pt")
    for epoch in range(args.epochs):
        train(model, train_loader, optimizer, epoch)
        CALLS
        valid(model, valid_loader, epoch)
        print(accuracy(model(next(iter(valid_loader))[0]), next(iter(valid_loader))[1], topk=(1, 5)))


if __name__ == "__main__":
    main()
"""

_CALLS = "eval_trials(model, trials, epoch)"
_OFF = "# eval_trials(model, trials, epoch)"


def _script(calls: str, extra: str = "") -> str:
    return _SCRIPT.replace("CALLS", calls) + extra


def _findings(tmp_path, files, code, target="train_xvector.py"):
    return [(f.code, f.line) for f in lint_in_project(tmp_path, files, target, code)]


# ----- positives: the function runs -----------------------------------------------------------------
def test_evaluation_functions_called_for_real_are_reported(tmp_path):
    files = {"train_xvector.py": _script(_CALLS)}
    assert _findings(tmp_path, files, "TL006") == [("TL006", 44)]
    assert _findings(tmp_path, files, "TL008") == [("TL008", 20)]


def test_commented_call_of_a_function_another_file_imports_and_calls_is_reported(tmp_path):
    # The script's own call is switched off, but the scoring tool runs the function.
    files = {
        "train_xvector.py": _script(_OFF),
        "score.py": """
            import torch
            from train_xvector import eval_trials

            if __name__ == "__main__":
                model = torch.load("final.pt")
                eval_trials(model, torch.load("trials.pt"), 0)
            """,
    }
    assert _findings(tmp_path, files, "TL006") == [("TL006", 44)]


def test_function_the_script_looks_up_in_its_own_module_is_reported(tmp_path):
    # `getattr(sys.modules[__name__], name)`: any function of the module may be the one run.
    extra = """
import sys


def run_named(name, *a):
    return getattr(sys.modules[__name__], name)(*a)
"""
    files = {"train_xvector.py": _script(_OFF, extra)}
    assert _findings(tmp_path, files, "TL006") == [("TL006", 44)]


# ----- hard negatives: nothing runs the function ----------------------------------------------------
def test_every_call_commented_out_is_silent(tmp_path):
    # A sibling script copied from this one names it in its header: a file name, not an import.
    files = {
        "train_xvector.py": _script(_OFF),
        "train_xvector_v2.py": '''
            """
            @File: train_xvector.py
            @Time: 2020/3/2
            """
            import torch

            print(torch.__version__)
            ''',
    }
    assert _findings(tmp_path, files, "TL006") == []


def test_helper_called_only_from_a_function_whose_calls_are_commented_out_is_silent(tmp_path):
    script = _script(_OFF).replace("        print(accuracy(", "        # print(accuracy(")
    script = script.replace("    scores = []\n", "    scores = []\n    print(accuracy(model(enroll), probe))\n")
    files = {"train_xvector.py": script}
    assert _findings(tmp_path, files, "TL008") == []


_SHADOWED = """
import torch
import torch.nn.functional as F


def test(loader, model, epoch):
    model.eval()
    total = 0.0
    for data, label in loader:
        out = model(data)
        total += F.cross_entropy(out, label).item()
    print("epoch", epoch, total / len(loader))
BETWEEN

def test(loader, model, epoch, log_interval=10):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for batch_idx, (data, label) in enumerate(loader):
            total += F.cross_entropy(model(data), label).item()
            if batch_idx % log_interval == 0:
                print(batch_idx, total)


def main():
    model = torch.load("resnet_sv.pt")
    loader = torch.load("test_loader.pt")
    for epoch in range(3):
        test(loader, model, epoch)


if __name__ == "__main__":
    main()
"""


def test_def_replaced_by_a_later_def_of_the_same_name_is_silent(tmp_path):
    files = {"train_sv.py": _SHADOWED.replace("BETWEEN", "")}
    assert _findings(tmp_path, files, "TL006", "train_sv.py") == []


def test_def_called_before_it_is_replaced_is_reported(tmp_path):
    # A sanity run at import time calls the first `test` before the second one is written.
    between = """
test(torch.load("smoke_loader.pt"), torch.load("resnet_sv.pt"), -1)
"""
    files = {"train_sv.py": _SHADOWED.replace("BETWEEN", between)}
    assert _findings(tmp_path, files, "TL006", "train_sv.py") == [("TL006", 10)]


def test_def_run_by_module_code_before_it_is_replaced_is_reported(tmp_path):
    # `smoke()` runs the first `test` at import time, before the second `def test` rebinds the name.
    between = """

def smoke():
    test(torch.load("smoke_loader.pt"), torch.load("resnet_sv.pt"), -1)


smoke()
"""
    files = {"train_sv.py": _SHADOWED.replace("BETWEEN", between)}
    assert _findings(tmp_path, files, "TL006", "train_sv.py") == [("TL006", 10)]


# ----- a script nothing imports: a module elsewhere spelled the same is not this one -----------------
_SAME_NAME_ELSEWHERE = {
    "recipes/__init__.py": "",
    "recipes/egs/__init__.py": "",
    "recipes/egs/train_xvector.py": """
        def select_samples(utts, k):
            return utts[:k]
        """,
    "recipes/egs/train_dist.py": """
        from recipes.egs.train_xvector import select_samples

        if __name__ == "__main__":
            print(select_samples(["a", "b", "c"], 2))
        """,
}


def test_uncalled_function_of_a_script_nothing_imports_is_silent(tmp_path):
    # `recipes/egs/train_dist.py` imports `recipes.egs.train_xvector`, another module: not this script.
    files = {**_SAME_NAME_ELSEWHERE, "recipes/spectrogram/train_xvector.py": _script("pass")}
    assert _findings(tmp_path, files, "TL006", "recipes/spectrogram/train_xvector.py") == []


def test_uncalled_function_of_a_script_another_file_imports_is_reported(tmp_path):
    files = {
        **_SAME_NAME_ELSEWHERE,
        "recipes/spectrogram/train_xvector.py": _script("pass"),
        "tools/score.py": """
            from recipes.spectrogram.train_xvector import accuracy

            print(accuracy)
            """,
    }
    found = _findings(tmp_path, files, "TL006", "recipes/spectrogram/train_xvector.py")
    assert found == [("TL006", 44)]
