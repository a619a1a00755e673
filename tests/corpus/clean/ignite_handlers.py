"""pytorch-ignite training: engines and event handlers instead of an explicit loop."""
import torch
import torch.nn as nn
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
from ignite.handlers import ModelCheckpoint
from ignite.metrics import Accuracy, Loss


def run(model, train_loader, val_loader, epochs=10, lr=0.01, device="cuda"):
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    criterion = nn.NLLLoss()
    trainer = create_supervised_trainer(model, optimizer, criterion, device=device)
    evaluator = create_supervised_evaluator(
        model, metrics={"accuracy": Accuracy(), "nll": Loss(criterion)}, device=device
    )
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)

    @trainer.on(Events.ITERATION_COMPLETED(every=100))
    def log_training_loss(engine):
        print(f"epoch {engine.state.epoch} iter {engine.state.iteration}: loss {engine.state.output:.3f}")

    @trainer.on(Events.EPOCH_COMPLETED)
    def log_validation_results(engine):
        evaluator.run(val_loader)
        metrics = evaluator.state.metrics
        print(f"validation epoch {engine.state.epoch}: acc {metrics['accuracy']:.3f} nll {metrics['nll']:.3f}")

    @trainer.on(Events.EPOCH_COMPLETED)
    def step_scheduler(engine):
        scheduler.step()

    checkpoint = ModelCheckpoint("ckpt", "mnist", n_saved=2, require_empty=False)
    trainer.add_event_handler(Events.EPOCH_COMPLETED, checkpoint, {"model": model})
    trainer.run(train_loader, max_epochs=epochs)


class LogSoftmaxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return torch.log_softmax(self.body(x), dim=-1)
