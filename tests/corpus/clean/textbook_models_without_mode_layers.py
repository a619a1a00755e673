"""Textbook chapters whose models compute the same in train and eval mode (Linear/ReLU stacks, an
RNN with its default dropout 0, a linear regression written as a function), evaluated without
`eval()`; and a sequence-to-sequence chapter whose loss function is the training step itself."""
import torch
from torch import nn


def linreg(X, w, b):
    return torch.mm(X, w) + b


class RNNModel(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.rnn = nn.RNN(vocab_size, hidden)
        self.dense = nn.Linear(hidden, vocab_size)

    def forward(self, inputs, state):
        y, state = self.rnn(inputs, state)
        return self.dense(y), state


def predict_rnn(prefix, num_chars, model, vocab):
    state, output = None, [vocab[prefix[0]]]
    with torch.no_grad():
        for t in range(num_chars + len(prefix) - 1):
            y, state = model(torch.tensor([[output[-1]]]), state)
            output.append(int(y.argmax(dim=1).item()))
    return output


def evaluate_regressors(models, features, labels):
    with torch.no_grad():
        return [nn.functional.mse_loss(m(features), labels).item() for m in models]


def batch_loss(encoder, decoder, X, Y, loss):
    enc_outputs = encoder(X)
    total = torch.tensor([0.0])
    for y in Y.permute(1, 0):
        total = total + loss(decoder(enc_outputs.mean(1)), y).sum()
    return total / Y.numel()


def train_seq2seq(encoder, decoder, data_iter, num_epochs):
    optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=0.01)
    loss = nn.CrossEntropyLoss(reduction="none")
    for epoch in range(num_epochs):
        for X, Y in data_iter:
            optimizer.zero_grad()
            l = batch_loss(encoder, decoder, X, Y, loss)
            l.backward()
            optimizer.step()


def main(vocab, features, labels, train_iter, data_iter):
    model = RNNModel(len(vocab), 256)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e2)
    for epoch in range(250):
        for X, Y in train_iter:
            optimizer.zero_grad()
            (output, _) = model(X, None)
            nn.functional.cross_entropy(output, Y).backward()
            optimizer.step()
        if (epoch + 1) % 50 == 0:
            print(predict_rnn("time traveller", 50, model, vocab))

    regressors = [nn.Sequential(nn.Linear(1, 20), nn.ReLU(), nn.Linear(20, 1)) for _ in range(5)]
    opt = torch.optim.SGD([p for net in regressors for p in net.parameters()], lr=0.01)
    for _ in range(100):
        opt.zero_grad()
        sum(nn.functional.mse_loss(net(features), labels) for net in regressors).backward()
        opt.step()
    print(evaluate_regressors(regressors, features, labels))

    encoder = nn.Sequential(nn.Embedding(100, 32), nn.Dropout(0.5))
    decoder = nn.Sequential(nn.Linear(32, 32), nn.Dropout(0.5), nn.Linear(32, 100))
    train_seq2seq(encoder, decoder, data_iter, 50)


if __name__ == "__main__":
    main(vocab, features, labels, train_iter, data_iter)
