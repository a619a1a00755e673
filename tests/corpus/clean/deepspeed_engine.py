"""Training with a DeepSpeed engine: the engine owns zero_grad, accumulation and loss scaling."""
import argparse

import deepspeed
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in, d_hidden, n_classes):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, n_classes)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return self.fc2(self.drop(F.gelu(self.fc1(x))))


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--local_rank", type=int, default=-1)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def main():
    args = parse_args()
    deepspeed.init_distributed()
    model = MLP(512, 1024, 10)
    dataset = torch.utils.data.TensorDataset(torch.randn(4096, 512), torch.randint(0, 10, (4096,)))
    model_engine, optimizer, train_loader, _ = deepspeed.initialize(
        args=args, model=model, model_parameters=model.parameters(), training_data=dataset
    )
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(train_loader):
            x = x.to(model_engine.local_rank).half()
            y = y.to(model_engine.local_rank)
            logits = model_engine(x)
            loss = F.cross_entropy(logits.float(), y)
            model_engine.backward(loss)
            model_engine.step()
            if model_engine.global_rank == 0 and step % 50 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        model_engine.save_checkpoint("ckpt", tag=f"epoch{epoch}")


if __name__ == "__main__":
    main()
