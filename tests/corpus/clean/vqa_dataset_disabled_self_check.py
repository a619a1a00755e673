"""VQA feature dataset module. Its old self-check sits under a `__name__` guard renamed to switch it
off; the training script that imports this module builds its loaders under its own main guard."""

import json
import os

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class VQAFeatureDataset(Dataset):
    def __init__(self, split, root="data"):
        with open(os.path.join(root, f"{split}_questions.json")) as handle:
            self.entries = json.load(handle)
        self.features = np.load(os.path.join(root, f"{split}_features.npy"), mmap_mode="r")

    def __len__(self):
        return len(self.entries)

    def __getitem__(self, index):
        entry = self.entries[index]
        feature = torch.from_numpy(np.array(self.features[entry["image_index"]]))
        question = torch.tensor(entry["tokens"], dtype=torch.long)
        target = torch.zeros(3129)
        target[entry["labels"]] = torch.tensor(entry["scores"], dtype=torch.float)
        return feature, question, target


if __name__ == "__main_disabled__":
    dataset = VQAFeatureDataset("val")
    loader = DataLoader(dataset, batch_size=8, shuffle=True, num_workers=2)
    for i, (v, q, a) in enumerate(loader):
        print(i, v.shape, q.shape, a.sum().item())
        if i == 3:
            break

if __name__ != "__main__":
    pass
else:
    sizes = DataLoader(VQAFeatureDataset("train"), batch_size=64, num_workers=4)
    print(sum(len(q) for _, q, _ in sizes))
