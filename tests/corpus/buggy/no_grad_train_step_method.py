"""An RL agent whose update method is decorated with no_grad (copied from the act method)."""
import random
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F


class DQNAgent:
    def __init__(self, q_net, target_net, n_actions, lr=1e-4, gamma=0.99):
        self.q = q_net
        self.target = target_net
        self.target.load_state_dict(self.q.state_dict())
        self.optimizer = torch.optim.Adam(self.q.parameters(), lr=lr)
        self.memory = deque(maxlen=100_000)
        self.n_actions, self.gamma = n_actions, gamma

    @torch.no_grad()
    def act(self, state, eps):
        if random.random() < eps:
            return random.randrange(self.n_actions)
        return self.q(state.unsqueeze(0)).argmax(1).item()

    @torch.no_grad()
    def update(self, batch_size=64):
        if len(self.memory) < batch_size:
            return None
        s, a, r, s2, done = map(torch.stack, zip(*random.sample(self.memory, batch_size)))
        q = self.q(s).gather(1, a.view(-1, 1)).squeeze(1)
        target = r + self.gamma * (1 - done) * self.target(s2).max(1).values
        loss = F.smooth_l1_loss(q, target)
        self.optimizer.zero_grad()
        loss.backward()  # expect: TL016
        nn.utils.clip_grad_norm_(self.q.parameters(), 10.0)
        self.optimizer.step()
        return loss.item()

    def run(self, env, episodes=500):
        for episode in range(episodes):
            state, _ = env.reset()
            done = False
            while not done:
                action = self.act(torch.as_tensor(state, dtype=torch.float32), eps=max(0.05, 1 - episode / 300))
                nxt, reward, term, trunc, _ = env.step(action)
                done = term or trunc
                self.memory.append(tuple(torch.as_tensor(v, dtype=torch.float32) for v in
                                         (state, action, reward, nxt, float(term))))
                state = nxt
                self.update()
            if episode % 10 == 0:
                self.target.load_state_dict(self.q.state_dict())
