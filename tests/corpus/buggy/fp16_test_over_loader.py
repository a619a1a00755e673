"""A regression test that fine-tunes over a real loader in float16 without a GradScaler."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(path):
    features, labels = torch.load(path)
    return TensorDataset(features, labels)


def test_finetune_reaches_target_loss(tmp_path, model_factory):
    model = model_factory().cuda()
    loader = DataLoader(make_dataset(tmp_path / "shard.pt"), batch_size=64, shuffle=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    criterion = nn.CrossEntropyLoss()
    for _ in range(3):
        for images, labels in loader:
            images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # expect: TL018
            optimizer.step()
    assert loss.item() < 0.5
