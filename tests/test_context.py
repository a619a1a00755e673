from torchlint.engine.lint import lint_source


def test_form_feed_does_not_shift_reported_lines():
    # A form feed is whitespace to Python, not a line end: findings after it keep their line.
    source = "import torch\n\x0c\ndef f(model, x):\n    with torch.no_grad():\n        model(x).sum().backward()\n"
    findings = lint_source(source, "ff.py")
    assert [(f.line, f.code, f.column) for f in findings] == [(5, "TL016", 9)]


def test_columns_count_characters_not_utf8_bytes():
    source = "import torch\ndef f(m, x):\n    with torch.no_grad():\n        é = 1; m(x).sum().backward()\n"
    (finding,) = lint_source(source, "u.py")
    assert (finding.line, finding.column) == (4, 16)
