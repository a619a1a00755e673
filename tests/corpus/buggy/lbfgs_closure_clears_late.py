"""Style transfer with L-BFGS whose closure clears the gradients after computing them."""
import torch
import torch.nn.functional as F


def gram(features):
    b, c, h, w = features.size()
    f = features.view(b * c, h * w)
    return (f @ f.t()) / (b * c * h * w)


def stylize(extractor, content, style, steps=300, style_weight=1e6):
    image = content.clone().requires_grad_(True)
    optimizer = torch.optim.LBFGS([image])
    with torch.no_grad():
        content_target = extractor(content)[-1]
        style_targets = [gram(f) for f in extractor(style)]
    run = [0]
    while run[0] <= steps:

        def closure():
            with torch.no_grad():
                image.clamp_(0, 1)
            feats = extractor(image)
            c_loss = F.mse_loss(feats[-1], content_target)
            s_loss = sum(F.mse_loss(gram(f), t) for f, t in zip(feats, style_targets))
            loss = c_loss + style_weight * s_loss
            loss.backward()
            optimizer.zero_grad()  # expect: TL002
            run[0] += 1
            return loss

        optimizer.step(closure)
    with torch.no_grad():
        image.clamp_(0, 1)
    return image
