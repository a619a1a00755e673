# ! pip install open-vocab-tools
# ! pip install git+https://example.org/zero-shot/prompts.git

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

# ! nvidia-smi --query-gpu=memory.used --format=csv

images = CIFAR100(root="data", download=True, train=False, transform=preprocess)
loader = DataLoader(images, batch_size=64, num_workers=4)

correct = 0
with torch.no_grad():
    for pixels, target in loader:
        features = encoder.encode_image(pixels)
        features /= features.norm(dim=-1, keepdim=True)
        correct += (features @ text_features.T).argmax(dim=-1).eq(target).sum().item()
print(f"zero-shot accuracy: {correct / len(images):.3f}")
