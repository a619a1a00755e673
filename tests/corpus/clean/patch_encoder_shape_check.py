"""After loading a patch encoder, check that it accepts patch tokens of the expected layout:
the batch is random and rearranged into tokens, so the call is a shape probe, not evaluation."""

import einops
import torch
from patchnets import PatchEncoder


def validate_token_layout(checkpoint_path, patch=4):
    encoder = PatchEncoder(dim=3 * patch * patch)
    encoder.load_state_dict(torch.load(checkpoint_path, map_location="cpu"))
    encoder.eval()
    frames = torch.rand(2, 3, 8 * patch, 8 * patch)
    tokens = einops.rearrange(frames, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=patch, p2=patch)
    cls = torch.zeros(2, 1, tokens.shape[-1])
    features = encoder(torch.cat([cls, tokens], dim=1))
    assert features.shape[1] == 65, features.shape
    print("token layout ok:", tuple(features.shape))
