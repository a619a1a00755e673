"""Findings inside functions the project never runs are dropped (``analysis.liveness``), and only
those: a function is dead when the project's code shows it (its only call is commented out, its
call sites are all dead, it is private and never named, it is a script's function nobody names),
not merely because the file does not call it."""

import textwrap

from project_helpers import lint_in_project


def _scoring_module(name: str, after: str = "") -> str:
    """A module whose function ``name`` evaluates with autograd on (its model call on line 8),
    followed by the code ``after``."""
    scoring = f"""
        import torch

        def {name}(model, loader):
            model.eval()
            total = 0.0
            for x, y in loader:
                total += torch.nn.functional.cross_entropy(model(x), y).item()
            return total / len(loader)
        """
    return textwrap.dedent(scoring) + textwrap.dedent(after)


_ACCURACY = """
def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    res = []
    for k in topk:
        res.append(correct[:k].view(-1).float().sum(0))
    return res
"""

_BASE = """
class Trainer(object):
    def __init__(self, model, lr):
        self.model = model
        self.lr = lr
"""

_WORKER = (
    """
import torch
from base import Trainer
"""
    + _ACCURACY
    + """

class Worker(Trainer):
    def run(self, loader, test_loader):
        opt = torch.optim.SGD(self.model.parameters(), lr=self.lr)
        for step, (x, y) in enumerate(loader):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(self.model(x), y).backward()
            opt.step()
            if step % 100 == 0:
                torch.save(self.model.state_dict(), "ckpt.pt")
                EVAL

    def _evaluate(self, test_loader):
        self.model.eval()
        hits = 0
        for x, y in test_loader:
            top1, top5 = accuracy(self.model(x), y, topk=(1, 5))
            hits += top1
        return hits
"""
)

# Another class of the project with its own `_evaluate`, which it does call.
_EVALUATOR = """
import torch
from base import Trainer


class Evaluator(Trainer):
    def watch(self, loader):
        for _ in range(3):
            self._evaluate(loader)

    def _evaluate(self, loader):
        with torch.no_grad():
            return sum(self.model(x).sum() for x, _ in loader)
"""

_MAIN = """
from worker import Worker

Worker(net, 0.1).run(train_loader, test_loader)
"""


def _worker_project(tmp_path, evaluate_call: str) -> dict[str, str]:
    return {
        "base.py": _BASE,
        "worker.py": _WORKER.replace("EVAL", evaluate_call),
        "evaluator.py": _EVALUATOR,
        "main.py": _MAIN,
    }


# ----- positives: the function runs, or may be called by users of the module ------------------------
def test_private_method_that_is_called_keeps_its_findings(tmp_path):
    files = _worker_project(tmp_path, "self._evaluate(test_loader)")
    found = lint_in_project(tmp_path, files, "worker.py", "TL006")
    assert [(f.code, f.line) for f in found] == [("TL006", 31)]
    assert "`_evaluate()`" in found[0].message and "autograd on" in found[0].message
    found = lint_in_project(tmp_path, files, "worker.py", "TL008")
    assert [(f.code, f.line) for f in found] == [("TL008", 12)]
    assert "`correct[:k].view(-1)`" in found[0].message


def test_public_function_of_an_importable_module_with_no_caller_is_still_reported(tmp_path):
    files = {
        "metrics.py": _scoring_module("evaluate"),
        "train.py": """
            import metrics

            print(metrics.__doc__)
            """,
    }
    found = lint_in_project(tmp_path, files, "metrics.py", "TL006")
    assert [(f.code, f.line) for f in found] == [("TL006", 8)]
    assert "`evaluate()`" in found[0].message


def test_call_commented_out_in_the_main_block_is_a_choice_of_the_script_not_dead_code(tmp_path):
    files = {
        "ner.py": _scoring_module(
            "evaluate",
            """
            def predict(model, text):
                with torch.no_grad():
                    return model(text)

            if __name__ == "__main__":
                # evaluate(model, val_loader)
                print(predict(model, sample))
            """,
        ),
    }
    found = lint_in_project(tmp_path, files, "ner.py", "TL006")
    assert [(f.code, f.line) for f in found] == [("TL006", 8)]


# ----- hard negatives: code that never runs -----------------------------------------------------------
def test_private_method_whose_only_call_is_commented_out_is_dead_and_so_is_its_helper(tmp_path):
    files = _worker_project(tmp_path, "# self._evaluate(test_loader)")
    assert lint_in_project(tmp_path, files, "worker.py", "TL006") == []
    assert lint_in_project(tmp_path, files, "worker.py", "TL008") == []


def test_private_method_never_named_anywhere_is_dead(tmp_path):
    # `evaluator.py` calls `self._evaluate` of its own class, a sibling of Worker: not this one.
    files = _worker_project(tmp_path, "pass")
    assert lint_in_project(tmp_path, files, "worker.py", "TL006") == []
    assert lint_in_project(tmp_path, files, "worker.py", "TL008") == []


def test_public_function_whose_only_call_is_commented_out_in_an_importing_file_is_dead(tmp_path):
    files = {
        "decoding.py": _scoring_module("evaluate_beams"),
        "gan_loop.py": """
            import torch
            from decoding import *

            def run_epoch(encoder, decoder, batches, optimizer):
                for src, tgt in batches:
                    optimizer.zero_grad()
                    loss = torch.nn.functional.cross_entropy(decoder(encoder(src)), tgt)
                    # score = evaluate_beams(decoder, [(src, tgt)])
                    loss.backward()
                    optimizer.step()
            """,
    }
    assert lint_in_project(tmp_path, files, "decoding.py", "TL006") == []
    # Without the commented call, the public function is an API of the module: still reported.
    files["gan_loop.py"] = files["gan_loop.py"].replace("# score = evaluate_beams", "# beams:")
    assert [f.line for f in lint_in_project(tmp_path, files, "decoding.py", "TL006")] == [8]


def test_top_level_function_of_a_script_nobody_names_is_dead(tmp_path):
    files = {
        "federated.py": """
            import torch

            def server_evaluate(round_number, model, loader):
                model.eval()
                hits = 0
                for x, y in loader:
                    hits += (model(x).argmax(1) == y).sum().item()
                return hits

            strategy = make_strategy(min_clients=5)
            start_simulation(strategy, rounds=3)
            """,
        "helpers.py": """
            def make_strategy(**kwargs):
                return kwargs
            """,
    }
    assert lint_in_project(tmp_path, files, "federated.py", "TL006") == []
