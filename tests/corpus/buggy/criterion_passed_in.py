"""A reusable training function handed its criterion by main(): the function applies softmax
(and, for the multi-label head, sigmoid) before losses that apply them again."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def train_model(model, criterion, optimizer, loader, epochs=10):
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            probs = F.softmax(model(x), dim=1)
            loss = criterion(probs, y)  # expect: TL012
            loss.backward()
            optimizer.step()


def fit_tags(model, criterion, optimizer, loader):
    model.train()
    for x, tags in loader:
        optimizer.zero_grad()
        loss = criterion(torch.sigmoid(model(x)), tags)  # expect: TL020
        loss.backward()
        optimizer.step()


def main(loader, tag_loader):
    classifier = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    train_model(classifier, nn.CrossEntropyLoss(), torch.optim.SGD(classifier.parameters(), lr=0.1), loader)
    tagger = nn.Linear(128, 20)
    fit_tags(tagger, nn.BCEWithLogitsLoss(), torch.optim.Adam(tagger.parameters()), tag_loader)


if __name__ == "__main__":
    main(torch.load("loader.pt"), torch.load("tags.pt"))
