"""Filter "pruning" by zeroing: the weakest conv filters are zeroed in place (same parameter
tensors), yet a new optimizer is built each round, losing the momentum buffers for nothing."""

import torch
from torch import nn


def remove_filter(network, layer_index, filter_index):
    conv = network.features[layer_index]
    conv.weight.data[filter_index].zero_()
    conv.bias.data[filter_index] = 0.0
    return network


class PruningSession:
    def __init__(self, network, train_loader, rounds):
        self.network = network
        self.train_loader = train_loader
        self.rounds = rounds

    def weakest_filters(self):
        scores = []
        for index, layer in enumerate(self.network.features):
            if isinstance(layer, nn.Conv2d):
                norms = layer.weight.detach().abs().sum(dim=(1, 2, 3))
                scores.append((norms.min().item(), index, int(norms.argmin())))
        return [(index, channel) for _, index, channel in sorted(scores)[:4]]

    def recover(self, optimizer):
        self.network.train()
        for images, labels in self.train_loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(self.network(images.cuda()), labels.cuda())
            loss.backward()
            optimizer.step()

    def run(self):
        for step in range(self.rounds):
            network = self.network.cpu()
            for layer_index, filter_index in self.weakest_filters():
                network = remove_filter(network, layer_index, filter_index)
            self.network = network.cuda()
            optimizer = torch.optim.SGD(self.network.parameters(), lr=1e-3, momentum=0.9)  # expect: TL004
            self.recover(optimizer)
