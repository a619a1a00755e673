"""Fine-tuning code that backpropagates inside an inference-mode method and moves the model after restoring its optimizer's state."""
import torch
import torch.nn as nn
from torchvision.models import resnet34


class FineTuner:
    def __init__(self, n_classes, device="cuda", resume=None):
        self.device = device
        self.model = resnet34()
        self.model.fc = nn.Linear(self.model.fc.in_features, n_classes)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        if resume is not None:
            self.optimizer.load_state_dict(torch.load(resume, map_location="cpu")["optimizer"])
        self.model.to(device)  # expect: TL017
        self.criterion = nn.CrossEntropyLoss()

    @torch.inference_mode()
    def adapt_batch_norm(self, loader):
        """Test-time adaptation: a few steps on the target domain."""
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x.to(self.device)), y.to(self.device))
            loss.backward()  # expect: TL016
            self.optimizer.step()

    def train(self, loader, epochs):
        for epoch in range(epochs):
            self.model.train()
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                self.optimizer.zero_grad()
                loss = self.criterion(self.model(x), y)
                loss.backward()
                self.optimizer.step()
