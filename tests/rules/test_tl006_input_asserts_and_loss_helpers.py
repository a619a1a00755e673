"""TL006: a script's ``test()`` that reloads the best checkpoint and evaluates it over the test
loader is evaluation even when it asserts a sanity check on the batches it reads (only a test that
asserts on what it computes is a unit test), and a loss helper named for validation that only runs a
parameter-free distance module on the tensors it is given records no graph of its own (whether
those require grad is its caller's question)."""

from expect_markers import check

CODE = "TL006"

# ----- a sanity assert on the data does not make a unit test ---------------------------------------

_SCRIPT = """
    import argparse

    import torch
    from torch import nn
    from torch.autograd import Variable

    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=int, default=8)
    args = parser.parse_args()

    model = nn.GRU(4, 16, batch_first=True)
    head = nn.Linear(16, 4)
    optimizer = torch.optim.Adam([*model.parameters(), *head.parameters()])
    train_loader = torch.utils.data.DataLoader(torch.load("train.pt"), batch_size=32)
    test_loader = torch.utils.data.DataLoader(torch.load("test.pt"), batch_size=32)


    def train(epoch):
        model.train()
        for series, _ in train_loader:
            optimizer.zero_grad()
            hidden, _ = model(series[:, :-1])
            loss = nn.functional.mse_loss(head(hidden), series[:, 1:])
            loss.backward()
            optimizer.step()
        torch.save(model.state_dict(), "best.pt")


    def test():
        model.eval()
        model.load_state_dict(torch.load("best.pt"))
        errors = []
        for step, (series, labels) in enumerate(test_loader):
            series = Variable(series.cuda(), volatile=True)
            {check}
            hidden, _ = model(series[:, : args.window])  {marker}
            errors.append(nn.functional.mse_loss(head(hidden), series[:, 1 : args.window + 1]).item())
        print("test mse", sum(errors) / len(errors))


    for epoch in range(10):
        train(epoch)
    test()
    """


def test_reloaded_model_evaluated_over_the_test_loader_with_a_data_assert_is_reported(lint):
    source = _SCRIPT.format(check="assert series.size(1) - args.window >= args.window", marker="# expect: TL006")
    findings = check(lint, source, CODE)
    assert "`model(...)` evaluates with autograd on in `test()`" in findings[0].message
    assert "called at line" in findings[0].message


def test_the_same_loop_without_the_assert_is_reported_alike(lint):
    check(lint, _SCRIPT.format(check="pass", marker="# expect: TL006"), CODE)


_UNIT_TEST = """
    import torch
    from torch import nn


    def build():
        return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))


    def test_checkpoint_round_trip(tmp_path):
        trained = build()
        torch.save(trained.state_dict(), tmp_path / "net.pt")
        restored = build()
        restored.load_state_dict(torch.load(tmp_path / "net.pt"))
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.rand(8, 3)), batch_size=4)
        for (batch,) in loader:
            assert batch.size(1) == 3
            {check}
    """


def test_a_test_asserting_on_the_restored_models_outputs_is_silent(lint):
    # The test compares what the restored model computes with the original: a unit test.
    check(lint, _UNIT_TEST.format(check="assert torch.equal(restored(batch), trained(batch))"), CODE)


def test_a_test_asserting_through_a_parameter_is_silent(lint):
    # A value the test builds or receives is a result it checks, even in a loop over data.
    source = _UNIT_TEST.replace("(tmp_path):", "(tmp_path, expected_width=2):").format(
        check="assert restored(batch).size(1) == expected_width"
    )
    check(lint, source, CODE)


# ----- a validation loss helper on a parameter-free module ----------------------------------------

_TRAINER = """
    import torch
    from torch import nn


    class PointToSurface(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, vertices, points):
            return torch.cdist(points, vertices).min(dim=-1).values


    class Trainer:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer
            self.distance = {distance}

        def train_step(self, points):
            self.model.train()
            vertices = self.model(points)
            loss = self.distance(vertices, points).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return loss.item()

        @torch.no_grad()
        def eval_step(self, points):
            self.model.eval()
            return self.distance(self.model(points), points).mean().item()

        def loss_val(self, vertices, points):
            return self.surface_loss(vertices, points) * 0.5  {marker}

        def surface_loss(self, vertices, points):
            return self.distance(vertices, points).mean()
    """


def test_a_validation_loss_on_a_parameter_free_distance_is_silent(lint):
    check(lint, _TRAINER.format(distance="PointToSurface()", marker=""), CODE)


def test_a_validation_helper_running_a_learned_module_is_reported(lint):
    # A module with parameters of its own records its graph on whatever tensors it is given.
    source = _TRAINER.format(distance="nn.Bilinear(3, 3, 1)", marker="# expect: TL006")
    findings = check(lint, source, CODE)
    assert "`self.surface_loss(...)` evaluates with autograd on in `loss_val()`" in findings[0].message
