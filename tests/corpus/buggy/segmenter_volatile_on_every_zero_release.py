"""Sliding-window segmentation that checks only the major release: 0.4 to 0.4.1 take the volatile branch, where volatile is ignored."""

import numpy as np
import torch
from torch.autograd import Variable

TORCH_MINOR = torch.__version__[:1]


def predict_window(net, window):
    logits = net(Variable(torch.from_numpy(window), volatile=True).cuda())  # expect: TL006
    return logits.softmax(1).cpu().numpy()


def predict_image(net, image, size=512):
    out = np.zeros_like(image)
    for top in range(0, image.shape[2], size):
        out[:, :, top : top + size] = predict_window(net, image[:, :, top : top + size])
    return out


def main(net, loader):
    net.load_state_dict(torch.load("segmenter.pth"))
    net.cuda().eval()
    for image, name in loader:
        if TORCH_MINOR == "0":
            mask = predict_image(net, image.numpy())
        else:
            with torch.no_grad():
                mask = predict_image(net, image.numpy())
        np.save(f"{name}.npy", mask.argmax(1))


if __name__ == "__main__":
    from segmenter import Segmenter, tile_loader

    main(Segmenter(), tile_loader())
