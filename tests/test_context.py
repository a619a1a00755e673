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


def test_statements_after_an_unconditional_jump_are_left_out_of_the_index():
    import ast
    import textwrap

    from torchlint.analysis.context import FileContext

    source = textwrap.dedent(
        """
        def f(loader):
            for batch in loader:
                if batch is None:
                    continue
                    skipped(batch)
                used(batch)
                break
                after_break(batch)
            return 1
            dead()
            def never_defined(): pass
        """
    )
    ctx = FileContext("f.py", source, ast.parse(source))
    called = {call.func.id for call in ctx.calls}
    assert called == {"used"}
    assert "never_defined" not in ctx.functions
    dead = next(n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call) and n.func.id == "dead")
    assert ctx.enclosing_function(dead).name == "f"  # still placed in the tree
