"""A textbook training function: a built-in optimizer when one is given, hand-written SGD otherwise.

The clear and the step sit under the same test (`optimizer is not None`, and the `else` of
`optimizer is None`), so every iteration that steps has cleared; the hand-written branch clears by hand.
"""
import torch


def sgd(params, lr, batch_size):
    for param in params:
        param.data -= lr * param.grad / batch_size


def evaluate_accuracy(data_iter, net):
    correct, total = 0.0, 0
    net.eval()
    with torch.no_grad():
        for X, y in data_iter:
            correct += (net(X).argmax(dim=1) == y).float().sum().item()
            total += y.shape[0]
    net.train()
    return correct / total


def train_classifier(net, train_iter, test_iter, loss, num_epochs, batch_size, params=None, lr=None, optimizer=None):
    for epoch in range(num_epochs):
        loss_sum, correct, seen = 0.0, 0.0, 0
        for X, y in train_iter:
            y_hat = net(X)
            batch_loss = loss(y_hat, y).sum()

            if optimizer is not None:
                optimizer.zero_grad()
            elif params is not None and params[0].grad is not None:
                for param in params:
                    param.grad.data.zero_()

            batch_loss.backward()
            if optimizer is None:
                sgd(params, lr, batch_size)
            else:
                optimizer.step()

            loss_sum += batch_loss.item()
            correct += (y_hat.argmax(dim=1) == y).sum().item()
            seen += y.shape[0]
        test_acc = evaluate_accuracy(test_iter, net)
        print(f"epoch {epoch + 1}, loss {loss_sum / seen:.4f}, train acc {correct / seen:.3f}, test acc {test_acc:.3f}")
