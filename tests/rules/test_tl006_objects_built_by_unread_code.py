"""TL006: an object built by a function of another package the linter cannot read
(``quality_model = make_scorer("sharpness")``) may be a metric that runs its network under no-grad:
its name alone is no evidence of a forward that records a graph. Something the file shows keeps
the finding: a use only a module has (``.load_state_dict``, ``.eval()``), torch's own loader, or a
project factory whose network is shown."""

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL006"

_SCORING = """
    import torch
    from imagescore import make_scorer


    def main(args, test_loader):
        quality_model = make_scorer(args.metric, device=args.device)
        SETUP
        scores = []
        for batch in test_loader:
            scores.append(quality_model(batch["image"]).cpu())  MARKER
        return torch.cat(scores)
    """


def _scoring(setup: str, marker: str = "") -> str:
    return _SCORING.replace("SETUP", setup).replace("MARKER", marker)


def test_an_object_of_an_unread_factory_used_only_as_a_callable_is_not_reported(lint):
    check(lint, _scoring("pass"), CODE)


def test_loading_weights_into_it_shows_a_network(lint):
    findings = check(lint, _scoring("quality_model.load_state_dict(torch.load(args.weights))", "# expect: TL006"), CODE)
    assert findings[0].line == 11
    assert findings[0].message.startswith("`quality_model(...)` evaluates with autograd on in the evaluation loop")


def test_switching_it_to_eval_mode_shows_a_network(lint):
    findings = check(lint, _scoring("quality_model.eval()", "# expect: TL006"), CODE)
    assert findings[0].message.startswith("`quality_model(...)` evaluates with autograd on")


def test_a_model_from_torch_load_is_still_reported(lint):
    findings = check(
        lint,
        """
        import torch


        def main(args, test_loader):
            model = torch.load(args.checkpoint)
            correct = 0
            for x, y in test_loader:
                correct += (model(x).argmax(1) == y).sum().item()  # expect: TL006
            return correct
        """,
        CODE,
    )
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in the evaluation loop")


_FACTORY = """\
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(x)


def make_scorer(name):
    return Scorer()
"""
_SCRIPT = """\
import torch
from scorers import make_scorer


def main(test_loader, path):
    quality_model = make_scorer("sharpness")
    quality_model.load_state_dict(torch.load(path))
    for batch in test_loader:
        print(quality_model(batch).mean().item())
"""


def test_a_project_factory_whose_network_is_shown_is_reported(tmp_path):
    findings = lint_in_project(tmp_path, {"scorers.py": _FACTORY, "score.py": _SCRIPT}, "score.py", CODE)
    assert [(f.line, f.code) for f in findings] == [(9, CODE)]
    assert findings[0].message.startswith("`quality_model(...)` evaluates with autograd on")
