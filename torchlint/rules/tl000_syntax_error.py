"""TL000 syntax-error: reported by the engine itself when a file cannot be parsed or read."""

from torchlint.engine.rule import Rule, register


@register
class SyntaxErrorRule(Rule):
    code = "TL000"
    name = "syntax-error"
    severity = "error"
    summary = "The file cannot be read or parsed, so no other rule could check it."
    what = """
        Reported once per file that is not valid Python (at the parser's line and
        column), cannot be decoded, or cannot be read. The other files are still linted.
    """
    why = """
        A file torchlint cannot parse is a file it cannot check: every bug in it goes
        unreported. Python would also refuse to run it.
    """
    example = """
        for x in loader
            loss = model(x)
    """
    instead = """
        for x in loader:
            loss = model(x)
    """
    VALID = ["x = 1\n"]
    INVALID = ["for x in loader  # expect: TL000\n    pass\n"]

    def check(self, ctx):
        return iter(())
