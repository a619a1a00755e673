"""REINFORCE with a learned baseline on CartPole."""
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical


class Policy(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=128):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def discounted_returns(rewards, gamma):
    out, running = [], 0.0
    for r in reversed(rewards):
        running = r + gamma * running
        out.append(running)
    out.reverse()
    returns = torch.tensor(out, dtype=torch.float32)
    return (returns - returns.mean()) / (returns.std() + 1e-8)


def run(episodes=500, gamma=0.99, lr=3e-3, seed=0):
    env = gym.make("CartPole-v1")
    torch.manual_seed(seed)
    policy = Policy(env.observation_space.shape[0], env.action_space.n)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    recent = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        log_probs, values, rewards = [], [], []
        done = False
        while not done:
            logits, value = policy(torch.as_tensor(obs, dtype=torch.float32))
            dist = Categorical(logits=logits)
            action = dist.sample()
            obs, reward, terminated, truncated, _ = env.step(action.item())
            done = terminated or truncated
            log_probs.append(dist.log_prob(action))
            values.append(value)
            rewards.append(reward)

        returns = discounted_returns(rewards, gamma)
        log_probs = torch.stack(log_probs)
        values = torch.stack(values)
        advantage = returns - values.detach()
        policy_loss = -(log_probs * advantage).sum()
        value_loss = nn.functional.smooth_l1_loss(values, returns)

        optimizer.zero_grad()
        (policy_loss + value_loss).backward()
        nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        optimizer.step()

        recent.append(sum(rewards))
        if episode % 20 == 0:
            print(f"episode {episode}: mean return {np.mean(recent[-20:]):.1f}")
    env.close()
    return policy


if __name__ == "__main__":
    run()
