"""The textbook training function with the clear tied to another flag than the step.

The built-in optimizer clears only when `clip_grad` is off; with clipping on it steps every
iteration on gradients summed over all batches so far.
"""
import torch


def sgd(params, lr, batch_size):
    for param in params:
        param.data -= lr * param.grad / batch_size


def train_classifier(net, train_iter, loss, num_epochs, batch_size, params=None, lr=None, optimizer=None, clip_grad=None):
    for epoch in range(num_epochs):
        loss_sum, seen = 0.0, 0
        for X, y in train_iter:
            batch_loss = loss(net(X), y).sum()

            if optimizer is not None and clip_grad is None:
                optimizer.zero_grad()
            elif params is not None and params[0].grad is not None:
                for param in params:
                    param.grad.data.zero_()

            batch_loss.backward()
            if clip_grad is not None:
                torch.nn.utils.clip_grad_norm_(net.parameters(), clip_grad)
            if optimizer is None:
                sgd(params, lr, batch_size)
            else:
                optimizer.step()  # expect: TL001

            loss_sum += batch_loss.item()
            seen += y.shape[0]
        print(f"epoch {epoch + 1}, loss {loss_sum / seen:.4f}")
