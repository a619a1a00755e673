"""Iterative filter pruning: each round removes the weakest conv filters, which builds new conv
layers and a new feature stack, then fine-tunes with an optimizer over the new parameters."""

import torch
from torch import nn


def narrower_conv(conv, drop):
    keep = [i for i in range(conv.out_channels) if i != drop]
    new = nn.Conv2d(conv.in_channels, len(keep), conv.kernel_size, conv.stride, conv.padding)
    new.weight.data = conv.weight.data[keep].clone()
    new.bias.data = conv.bias.data[keep].clone()
    return new


def remove_filter(network, layer_index, filter_index):
    layers = list(network.features)
    layers[layer_index] = narrower_conv(layers[layer_index], filter_index)
    network.features = nn.Sequential(*layers)
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
            optimizer = torch.optim.SGD(self.network.parameters(), lr=1e-3, momentum=0.9)
            self.recover(optimizer)
