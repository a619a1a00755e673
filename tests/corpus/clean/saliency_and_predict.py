"""Inference script: load a checkpoint, predict, and compute gradient saliency maps."""
import argparse

import torch
import torch.nn.functional as F
from PIL import Image
from torchvision import models, transforms

TF = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                         transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def load_model(path, device):
    model = models.resnet50()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model.to(device).eval()


@torch.inference_mode()
def predict(model, images, topk=5):
    probs = F.softmax(model(images), dim=-1)
    return probs.topk(topk, dim=-1)


def saliency(model, image, target=None):
    """Gradient of the top score w.r.t. the input pixels: needs autograd on."""
    image = image.clone().requires_grad_(True)
    scores = model(image)
    cls = scores.argmax(-1) if target is None else target
    scores.gather(1, cls.view(-1, 1)).sum().backward()
    return image.grad.abs().amax(dim=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("images", nargs="+")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = load_model(args.checkpoint, device)
    batch = torch.stack([TF(Image.open(p).convert("RGB")) for p in args.images]).to(device)
    values, indices = predict(model, batch)
    for path, v, i in zip(args.images, values, indices):
        print(path, [(int(c), round(float(p), 3)) for c, p in zip(i, v)])
    maps = saliency(model, batch)
    torch.save(maps.cpu(), "saliency.pt")


if __name__ == "__main__":
    main()
