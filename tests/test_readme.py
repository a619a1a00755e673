import pathlib

from torchlint.engine import ruledocs

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_readme_rules_section_is_generated_from_current_rule_docs():
    text = README.read_text()
    assert ruledocs.sync(README) == text, "run: python -m torchlint.engine.ruledocs --write"
    for code, rule in ruledocs.all_rules().items():
        assert f"### {code} {rule.name} ({rule.severity})" in text


def test_readme_opens_with_the_two_commands():
    text = README.read_text()
    assert "pip install -e . && torchlint examples/" in text
    assert "pip install torch==2.13.0 -e '.[test]' && python -m pytest -q" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "pip install torch==2.13.0 -e '.[test]' && python -m pytest -q" in ci
