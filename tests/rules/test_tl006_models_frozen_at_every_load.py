"""TL006: a model built in the function whose every weight load is followed, in the same block, by a
freeze of all its parameters runs either untrained or frozen: its forward records no graph. Handing
it to a project function that only runs it (``restore_tiles(denoiser, x)``) neither loads nor trains
it. A partial freeze, a load left unfrozen, or an unfreeze anywhere keeps the finding."""

from expect_markers import check

CODE = "TL006"

_STAGES = """
    import torch
    from torch import nn


    class Denoiser(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.body = nn.Conv2d(channels, channels, 3, padding=1)
            self.head = nn.Conv2d(channels, channels, 1)

        def forward(self, x):
            return x - self.head(self.body(x))


    def run_tiles(denoiser, image):
        return torch.cat([denoiser(tile) for tile in image.chunk(2, dim=-1)], dim=-1)


    def evaluate(images, banks, device):
        denoiser = Denoiser(channels=3)
        current = -1
        restored = []
        for image, level in zip(images, range(len(banks))):
            if level != current:
                denoiser.load_state_dict(banks[level])
                denoiser.eval()
                FREEZE
                denoiser = denoiser.to(device)
                current = level
            restored.append(run_tiles(denoiser, image))
            restored.append(denoiser(image))  MARKER
        return restored
    UNFREEZE    """

_WHOLE = "for _, weight in denoiser.named_parameters():\n                    weight.requires_grad = False"
_PART = "for weight in denoiser.head.parameters():\n                    weight.requires_grad = False"


def _source(freeze, marker="", unfreeze=""):
    return _STAGES.replace("UNFREEZE", unfreeze).replace("FREEZE", freeze).replace("MARKER", marker)


def test_a_model_frozen_right_after_each_load_records_no_graph(lint):
    check(lint, _source(_WHOLE), CODE)


def test_a_load_left_unfrozen_is_reported(lint):
    findings = check(lint, _source("pass", "# expect: TL006"), CODE)
    assert findings[0].message.startswith("`denoiser(...)` evaluates with autograd on in `evaluate()`")


def test_freezing_only_the_head_is_reported(lint):
    findings = check(lint, _source(_PART, "# expect: TL006"), CODE)
    assert findings[0].message.startswith("`denoiser(...)` evaluates with autograd on in `evaluate()`")


def test_switching_gradients_back_on_is_reported(lint):
    tune = "\n\n    def tune(denoiser):\n        denoiser.requires_grad_(True)\n        return denoiser\n"
    check(lint, _source(_WHOLE, "# expect: TL006", tune), CODE)


def test_a_helper_that_loads_weights_into_the_model_it_is_handed_is_reported(lint):
    loading = _source(_WHOLE, "# expect: TL006").replace(
        "return torch.cat(", "denoiser.load_state_dict(torch.load('tiles.pt'))\n        return torch.cat("
    )
    check(lint, loading, CODE)
