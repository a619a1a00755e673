"""Architecture search with a controller: both optimizers are written into the log before the models
move to the GPU. Formatting an optimizer into a string reads it; its state is still empty."""

import torch
from torch import nn

ROW = "{:<14}: {:}"


class Controller(nn.Module):
    def __init__(self, num_edges, num_ops, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(num_ops, hidden)
        self.lstm = nn.LSTMCell(hidden, hidden)
        self.head = nn.Linear(hidden, num_ops)
        self.num_edges = num_edges

    def forward(self):
        h = c = torch.zeros(1, self.lstm.hidden_size)
        x = self.embed.weight.mean(0, keepdim=True)
        logits = []
        for _ in range(self.num_edges):
            h, c = self.lstm(x, (h, c))
            logits.append(self.head(h))
        return torch.stack(logits)


class Logger:
    def __init__(self, path):
        self.path = path

    def log(self, text):
        with open(self.path, "a") as handle:
            handle.write(text + "\n")


def search(shared, loader, epochs, log_path):
    logger = Logger(log_path)
    controller = Controller(num_edges=6, num_ops=5)
    w_optimizer = torch.optim.SGD(shared.parameters(), lr=0.025, momentum=0.9, nesterov=True)
    a_optimizer = torch.optim.Adam(controller.parameters(), lr=3.5e-4, betas=(0.0, 0.999))
    logger.log("w-optimizer : {:}".format(w_optimizer))
    logger.log(ROW.format("a-optimizer", a_optimizer))
    logger.log(f"groups: {len(a_optimizer.param_groups)}")
    shared, controller = nn.DataParallel(shared).cuda(), controller.cuda()
    for _ in range(epochs):
        for images, labels in loader:
            images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
            w_optimizer.zero_grad()
            nn.functional.cross_entropy(shared(images), labels).backward()
            w_optimizer.step()
            a_optimizer.zero_grad()
            controller().logsumexp(-1).mean().backward()
            a_optimizer.step()
    return shared, controller
