"""A tutorial-style notebook script: the optimizer is created before the model is moved to the
device, but it has no state yet, and `Module.to` keeps the Parameter objects it refers to."""
import torch
import torch.nn as nn
import torch.optim as optim


class NBoW(nn.Module):
    def __init__(self, vocab_size, embedding_dim, output_dim, pad_index):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.fc = nn.Linear(embedding_dim, output_dim)

    def forward(self, ids):
        return self.fc(self.embedding(ids).mean(dim=1))


def train(data_loader, model, criterion, optimizer, device):
    model.train()
    losses = []
    for batch in data_loader:
        ids, label = batch["ids"].to(device), batch["label"].to(device)
        loss = criterion(model(ids), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def main(vocab, train_loader, n_epochs=10):
    model = NBoW(len(vocab), 300, 2, vocab["<pad>"])
    optimizer = optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    criterion = criterion.to(device)
    for epoch in range(n_epochs):
        print(epoch, train(train_loader, model, criterion, optimizer, device))


if __name__ == "__main__":
    main(torch.load("vocab.pt"), torch.load("train_loader.pt"))
