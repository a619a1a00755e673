"""PPO on vectorised environments that logs a running loss tensor next to its int step counter."""
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import tyro
from torch.distributions import Categorical


@dataclass
class Args:
    env_id: str = "CartPole-v1"
    num_envs: int = 8
    num_steps: int = 128
    iterations: int = 200
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    lr: float = 2.5e-4


class Agent(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, n_actions))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def main():
    args = tyro.cli(Args)
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(args.env_id) for _ in range(args.num_envs)])
    agent = Agent(envs.single_observation_space.shape[0], envs.single_action_space.n)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    obs_buf = torch.zeros((args.num_steps, args.num_envs) + envs.single_observation_space.shape)
    act_buf = torch.zeros((args.num_steps, args.num_envs))
    logp_buf = torch.zeros((args.num_steps, args.num_envs))
    rew_buf = torch.zeros((args.num_steps, args.num_envs))
    global_step = 0
    episodes_seen = 0
    loss_sum = 0.0
    next_obs, _ = envs.reset(seed=1)
    next_obs = torch.as_tensor(next_obs, dtype=torch.float32)
    for iteration in range(1, args.iterations + 1):
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs_buf[step] = next_obs
            with torch.no_grad():
                action, logprob, _, _ = agent.get_action_and_value(next_obs)
            act_buf[step], logp_buf[step] = action, logprob
            next_obs, reward, term, trunc, _ = envs.step(action.numpy())
            episodes_seen += int(np.logical_or(term, trunc).sum())
            rew_buf[step] = torch.as_tensor(reward)
            next_obs = torch.as_tensor(next_obs, dtype=torch.float32)
        advantages = rew_buf - rew_buf.mean()
        b_obs = obs_buf.reshape((-1,) + envs.single_observation_space.shape)
        for epoch in range(args.update_epochs):
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs, act_buf.reshape(-1).long())
            ratio = (newlogprob - logp_buf.reshape(-1)).exp()
            adv = advantages.reshape(-1)
            pg_loss = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
            v_loss = 0.5 * ((newvalue.view(-1) - adv) ** 2).mean()
            loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()
            loss_sum += loss  # expect: TL010
        print(f"iteration {iteration}: {global_step} steps, {episodes_seen} episodes, loss {loss_sum.item() / args.update_epochs:.3f}")


if __name__ == "__main__":
    main()
