"""The textbook character model with a two-layer RNN given dropout between its layers: sampling
from it every 50 epochs without `eval()` keeps dropping activations (and with autograd on)."""
import torch
from torch import nn


class RNNModel(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.rnn = nn.RNN(vocab_size, hidden, num_layers=2, dropout=0.5)
        self.dense = nn.Linear(hidden, vocab_size)

    def forward(self, inputs, state):
        y, state = self.rnn(inputs, state)
        return self.dense(y), state


def predict_rnn(prefix, num_chars, model, vocab):
    state, output = None, [vocab[prefix[0]]]
    for t in range(num_chars + len(prefix) - 1):
        y, state = model(torch.tensor([[output[-1]]]), state)  # expect: TL005, TL006
        output.append(int(y.argmax(dim=1).item()))
    return output


def main(vocab, train_iter):
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


if __name__ == "__main__":
    main(vocab, train_iter)
