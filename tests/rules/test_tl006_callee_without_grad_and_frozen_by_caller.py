"""TL006: a call of a helper that runs its whole body with autograd off records no graph, and a
model every caller freezes whole (``requires_grad_(False)``) before handing it over records none."""

from expect_markers import check

# ----- a helper whose whole body runs under no-grad ---------------------------------------------

_CRITIC_TRAINER = """
import torch

class AdversarialTrainer:
    def __init__(self, discriminator, policy, loader):
        self.discriminator = discriminator
        self.policy = policy
        self.loader = loader

    def validate(self):
        self.discriminator.eval()
        scores = []
        for states, actions in self.loader:
            scores.append(self.score_discriminator(states, actions)){mark}
        return sum(scores) / len(scores)

    def score_discriminator(self, states, actions):
        {body}
"""

_WHOLE_BODY_OFF = """with torch.no_grad():
            values = self.discriminator(states, self.policy(states))
            return (values - actions).pow(2).mean().item()"""

_PARTLY_OFF = """with torch.no_grad():
            proposals = self.policy(states)
        values = self.discriminator(states, proposals)
        return (values - actions).pow(2).mean().item()"""

_SWITCHED_BACK_ON = """with torch.no_grad():
            proposals = self.policy(states)
            with torch.enable_grad():
                values = self.discriminator(states, proposals)
            return (values - actions).pow(2).mean().item()"""


def test_call_of_helper_running_whole_body_under_no_grad_is_silent(lint):
    source = _CRITIC_TRAINER.format(mark="", body=_WHOLE_BODY_OFF)
    assert lint(source, "TL006") == []


def test_helper_switching_grad_off_for_part_of_its_body_is_reported(lint):
    # The discriminator runs after the block: the helper records a graph, at its call in `validate`.
    findings = check(lint, _CRITIC_TRAINER.format(mark="  # expect: TL006", body=_PARTLY_OFF), "TL006")
    assert "`self.score_discriminator(...)` evaluates with autograd on in `validate()`" in findings[0].message


def test_helper_switching_grad_back_on_inside_is_reported(lint):
    findings = check(lint, _CRITIC_TRAINER.format(mark="  # expect: TL006", body=_SWITCHED_BACK_ON), "TL006")
    assert findings[0].line == 14


# ----- a model frozen whole by every caller --------------------------------------------------------

_SCRIPT = """
import torch
from detlib import Detector, load_images

def evaluate_detector(model, images, threshold=0.3):
    kept = []
    for image in images:
        batch = torch.from_numpy(image).permute(2, 0, 1).unsqueeze(0).float()
        boxes, scores = model(batch){mark}
        kept.append(boxes[scores > threshold])
    return kept

if __name__ == "__main__":
    detector = Detector(num_classes=80)
    detector.load_state_dict(torch.load("detector.pth", map_location="cpu"))
    {freeze}
    detector.eval()
    detector.cuda()
    results = evaluate_detector(detector, load_images("val/"))
    print(len(results))
"""


def test_model_frozen_whole_by_its_only_caller_is_silent(lint):
    source = _SCRIPT.format(mark="", freeze="detector.requires_grad_(False)")
    assert lint(source, "TL006") == []


def test_model_frozen_by_one_caller_only_is_reported(lint):
    # A second call site hands over a model nothing froze: its forward records a graph.
    source = _SCRIPT.format(mark="  # expect: TL006", freeze="detector.requires_grad_(False)")
    source += """
    fresh = Detector(num_classes=80)
    fresh.load_state_dict(torch.load("other.pth"))
    fresh.eval()
    evaluate_detector(fresh, load_images("test/"))
"""
    findings = check(lint, source, "TL006")
    assert "`model(...)` evaluates with autograd on in `evaluate_detector()`" in findings[0].message


def test_model_frozen_only_in_a_branch_of_the_caller_is_reported(lint):
    source = _SCRIPT.format(
        mark="  # expect: TL006",
        freeze='if "--frozen" in __import__("sys").argv:\n        detector.requires_grad_(False)',
    )
    check(lint, source, "TL006")
