"""Validate a loaded patch encoder on a real batch rearranged into patch tokens: evaluation,
with autograd left on."""

import einops
import torch
from patchnets import PatchEncoder


def validate_tokens(checkpoint_path, val_loader, patch=4):
    encoder = PatchEncoder(dim=3 * patch * patch)
    encoder.load_state_dict(torch.load(checkpoint_path, map_location="cpu"))
    encoder.eval()
    frames, _ = next(iter(val_loader))
    tokens = einops.rearrange(frames, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=patch, p2=patch)
    cls = torch.zeros(2, 1, tokens.shape[-1])
    features = encoder(torch.cat([cls, tokens], dim=1))  # expect: TL006
    assert features.shape[1] == 65, features.shape
    print("validation features:", tuple(features.shape))
