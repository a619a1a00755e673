"""TL004 and an optimizer over tensors the iteration cuts from a graph itself (``feats.detach()``,
then marked to require grad): each call optimises objects of its own, so no optimizer state could
carry over from the previous one (new_tensors.creates_leaf_tensor)."""

from expect_markers import check

_REFINE = """
import torch

def refine_level(encoder, decoder, image, target, steps):
    with torch.no_grad():
        codes = encoder(image)
    codes = codes.detach().to(image.device){extra}
    codes.requires_grad = True
    optimizer = torch.optim.Adam([codes{kept}], lr=1e-3){marker}
    for _ in range(steps):
        optimizer.zero_grad()
        (decoder(codes) - target).abs().mean().backward()
        optimizer.step()
    return decoder(codes).detach()

def refine_pyramid(encoder, decoder, images, targets, steps):
    outputs = []
    for image, target in zip(images, targets):
        outputs.append(refine_level(encoder, decoder, image, target, steps))
    return outputs
"""


def test_latents_detached_in_each_call_get_an_optimizer_of_their_own(lint):
    check(lint, _REFINE.format(extra="", kept="", marker=""), "TL004")


def test_tuple_of_detached_latents_is_fresh_too(lint):
    source = _REFINE.replace(
        "    codes = codes.detach().to(image.device){extra}\n",
        "    codes, skip = codes.detach().to(image.device), codes.detach()\n",
    )
    check(lint, source.format(kept=", skip", marker=""), "TL004")


def test_optimizer_also_over_the_decoder_kept_across_calls_is_reported(lint):
    findings = check(
        lint,
        _REFINE.format(extra="", kept=", *decoder.parameters()", marker="  # expect: TL004"),
        "TL004",
    )
    assert "builds a new optimizer in every iteration" in findings[0].message
    assert "through the call at line" in findings[0].message
