"""TL007/TL005 for a model handed in by a script of the same project: the training function lives in
one module, the model is built (from classes of a third module) by the script that calls it."""

from project_helpers import lint_in_project

_MODELS = """
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self, vocab, width, depth, dropout):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.rnn = nn.LSTM(width, width, depth, dropout=dropout)

        def forward(self, tokens):
            return self.rnn(self.embed(tokens))[0]

    class PlainEncoder(nn.Module):
        def __init__(self, vocab, width):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.proj = nn.Linear(width, width)

        def forward(self, tokens):
            return self.proj(self.embed(tokens))

    class Tagger(nn.Module):
        def __init__(self, encoder, tags):
            super().__init__()
            self.encoder = encoder
            self.out = nn.Linear(encoder.embed.embedding_dim, tags)

        def forward(self, tokens):
            return self.out(self.encoder(tokens))
"""

_LOOP = """
    import torch
    import torch.nn.functional as F

    def score(model, batches):
        model.eval()
        with torch.no_grad():
            return sum(F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item() for x, y in batches)

    def fit(model, optimizer, train_batches, dev_batches, epochs):
        model.train()
        for epoch in range(epochs):
            for x, y in train_batches:
                optimizer.zero_grad()
                F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
                optimizer.step()
            print(epoch, score(model, dev_batches))
"""


def _script(encoder: str) -> str:
    return f"""
    import torch
    from data import load_splits
    from models import Encoder, PlainEncoder, Tagger
    from loop import fit

    # a variable of this script spelled like the training function: not a use of it
    fit_batches, dev_batches = load_splits()
    model = Tagger({encoder}, tags=17)
    optimizer = torch.optim.Adam(model.parameters())
    fit(model, optimizer, fit_batches, dev_batches, epochs=10)
    """


def _files(encoder: str) -> dict[str, str]:
    # `data.py` names a local `fit` too (a name no import binds there): the reverse index must not
    # take it for a use of the training function it cannot follow.
    data = """
    def load_splits():
        fit = [1, 2, 3]
        return fit, fit
    """
    return {"models.py": _MODELS, "loop.py": _LOOP, "run.py": _script(encoder), "data.py": data}


def test_model_with_stacked_lstm_dropout_built_by_the_calling_script_is_reported(tmp_path):
    files = _files("Encoder(5000, 256, depth=2, dropout=0.3)")
    findings = lint_in_project(tmp_path, files, "loop.py", "TL007")
    assert [(f.line, f.column) for f in findings] == [(17, 22)]
    assert "`score(...)` (which calls `model.eval()` at line 6)" in findings[0].message
    assert "training loop at line 12" in findings[0].message


def test_model_without_mode_dependent_layers_built_by_the_calling_script_is_silent(tmp_path):
    files = _files("PlainEncoder(5000, 256)")
    assert lint_in_project(tmp_path, files, "loop.py", "TL007") == []


def test_a_caller_the_reverse_index_cannot_follow_keeps_the_model_unknown(tmp_path):
    files = _files("Encoder(5000, 256, depth=2, dropout=0.3)")
    # The function handed on as a value: its real callers cannot all be told, so nothing is shown.
    files["run.py"] = files["run.py"].replace("fit(model, optimizer", "step = fit\n    step(model, optimizer")
    assert lint_in_project(tmp_path, files, "loop.py", "TL007") == []
