"""The server trains the central model itself and only rescales its gradients: nothing ever
clears them, so every step applies the sum of all rounds so far."""

import numpy as np
import torch
import torch.nn.functional as F


def serve(net, samples):
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    while True:
        total = 0.0
        for x, y in samples:
            loss = F.mse_loss(net(torch.from_numpy(np.array([x], dtype=np.float32))), torch.tensor([y]))
            loss.backward()
            for param in net.parameters():
                param.grad = param.grad * 0.5
            optimizer.step()  # expect: TL001
            total += loss.item()
        print(total)
