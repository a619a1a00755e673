"""Offline RL trainer (behaviour cloning on logged Atari frames) that rolls the policy out after
each epoch. The policy goes to eval mode for the rollout and nothing puts it back: from the second
epoch on, behaviour cloning trains without dropout. (The environment's `eval()` is its own.)"""

from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F


class AtariEnv:
    def __init__(self, game, history=4):
        self.game = game
        self.frames = deque(maxlen=history)
        self.training = True

    def train(self):
        self.training = True

    def eval(self):
        self.training = False

    def reset(self):
        for _ in range(self.frames.maxlen):
            self.frames.append(torch.zeros(84, 84))
        return torch.stack(list(self.frames))

    def step(self, action):
        done = not self.training or action == 0
        return torch.stack(list(self.frames)), float(action), done


class Policy(nn.Module):
    def __init__(self, actions=6):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 9 * 9, 512), nn.Dropout(0.1), nn.Linear(512, actions))

    def forward(self, frames):
        return self.head(self.conv(frames))


class Trainer:
    def __init__(self, policy, dataset, game):
        self.policy = policy
        self.dataset = dataset
        self.game = game
        self.optimizer = torch.optim.AdamW(policy.parameters(), lr=3e-4)

    def run_epoch(self, split):
        is_train = split == "train"
        loader = torch.utils.data.DataLoader(self.dataset, batch_size=64, shuffle=is_train)
        for frames, actions in loader:
            with torch.set_grad_enabled(is_train):
                loss = F.cross_entropy(self.policy(frames), actions)
            if is_train:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

    def rollout(self):
        self.policy.eval()
        env = AtariEnv(self.game)
        env.eval()
        state, total, done = env.reset(), 0.0, False
        with torch.no_grad():
            while not done:
                state, reward, done = env.step(self.policy(state[None]).argmax(-1).item())
                total += reward
        return total

    def fit(self, epochs):
        for epoch in range(epochs):
            self.run_epoch("train")
            print(f"epoch {epoch}: return {self.rollout():.1f}")  # expect: TL007


if __name__ == "__main__":
    frames = torch.randn(1024, 4, 84, 84)
    actions = torch.randint(0, 6, (1024,))
    Trainer(Policy(), torch.utils.data.TensorDataset(frames, actions), "pong").fit(10)
