"""Advantage actor-critic on vectorised environments: each update collects a short rollout."""

import torch
import torch.optim as optim

from envs import make_envs
from nets import ActorCritic

envs = make_envs("CartPole-v1", 8)
model = ActorCritic(envs.observation_space.shape[0], envs.action_space.n)
optimizer = optim.Adam(model.parameters(), lr=3e-4)


def discounted(last_value, rewards, masks, gamma=0.99):
    running, out = last_value, []
    for reward, mask in zip(reversed(rewards), reversed(masks)):
        running = reward + gamma * running * mask
        out.insert(0, running)
    return out


obs = envs.reset()
frames = 0
while frames < 200_000:
    log_probs, values, rewards, masks = [], [], [], []
    entropy = 0
    for _ in range(5):
        dist, value = model(torch.as_tensor(obs, dtype=torch.float32))
        action = dist.sample()
        obs, reward, done, _ = envs.step(action.numpy())
        entropy += dist.entropy().mean()
        log_probs.append(dist.log_prob(action))
        values.append(value)
        rewards.append(torch.as_tensor(reward, dtype=torch.float32).unsqueeze(1))
        masks.append(torch.as_tensor(1 - done, dtype=torch.float32).unsqueeze(1))
        frames += 8
    _, last_value = model(torch.as_tensor(obs, dtype=torch.float32))
    returns = torch.cat(discounted(last_value, rewards, masks)).detach()
    advantage = returns - torch.cat(values)
    actor_loss = -(torch.cat(log_probs) * advantage.detach()).mean()
    critic_loss = advantage.pow(2).mean()
    loss = actor_loss + 0.5 * critic_loss - 0.001 * entropy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
