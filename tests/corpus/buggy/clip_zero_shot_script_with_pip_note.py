# Zero-shot CIFAR-100 with an open-vocabulary encoder.
# Install the extras first: pip install open-vocab-tools
# ! Note: the first run downloads the encoder weights (about 350 MB).

import torch
from openvocab import load_encoder
from torch.utils.data import DataLoader
from torchvision.datasets import CIFAR100

encoder, preprocess = load_encoder("vit-small")
encoder.eval()

classes = CIFAR100(root="data", download=True, train=False).classes
prompts = [f"a photo of a {name}." for name in classes]

with torch.no_grad():
    text_features = encoder.encode_text(prompts)
    text_features /= text_features.norm(dim=-1, keepdim=True)

images = CIFAR100(root="data", download=True, train=False, transform=preprocess)
loader = DataLoader(images, batch_size=64, num_workers=4)  # expect: TL019

correct = 0
with torch.no_grad():
    for pixels, target in loader:
        features = encoder.encode_image(pixels)
        features /= features.norm(dim=-1, keepdim=True)
        correct += (features @ text_features.T).argmax(dim=-1).eq(target).sum().item()
print(f"zero-shot accuracy: {correct / len(images):.3f}")
