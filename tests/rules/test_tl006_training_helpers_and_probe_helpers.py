"""TL006: a helper named for prediction whose output the training loss is computed from (a
training forward, whatever mode an earlier ``predict()`` left the model in), and a helper that
pytest tests share, which asserts for them (a unit test, even though the tests hold no assert)."""

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL006"

# ----- a forward whose output reaches the backpropagated loss ------------------------------------

_RANKER = """
    import torch
    from torch import nn


    def bpr_loss(positive, negative):
        return -torch.log(torch.sigmoid(positive - negative)).mean()


    class Ranker:
        def __init__(self, n_users, n_items):
            self.n_items = n_items
            self.net = nn.Bilinear(n_users, n_items, 1)
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-3)

        def fit(self, batches, epochs=3):
            for _ in range(epochs):
                for users, items in batches:
                    positive = self.net(users, items)
                    negative = {negative}
                    self.optimizer.zero_grad()
                    loss = bpr_loss(positive, negative)
                    loss.backward()
                    self.optimizer.step()

        def _sampled_prediction(self, users):
            sampled = torch.randint(self.n_items, (len(users),))
            return self.net(users, nn.functional.one_hot(sampled, self.n_items).float())  {marker}

        def predict(self, users, items):
            self.net.train(False)
            return self.net(users, items).detach().numpy()  # expect: TL006
    """


def test_prediction_helper_feeding_the_stepped_loss_is_silent(lint):
    # The negative scores are half of what the loss is computed from: backward needs their graph.
    # `predict()` of the fitted model is still reported.
    source = _RANKER.format(negative="self._sampled_prediction(users)", marker="")
    findings = check(lint, source, CODE)
    assert "`predict()`" in findings[0].message


def test_prediction_helper_feeding_the_loss_through_a_list_is_silent(lint):
    source = _RANKER.format(negative="torch.stack([self._sampled_prediction(users)]).mean(0)", marker="")
    check(lint, source, CODE)


def test_prediction_helper_whose_output_is_only_logged_is_reported(lint):
    # The same helper called where its output never reaches the loss: it evaluates with autograd on.
    source = _RANKER.format(negative="positive.detach() * 0", marker="# expect: TL006")
    source = source.replace(
        "                    self.optimizer.step()\n",
        "                    self.optimizer.step()\n                print(self._sampled_prediction(users).mean().item())\n",
    )
    check(lint, source, CODE)


# ----- a checking helper shared by pytest tests --------------------------------------------------

_QUANT_TEST = """
    import copy

    import torch
    from torch import nn


    class FakeQuant(nn.Module):
        def __init__(self, inner, bits=8):
            super().__init__()
            self.inner = inner
            self.bits = bits

        def forward(self, x):
            scale = self.inner.weight.abs().max() / (2 ** (self.bits - 1) - 1)
            weight = torch.round(self.inner.weight / scale) * scale
            return nn.functional.linear(x, weight, self.inner.bias)


    def _evaluate_quantized(layer, x):
        layer.weight.data = torch.rand_like(layer.weight)
        quantized = FakeQuant(copy.deepcopy(layer))
        quantized.eval()
        error = (quantized(x) - layer(x)).abs().max().item()  {marker}
        assert error < 0.1


    def test_linear_quantized_matches():
        layer = nn.Linear(16, 4)
        _evaluate_quantized(layer, {input})
    """


def test_helper_run_only_on_random_input_is_silent(lint):
    assert lint(_QUANT_TEST.format(input="torch.rand(8, 16)", marker=""), CODE) == []


def test_helper_run_on_a_named_random_input_is_silent(lint):
    source = _QUANT_TEST.format(input="x", marker="").replace(
        "layer = nn.Linear(16, 4)\n", "layer = nn.Linear(16, 4)\n        x = torch.randn(8, 16)\n"
    )
    assert lint(source, CODE) == []


def test_helper_run_on_loaded_data_is_reported(lint):
    # A script, not a test, hands the same helper a loaded layer and real data: that is evaluation.
    source = _QUANT_TEST.format(input="x", marker="# expect: TL006")
    source = source.replace("        layer.weight.data = torch.rand_like(layer.weight)\n", "")
    source = source.replace(
        "def test_linear_quantized_matches():\n        layer = nn.Linear(16, 4)\n        _evaluate",
        'layer = nn.Linear(16, 4)\n    layer.load_state_dict(torch.load("q.pt"))\n'
        "    for x, _ in val_loader:\n        _evaluate",
    )
    findings = check(lint, source, CODE)
    assert "`_evaluate_quantized()`" in findings[0].message


# ----- per-sample costs collected in a list that a helper sums and backpropagates ----------------

_PAIRWISE = """
    import torch
    from ranking import PairScorer

    scorer = PairScorer()
    optimizer = torch.optim.Adam(scorer.parameters(), lr=1e-3)


    def accumulate(costs, hits):
        # gradients add up over the epoch; the loop below steps once per epoch
        mean_cost = sum(costs) / float(len(costs))
        mean_cost.backward()
        return mean_cost.item(), sum(hits) / len(hits)


    def log_costs(costs, hits):
        print(sum(c.item() for c in costs) / len(costs), sum(hits) / len(hits))


    def fit_epoch(pairs):
        scorer.train()
        costs, hits = [], []
        for pair in pairs:
            cost, good, bad = scorer(pair["query"], pair["good"], pair["bad"])  {marker}
            hits.append(float(good > bad))
            costs.append(cost)
            if len(costs) == 32:
                HELPER(costs, hits)
                costs, hits = [], []


    def score_dev(pairs):
        scorer.eval()
        return [scorer(p["query"], p["good"], p["bad"])[1].item() for p in pairs]  # expect: TL006


    for epoch in range(5):
        fit_epoch(train_pairs)
        optimizer.step()
        optimizer.zero_grad()
        for query, doc, label in train_batches:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(scorer.score(query, doc), label).backward()
            optimizer.step()
        print(score_dev(dev_pairs))
"""


def test_costs_listed_and_backpropagated_by_a_helper_train(lint):
    # `accumulate` runs backward on the mean of the list it is handed: every cost appended to it
    # carries its forward's graph, so the forward that made it trains; the dev scorer is reported.
    source = _PAIRWISE.format(marker="").replace("HELPER", "accumulate")
    findings = check(lint, source, CODE)
    assert "`scorer(...)` evaluates with autograd on in `score_dev()`" in findings[0].message


def test_costs_listed_and_only_logged_are_an_evaluation(lint):
    # The same list handed to a helper that only prints it: no backward reaches the forward.
    source = _PAIRWISE.format(marker="# expect: TL006").replace("HELPER", "log_costs")
    findings = check(lint, source, CODE)
    assert "`fit_epoch()`" in findings[0].message


def test_costs_appended_then_stacked_and_backpropagated_train(lint):
    source = _PAIRWISE.format(marker="").replace("HELPER(costs, hits)", "(torch.stack(costs).mean() * 0.5).backward()")
    check(lint, source, CODE)


_UPDATES = """\
import torch


def accumulate(costs):
    total = torch.stack(costs).sum() / len(costs)
    total.backward()
    return total.item()
"""
_TRAIN = """\
import torch
from trainkit.updates import HELPER


def run_epoch(model, pairs):
    model.train()
    batch = []
    for pair in pairs:
        cost = model(pair["query"], pair["good"], pair["bad"])[0]
        batch += [cost]
        if len(batch) == 16:
            HELPER(batch)
            batch = []


def dev_scores(model, pairs):
    model.eval()
    return [model(p["query"], p["good"], p["bad"])[1].item() for p in pairs]


def main(model, train_pairs, dev_pairs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        run_epoch(model, train_pairs)
        optimizer.step()
        optimizer.zero_grad()
        print(dev_scores(model, dev_pairs))
"""


def test_costs_backpropagated_by_a_helper_of_another_file_train(tmp_path):
    files = {
        "trainkit/__init__.py": "",
        "trainkit/updates.py": _UPDATES,
        "train.py": _TRAIN.replace("HELPER", "accumulate"),
    }
    findings = lint_in_project(tmp_path, files, "train.py", CODE)
    assert [f.line for f in findings] == [18]
    assert "`dev_scores()`" in findings[0].message


# A notebook-style script: the test section runs the trained model and names its output `output`;
# a later section trains another network and, inside a loop that may not run, rebinds `output`
# before its loss. The first section's output only "may" reach that loss: it is still evaluation.
SECTIONS = """
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 4), nn.Dropout(0.5), nn.Linear(4, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in train_pairs:
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

vals = []
for data, target in test_pairs:
    output = model(data)  # expect: TL006
    vals.append((output.argmax(1) == target).sum())

rnn = nn.GRU(8, 8)
rnn_optimizer = torch.optim.Adam(rnn.parameters())
for x, y in sequences:
    hidden = torch.zeros(1, 1, 8)
    for step in range(x.size(0)):
        output, hidden = rnn(x[step : step + 1], hidden)
    loss = nn.functional.mse_loss(output, y)
    rnn_optimizer.zero_grad()
    loss.backward()
    rnn_optimizer.step()
"""


def test_an_evaluation_whose_output_name_a_later_loss_may_reuse_is_reported(lint):
    findings = check(lint, SECTIONS, "TL006")
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in the evaluation loop at line 14")
