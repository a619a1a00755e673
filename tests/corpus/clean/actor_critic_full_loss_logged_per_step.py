"""Actor-critic training on batches gathered from an experience stream: the policy gradients are
taken apart for logging, then value and entropy losses are backpropagated; the full loss is put
back together per step only to be logged, and input-gradient norms are asked for without a graph."""

import torch
import torch.nn.functional as F


def train(net, experience, writer, cfg):
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.lr, eps=1e-3)
    batch = []
    saliency = 0.0
    for step, transition in enumerate(experience):
        batch.append(transition)
        if len(batch) < cfg.batch_size:
            continue
        states, actions, returns = cfg.unpack(batch)
        batch.clear()

        optimizer.zero_grad()
        states.requires_grad_(True)
        logits, values = net(states)
        value_loss = F.mse_loss(values.squeeze(-1), returns)
        log_probs = F.log_softmax(logits, dim=1)
        advantage = returns - values.squeeze(-1).detach()
        policy_loss = -(advantage * log_probs[range(len(actions)), actions]).mean()
        entropy_loss = cfg.entropy_beta * (F.softmax(logits, dim=1) * log_probs).sum(dim=1).mean()

        policy_loss.backward(retain_graph=True)
        (state_grads,) = torch.autograd.grad(policy_loss, states, retain_graph=True, create_graph=False)
        saliency += state_grads.abs().mean()

        loss = entropy_loss + value_loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.clip_grad)
        optimizer.step()
        # the full loss, for the log only
        loss += policy_loss
        writer.add_scalar("loss_total", loss.item(), step)
        writer.add_scalar("saliency", float(saliency) / (step + 1), step)
