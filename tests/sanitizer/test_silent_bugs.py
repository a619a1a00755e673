"""TS115-TS118: silent training bugs, each trained for real on the CPU, each
with clean twins that must stay silent."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from _training_helpers import one_thread, sanitized  # noqa: E402,F401  (one_thread is an autouse fixture)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

SILENT_CODES = ("TS115", "TS116", "TS117", "TS118")


def found(report, *codes):
    codes = codes or SILENT_CODES
    return [f for f in report.findings if f.code in codes]


def classifier(classes=3):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, classes))


def batches(n=4, seed=0, classes=3):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(16, 8, generator=g), torch.randint(0, classes, (16,), generator=g)) for _ in range(n)]


def train_epoch(model, opt, data):
    model.train()
    for x, y in data:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


# -- TS115 validation-in-train-mode --------------------------------------------------------------
def validate_without_eval(model, data):
    correct = 0
    with torch.no_grad():
        for x, y in data:
            correct += (model(x).argmax(1) == y).sum().item()  # validation forward
    return correct


def test_validation_in_train_mode_is_reported_at_the_validation_forward_once_per_epoch(mark):
    model = classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train, val = batches(), batches(3, seed=1)

    def run():
        for _ in range(2):
            train_epoch(model, opt, train)
            validate_without_eval(model, val)

    [finding] = found(sanitized(run))
    assert finding.code == "TS115" and finding.name == "validation-in-train-mode"
    assert finding.lineno == mark("validation forward") and finding.count == 2
    assert "`model`" in finding.message and "model.1" in finding.message and "model.3" in finding.message
    assert "model.eval()" in finding.message and finding.details["twin"] == "TL005"


def test_validation_under_inference_mode_is_reported_too():
    model = classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run():
        train_epoch(model, opt, batches())
        with torch.inference_mode():
            for x, _ in batches(3, seed=1):
                model(x)

    assert [f.code for f in found(sanitized(run))] == ["TS115"]


def test_validation_in_eval_mode_is_clean():
    model = classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run():
        for _ in range(2):
            train_epoch(model, opt, batches())
            model.eval()
            validate_without_eval(model, batches(3, seed=1))

    assert found(sanitized(run)) == []


def test_no_grad_forwards_between_optimizer_steps_are_training_not_validation():
    """A distillation teacher and a GAN generator feeding its discriminator:
    one no-grad train-mode forward per optimizer step."""
    teacher, student = classifier(), classifier()
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    generator = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 8))
    critic = nn.Sequential(nn.Linear(8, 1))
    critic_opt = torch.optim.SGD(critic.parameters(), lr=0.1)

    def run():
        for x, _ in batches(6):
            with torch.no_grad():
                soft = F.softmax(teacher(x), dim=1)
            opt.zero_grad()
            F.kl_div(F.log_softmax(student(x), dim=1), soft, reduction="batchmean").backward()
            opt.step()
            with torch.no_grad():
                fake = generator(torch.randn(16, 4))
            critic_opt.zero_grad()
            critic(fake).mean().backward()
            critic_opt.step()

    assert found(sanitized(run)) == []


def test_batch_norm_statistics_recomputed_by_library_code_are_not_validation():
    model = classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader([x for x, _ in batches(4)], batch_size=None)

    def run():
        train_epoch(model, opt, batches())
        torch.optim.swa_utils.update_bn(loader, model)  # train mode, no grad, on purpose

    assert found(sanitized(run)) == []


def test_models_whose_layers_do_not_depend_on_the_mode_are_not_reported():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.0), nn.BatchNorm1d(16, track_running_stats=False))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run():
        train_epoch(model, opt, batches())
        validate_without_eval(model, batches(3))

    assert found(sanitized(run)) == []


# -- TS116 loss-shape-broadcast / TS117 loss-target-float64 ------------------------------------------
def regression_data(target_shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 8, generator=g)
    return x, (x.sum(dim=1) * 0.5).reshape(target_shape).to(dtype)


def fit_regression(loss, y, steps=5):
    """``loss``: a loss module, or the name of a functional loss (looked up now:
    the session intercepts torch.nn.functional's losses while it runs)."""
    loss_fn = getattr(F, loss) if isinstance(loss, str) else loss
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = regression_data((32,))[0]
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)  # loss line
        loss.backward()
        opt.step()
    return loss


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("loss", ["mse_loss", "L1Loss", "poisson_nll_loss"])
def test_prediction_n_by_1_against_target_n_is_reported_at_the_loss_line(loss, mark):
    _, y = regression_data((32,))
    report = sanitized(lambda: fit_regression(nn.L1Loss() if loss == "L1Loss" else loss, y))
    [finding] = found(report)
    assert finding.code == "TS116" and finding.lineno == mark("loss line") and finding.count == 5
    assert "(32, 1)" in finding.message and "(32,)" in finding.message and "(32, 32)" in finding.message
    assert "input.squeeze(1)" in finding.message
    assert finding.details["broadcast_shape"] == [32, 32]


@pytest.mark.filterwarnings("ignore:Using a target size")
def test_equal_shapes_and_a_deliberately_broadcast_constant_target_are_clean():
    _, y = regression_data((32, 1))
    assert found(sanitized(lambda: fit_regression("mse_loss", y))) == []

    def constant_target():
        pred = torch.randn(32, 4, requires_grad=True)
        F.mse_loss(pred, torch.zeros(1, 4)).backward()

    assert found(sanitized(constant_target)) == []


def test_a_float64_target_from_numpy_is_reported(mark):
    _, y = regression_data((32, 1))
    target = torch.from_numpy(y.numpy().astype(np.float64))  # float64, as NumPy makes it
    losses = []
    report = sanitized(lambda: losses.append(fit_regression("mse_loss", target)))
    [finding] = found(report)
    assert finding.code == "TS117" and finding.lineno == mark("loss line")
    assert "float64 while its input is float32" in finding.message
    assert losses[0].dtype == torch.float64  # what the finding says happened


def test_float64_models_with_float64_targets_are_clean():
    torch.manual_seed(0)
    model = nn.Linear(8, 1).double()
    x, y = regression_data((32, 1), dtype=torch.float64)

    def run():
        F.mse_loss(model(x.double()), y).backward()

    assert found(sanitized(run)) == []


# -- TS118 loss-constant-no-gradient -------------------------------------------------------------------
def train_classifier(model, steps, data):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        x, y = data[step % len(data)]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)  # classifier loss
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_cross_entropy_over_a_single_logit_is_reported(mark):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))  # one output
    data = [(x, torch.zeros_like(y)) for x, y in batches()]
    losses = []
    report = sanitized(lambda: losses.extend(train_classifier(model, 15, data)))
    assert set(losses) == {0.0}  # the model really never trains
    [finding] = found(report)
    assert finding.code == "TS118" and finding.name == "loss-constant-no-gradient"
    assert finding.lineno == mark("classifier loss")
    assert "exactly 0" in finding.message and "(16, 1)" in finding.message and "single class" in finding.message
    assert finding.details["backward_passes"] == 11


def test_a_loss_that_does_not_depend_on_the_model_is_reported_with_the_general_advice():
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = regression_data((32, 1))

    def run():
        for _ in range(12):
            opt.zero_grad()
            loss = F.mse_loss(model(x) * 0.0, y)  # the output is multiplied away
            loss.backward()
            opt.step()

    [finding] = found(sanitized(run))
    assert finding.code == "TS118" and "depends on the model's output" in finding.message


def test_learning_models_and_a_loss_that_reaches_zero_later_are_clean():
    model = classifier()
    assert found(sanitized(lambda: train_classifier(model, 15, batches()))) == []

    torch.manual_seed(0)
    separable = nn.Linear(2, 1)
    x = torch.tensor([[1.0, 0.0], [-1.0, 0.0]] * 8)
    y = torch.tensor([1.0, -1.0] * 8)
    opt = torch.optim.SGD(separable.parameters(), lr=0.5)
    losses = []

    def hinge():
        for _ in range(30):
            opt.zero_grad()
            loss = F.relu(1 - y * separable(x).squeeze(1)).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())

    assert found(sanitized(hinge)) == []
    assert losses[-1] == 0.0 and losses[0] > 0  # it did converge to an exactly-zero loss


def test_constant_loss_steps_option():
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    data = [(x, torch.zeros_like(y)) for x, y in batches()]
    report = sanitized(lambda: train_classifier(model, 4, data), constant_loss_steps=3)
    assert [f.code for f in found(report)] == ["TS118"]
    assert found(sanitized(lambda: train_classifier(model, 20, data), constant_loss_steps=0)) == []
