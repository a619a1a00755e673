"""Red-team corpus: realistic training scripts linted by the whole linter.

``tests/corpus/clean/`` holds correct code in many styles (Lightning, HF Trainer, accelerate,
DeepSpeed, RL, GANs, sweeps...): every rule must stay silent on it.
``tests/corpus/buggy/`` holds buggy variants whose buggy lines end with ``# expect: TLxxx``:
the findings must be exactly those (line, code) pairs.

A known gap of a rule is recorded in ``KNOWN_GAPS`` as a strict xfail, so the suite stays green
while the gap exists and turns red (XPASS) as soon as the rule is fixed -- then drop the entry.
"""

import pathlib

import pytest
from expect_markers import assert_marked, describe, marked

from torchlint.engine.lint import lint_source

CORPUS = pathlib.Path(__file__).parent / "corpus"

# "kind/file.py" -> why the linter is known to get this file wrong.
_ROLES_PENDING = (
    "needs roles from data flow (issue 9, the semantic model): {what}; make it pass once the model is on main"
)
KNOWN_GAPS: dict[str, str] = {
    "buggy/acgan_softmax_head.py": (
        "TL012 misses the softmax head of `real_pred, real_aux = discriminator(imgs)`: `discriminator` is a "
        "parameter of `train` that no call in the file passes, so which module class it holds is unknown (a "
        "forward returning a tuple is followed element by element once the class is known: see "
        "test_tl012's test_softmax_head_reached_through_a_forward_returning_a_tuple)"
    ),
}


def _cases(kind):
    for path in sorted((CORPUS / kind).glob("*.py")):
        key = f"{kind}/{path.name}"
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[key])] if key in KNOWN_GAPS else []
        yield pytest.param(path, id=path.name, marks=marks)


def _findings(path):
    # Lint under the bare file name, as a user's script would be found: no rule judges by the folder
    # (the real path under tests/ gives the same findings), and messages then name the script alone.
    return lint_source(path.read_text(), path.name, None)


def _expected(path):
    return marked(path.read_text())


def test_corpus_is_not_empty():
    assert len(list((CORPUS / "clean").glob("*.py"))) >= 15
    assert len(list((CORPUS / "buggy").glob("*.py"))) >= 12


def test_known_gaps_name_existing_files():
    for key in KNOWN_GAPS:
        assert (CORPUS / key).is_file(), key


@pytest.mark.parametrize("path", list(_cases("clean")))
def test_clean_file_has_no_findings(path):
    assert not _expected(path), "clean corpus files must not carry expect markers"
    findings = _findings(path)
    assert findings == [], describe(findings)


@pytest.mark.parametrize("path", list(_cases("buggy")))
def test_buggy_file_reports_exactly_the_marked_lines(path):
    expected = _expected(path)
    assert expected, "a buggy corpus file needs at least one '# expect: TLxxx' marker"
    assert_marked(_findings(path), path.read_text())
