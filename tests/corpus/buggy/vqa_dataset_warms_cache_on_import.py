"""VQA feature dataset module that warms the page cache whenever it is imported: the warm-up
loop runs under `__name__ != "__main__"`, which is also true in every spawn worker."""

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


if __name__ != "__main__":
    warm = DataLoader(VQAFeatureDataset("train"), batch_size=256, num_workers=4)  # expect: TL019
    for features, _, _ in warm:
        features.sum()
