"""Step decay written by hand: plain SGD (no momentum) is rebuilt each epoch with the new learning
rate. Plain SGD keeps no state between steps, so nothing is lost; a class-conditional image is
optimised the same way, over a tensor made anew (and moved) every iteration."""
import torch
import torch.nn.functional as F


def train(model, loader, epochs=30, base_lr=0.1, device="cpu"):
    model.to(device)
    for epoch in range(epochs):
        lr = base_lr * (0.1 ** (epoch // 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=5e-4)
        model.train()
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
    return model


class ClassVisualiser:
    def __init__(self, model, target, use_gpu=False):
        self.model, self.target, self.use_gpu = model.eval(), target, use_gpu

    def run(self, start, iterations=200):
        image = start
        for i in range(iterations):
            self.canvas = torch.tensor(image, dtype=torch.float32, requires_grad=True)
            if self.use_gpu:
                self.canvas = self.canvas.cuda()
            optimizer = torch.optim.Adam([self.canvas], lr=0.05)
            self.model.zero_grad()
            (-self.model(self.canvas.unsqueeze(0))[0, self.target]).backward()
            optimizer.step()
            image = self.canvas.detach().cpu().numpy()
        return image
