"""TL006 and three ways code shows that an evaluation is no evaluation with autograd on: a project
decorator whose wrapper runs the decorated function under no-grad (``gradmode``), a function whose
only call sites sit under a branch the file's constants rule out (``conditions.never_runs``), and a
model handed in as a parameter by callers that each pass one built fresh and never trained or
loaded (``untrained_runs``). Each silent case has a reported twin that differs from it only by the
fact the principle reads."""

from expect_markers import check

DECORATOR = """
import functools
import time
import torch

def {name}(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
{body}
    return run

@{name}
def validate(model, val_loader):
    model.eval()
    hits = 0
    for images, labels in val_loader:
        hits += (model(images).argmax(1) == labels).sum().item(){marker}
    return hits
"""
REPORTED = "  # expect: TL006"


def _decorated(name: str, body: str, marker: str = "") -> str:
    indented = "\n".join("        " + line for line in body.strip("\n").split("\n"))
    return DECORATOR.format(name=name, body=indented, marker=marker)


def test_a_project_decorator_that_runs_the_function_under_no_grad_is_silent(lint):
    body = "with torch.no_grad():\n    return fn(*args, **kwargs)"
    check(lint, _decorated("without_grad", body), "TL006")


def test_a_project_decorator_under_inference_mode_is_silent(lint):
    body = "with torch.inference_mode():\n    return fn(*args, **kwargs)"
    check(lint, _decorated("inference_only", body), "TL006")


def test_a_project_decorator_that_only_times_the_call_is_still_reported(lint):
    body = "start = time.time()\nout = fn(*args, **kwargs)\nprint(time.time() - start)\nreturn out"
    findings = check(lint, _decorated("timed", body, REPORTED), "TL006")
    assert findings[0].line == 20
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in `validate()`")


def test_a_decorator_switching_grad_off_around_only_one_of_two_calls_is_still_reported(lint):
    body = "if kwargs.pop('fast', False):\n    with torch.no_grad():\n        return fn(*args, **kwargs)\nreturn fn(*args, **kwargs)"
    findings = check(lint, _decorated("maybe_fast", body, REPORTED), "TL006")
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in `validate()`")


DEAD_SITE = """
import torch
from torch import nn

PLOT_VALUES = {flag}

def evaluate(net, val_loader):
    net.eval()
    total = 0.0
    for x, y in val_loader:
        total += nn.functional.mse_loss(net(x), y).item(){marker}
    return total / len(val_loader)

def train(net, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        net.train()
        for x, y in train_loader:
            loss = nn.functional.mse_loss(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if PLOT_VALUES and epoch % 5 == 0:
            print(epoch, evaluate(net, val_loader))
"""


def test_an_evaluation_called_only_under_a_constant_false_flag_is_silent(lint):
    check(lint, DEAD_SITE.format(flag="False", marker=""), "TL006")


def test_an_evaluation_called_under_a_constant_true_flag_is_still_reported(lint):
    findings = check(lint, DEAD_SITE.format(flag="True", marker=REPORTED), "TL006")
    assert findings[0].line == 11
    assert "`net(...)` evaluates with autograd on in `evaluate()`, called at line 23" in findings[0].message


def test_a_flag_rebound_elsewhere_keeps_the_call_site_live(lint):
    source = DEAD_SITE.format(flag="False", marker=REPORTED) + (
        '\nif __name__ == "__main__":\n    import sys\n    PLOT_VALUES = "--plot" in sys.argv\n'
    )
    findings = check(lint, source, "TL006")
    assert "called at line 23 outside any no-grad block" in findings[0].message


FRESH_PARAMETER = """
import torch
from torch import nn

class Tagger(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, 5)

    def forward(self, tokens):
        return self.proj(tokens)

def predict(tagger, val_loader):
    tagger.eval()
    tags = []
    for tokens in val_loader:
        tags.append(tagger(tokens).argmax(-1)){marker}
    return torch.cat(tags)
"""
MAIN = """
if __name__ == "__main__":
    val_loader = torch.load("val_batches.pt")
    small = Tagger(64)
{prepare}    print(predict(small, val_loader).shape)
    print(predict(Tagger(128), val_loader).shape)
"""


def test_a_parameter_every_caller_fills_with_a_fresh_model_is_silent(lint):
    check(lint, FRESH_PARAMETER.format(marker="") + MAIN.format(prepare=""), "TL006")


def test_a_parameter_given_a_model_whose_weights_were_loaded_is_still_reported(lint):
    prepare = '    small.load_state_dict(torch.load("tagger.pt"))\n'
    findings = check(lint, FRESH_PARAMETER.format(marker=REPORTED) + MAIN.format(prepare=prepare), "TL006")
    assert findings[0].line == 17
    assert "`tagger(...)` evaluates with autograd on in `predict()`, called at line 24" in findings[0].message


def test_a_parameter_given_a_model_trained_in_the_file_is_still_reported(lint):
    prepare = (
        "    optimizer = torch.optim.SGD(small.parameters(), lr=0.1)\n"
        "    for tokens, tags in torch.load('train_batches.pt'):\n"
        "        loss = nn.functional.cross_entropy(small(tokens), tags)\n"
        "        optimizer.zero_grad()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    findings = check(lint, FRESH_PARAMETER.format(marker=REPORTED) + MAIN.format(prepare=prepare), "TL006")
    assert findings[0].line == 17


def test_a_parameter_with_no_call_site_in_the_file_is_still_judged_by_its_body(lint):
    findings = check(lint, FRESH_PARAMETER.format(marker=REPORTED), "TL006")
    assert findings[0].message.startswith("`tagger(...)` evaluates with autograd on in `predict()`")
