"""TL006: a model whose forward needs autograd (it takes gradient steps on its own output), and
autograd tied to the model's mode (``with torch.set_grad_enabled(self.model.training):``)."""

from expect_markers import check

CODE = "TL006"

# ----- a forward that needs autograd -------------------------------------------------------------

_REFINER = """
    import torch
    from torch import nn


    class ScoreNet(nn.Module):
        def __init__(self, classes):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(784 + classes, 256), nn.Softplus(), nn.Linear(256, 1))

        def forward(self, x, y):
            return self.body(torch.cat([x.flatten(1), y], dim=1)).squeeze(1)


    class Refiner(nn.Module):
        def __init__(self, score, classes=10, steps=5):
            super().__init__()
            self.score = score
            self.classes = classes
            self.steps = steps

        def forward(self, x):
            y = {start}
            for _ in range(self.steps):
                y = self.descend(x, y)
            return y

        def descend(self, x, y):
            {descend}


    def evaluate(model, loader):
        model.eval()
        correct = 0
        for x, target in loader:
            correct += model(x).argmax(1).eq(target).sum().item()  {marker}
        return correct / len(loader.dataset)


    model = Refiner(ScoreNet(10)).to("cuda")
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(3):
        model.train()
        for x, target in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), target).backward()
            optimizer.step()
        print(evaluate(model, val_loader))
    """

_GRADIENT_STEP = """energy = self.score(x, y).sum()
            (grad,) = torch.autograd.grad(energy, y, create_graph=True)
            return y - 0.1 * grad"""


def test_model_predicting_by_gradient_steps_on_its_output_is_silent(lint):
    # The forward asks autograd for the gradient of the energy with respect to its guess `y`
    # (in a method it calls): under no_grad it could not run at all.
    start = "torch.zeros(x.size(0), self.classes, device=x.device, requires_grad=True)"
    source = _REFINER.format(start=start, descend=_GRADIENT_STEP, marker="")
    assert lint(source, CODE) == []


def test_model_whose_held_submodule_marks_its_input_is_silent(lint):
    # The forward runs a held sub-module whose own forward makes its input require grad.
    source = """
        import torch
        from torch import nn


        class InputGradient(nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, x):
                x = x.detach().requires_grad_()
                out = self.net(x)
                return torch.autograd.grad(out.sum(), x)[0]


        class SmoothedClassifier(nn.Module):
            def __init__(self, net):
                super().__init__()
                self.saliency = InputGradient(net)
                self.net = net

            def forward(self, x):
                return self.net(x * self.saliency(x).abs())


        def validate(model, loader):
            model.eval()
            return sum(model(x).argmax(1).eq(y).sum().item() for x, y in loader)


        model = SmoothedClassifier(nn.Linear(32, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        validate(model, val_loader)
        """
    assert lint(source, CODE) == []


def test_model_whose_forward_only_computes_is_reported(lint):
    # The same loop over a model whose steps ask nothing of autograd: the real waste.
    start = "torch.zeros(x.size(0), self.classes, device=x.device, requires_grad=False)"
    step = "return y + 0.1 * torch.tanh(self.score(x, y)).unsqueeze(1)"
    source = _REFINER.format(start=start, descend=step, marker="# expect: TL006")
    check(lint, source, CODE)
    (finding,) = lint(source, CODE)
    assert finding.message.startswith("`model(...)` evaluates with autograd on in `evaluate()`")


def test_forward_that_backpropagates_only_while_training_is_reported(lint):
    # A trainer written as a module: its forward backpropagates only under `if self.training:`,
    # so in eval mode it needs no autograd and the validation loop records graphs for nothing.
    source = """
        import torch
        from torch import nn


        class StepTrainer(nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, x, y):
                loss = nn.functional.mse_loss(self.net(x), y)
                if self.training:
                    loss.backward()
                return loss.item()


        trainer = StepTrainer(nn.Linear(8, 1))
        optimizer = torch.optim.SGD(trainer.parameters(), lr=0.1)
        for epoch in range(3):
            trainer.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                trainer(x, y)
                optimizer.step()
            trainer.eval()
            for x, y in val_loader:
                print(trainer(x, y))  # expect: TL006
        """
    check(lint, source, CODE)


# ----- autograd tied to the model's mode -------------------------------------------------------------

_META = """
    import torch


    class MetaLearner:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer

        def query_loss(self, batch):
            loss, hits = 0.0, []
            for support, query, labels in zip(batch["train"], *batch["test"]):
                fast = self.adapt(support)
                {switch}
                    logits = self.model(query, params=fast)  {marker}
                    loss = loss + torch.nn.functional.cross_entropy(logits, labels)
                hits.append((logits.argmax(1) == labels).float().mean().item())
            return loss, sum(hits) / len(hits)

        def adapt(self, support):
            return {{name: p for name, p in self.model.named_parameters()}}

        def train_epoch(self, loader):
            self.model.train()
            for batch in loader:
                self.optimizer.zero_grad()
                loss, _ = self.query_loss(batch)
                loss.backward()
                self.optimizer.step()

        def evaluate(self, loader):
            self.model.eval()
            scores = []
            for batch in loader:
                _, accuracy = self.query_loss(batch)
                scores.append(accuracy)
            return sum(scores) / len(scores)
    """


def test_grad_tied_to_the_flag_of_a_model_switched_to_eval_is_silent(lint):
    source = _META.format(switch="with torch.set_grad_enabled(self.model.training):", marker="")
    assert lint(source, CODE) == []


def test_grad_left_on_on_the_evaluation_path_is_reported(lint):
    source = _META.format(switch="if True:", marker="# expect: TL006")
    check(lint, source, CODE)
    (finding,) = lint(source, CODE)
    assert "called at line 35 outside any no-grad block" in finding.message


def test_grad_tied_to_another_models_flag_is_not_decided_by_this_switch(lint):
    # `self.teacher` is never switched on the evaluation path: its flag is not shown False there,
    # so the mode is unknown and the linter stays silent rather than guess.
    source = _META.format(switch="with torch.set_grad_enabled(self.teacher.training):", marker="")
    assert lint(source, CODE) == []
