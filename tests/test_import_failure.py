"""A stale script whose top-level import names something its project no longer has cannot be
imported, so none of its code runs (``analysis.import_failure``): the engine drops its findings.
Each case is a small project written to a temporary folder and linted as the command lints it."""

import ast
import os
import textwrap

import pytest
from project_helpers import write

from torchlint.analysis.context import FileContext
from torchlint.analysis.definitions import top_level_bound_names
from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

CODE = "TL010"

# A training script in a sub-folder of the checkout; HEADER is where its own imports go.
_SCRIPT = """\
import torch

HEADER


def train(loader, epochs=3):
    model = build_model()
    optimizer = build_optimizer(model)
    criterion = torch.nn.CrossEntropyLoss()
    for epoch in range(epochs):
        running = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss
        print(epoch, running / len(loader))


if __name__ == "__main__":
    train(torch.utils.data.DataLoader(range(8)))
"""

_COMMON = """\
import torch


def build_model():
    return torch.nn.Linear(16, 4)


def build_optimizer(model, lr=0.1):
    return torch.optim.SGD(model.parameters(), lr=lr)
"""

# The helpers moved to trainkit/factory.py; common.py keeps only the metrics.
_COMMON_AFTER_REFACTOR = """\
import torch


def accuracy(logits, labels):
    return (logits.argmax(-1) == labels).float().mean()
"""

_IMPORT = "from trainkit.common import build_model, build_optimizer"


def _findings(tmp_path, header: str = _IMPORT, common: str = _COMMON, script: str = _SCRIPT, **extra: str):
    files = {
        "pyproject.toml": "",
        "trainkit/__init__.py": "",
        "trainkit/common.py": common,
        "scripts/train_old.py": script.replace("HEADER", header),
        **extra,
    }
    write(tmp_path, files)
    result = lint_file(str(tmp_path / "scripts" / "train_old.py"), [all_rules()[CODE]])
    return result, [f.line for f in result.findings if f.code == CODE]


def _accumulation_line(script: str = _SCRIPT, header: str = _IMPORT) -> int:
    lines = script.replace("HEADER", header).splitlines()
    return next(i for i, text in enumerate(lines, 1) if "running += loss" in text)


# ----- still reported ---------------------------------------------------------------------------


def test_a_script_whose_imported_helpers_exist_is_reported(tmp_path):
    _, lines = _findings(tmp_path)
    assert lines == [_accumulation_line()]


@pytest.mark.parametrize(
    "common",
    [
        # bound under a condition: a binding all the same
        _COMMON_AFTER_REFACTOR
        + "\nif torch.cuda.is_available():\n    from trainkit.factory import build_model, build_optimizer\n"
        + "else:\n    build_model = build_optimizer = None\n",
        # bound by a try/except of an optional dependency
        _COMMON_AFTER_REFACTOR
        + "\ntry:\n    from fastkit import build_model, build_optimizer\nexcept ImportError:\n    pass\n",
        # a star import may bring them
        "from trainkit.factory import *\n" + _COMMON_AFTER_REFACTOR,
        # tuple assignment and a for target
        _COMMON_AFTER_REFACTOR
        + "\nbuild_model, _ = torch.nn.Linear, None\nfor build_optimizer in [torch.optim.SGD]:\n    pass\n",
        # a global statement in a function
        _COMMON_AFTER_REFACTOR
        + "\n\ndef register(model_fn, opt_fn):\n    global build_model, build_optimizer\n"
        + "    build_model, build_optimizer = model_fn, opt_fn\n",
        # a module-level __getattr__ answers any name
        _COMMON_AFTER_REFACTOR + "\n\ndef __getattr__(name):\n    return getattr(torch.nn, name)\n",
        # writes its own namespace
        _COMMON_AFTER_REFACTOR + "\nglobals().update(build_model=torch.nn.Linear, build_optimizer=torch.optim.SGD)\n",
        # cannot be parsed: unknown, not absent
        "def build_model(:\n",
    ],
    ids=["conditional", "try-import", "star-import", "tuple-and-for", "global", "getattr", "globals", "unparsable"],
)
def test_a_name_the_helper_may_bind_keeps_the_findings(tmp_path, common):
    _, lines = _findings(tmp_path, common=common)
    assert lines == [_accumulation_line()]


def test_an_import_guarded_by_try_except_import_error_keeps_the_findings(tmp_path):
    header = f"try:\n    {_IMPORT}\nexcept ImportError:\n    from trainkit.factory import build_model, build_optimizer"
    _, lines = _findings(tmp_path, header=header, common=_COMMON_AFTER_REFACTOR)
    assert lines == [_accumulation_line(header=header)]


def test_a_script_that_changes_sys_path_keeps_the_findings(tmp_path):
    header = "import os\nimport sys\n\nsys.path.insert(0, os.environ['TRAINKIT_HOME'])\n" + _IMPORT
    _, lines = _findings(tmp_path, header=header, common=_COMMON_AFTER_REFACTOR)
    assert lines == [_accumulation_line(header=header)]


def test_a_submodule_of_the_package_is_imported_not_missing(tmp_path):
    header = (
        "from trainkit import factory\n\nbuild_model, build_optimizer = factory.build_model, factory.build_optimizer"
    )
    _, lines = _findings(tmp_path, header=header, **{"trainkit/factory.py": _COMMON})
    assert lines == [_accumulation_line(header=header)]


def test_a_module_missing_from_a_namespace_package_is_not_concluded(tmp_path):
    # No trainkit/__init__.py: its modules may lie in another folder of sys.path.
    header = "from trainkit.factory import build_model, build_optimizer"
    files = {
        "pyproject.toml": "",
        "trainkit/common.py": _COMMON,
        "scripts/train_old.py": _SCRIPT.replace("HEADER", header),
    }
    write(tmp_path, files)
    result = lint_file(str(tmp_path / "scripts" / "train_old.py"), [all_rules()[CODE]])
    assert [f.line for f in result.findings] == [_accumulation_line(header=header)]


def test_a_standard_library_name_may_be_the_installed_module(tmp_path):
    # ``profile.py`` of the project lacks the name, but the script may well get the standard library's.
    header = "from profile import Profile\nfrom trainkit.common import build_model, build_optimizer"
    _, lines = _findings(tmp_path, header=header, **{"profile.py": "import torch\n\nTIMERS = {}\n"})
    assert lines == [_accumulation_line(header=header)]


def test_a_function_the_script_runs_before_the_failing_import_keeps_its_findings(tmp_path):
    script = _SCRIPT.replace("HEADER", "").replace(
        "if __name__", "train(torch.utils.data.DataLoader(range(8)))\n" + _IMPORT + "\n\nif __name__"
    )
    _, lines = _findings(tmp_path, script=script, common=_COMMON_AFTER_REFACTOR)
    assert lines == [_accumulation_line(script=script)]


# ----- silent: the script cannot be imported ----------------------------------------------------


def test_a_name_removed_from_the_helper_module_silences_the_script(tmp_path):
    result, lines = _findings(tmp_path, common=_COMMON_AFTER_REFACTOR)
    assert lines == []
    # The answer rests on the helper's text: editing it must lint the script again.
    assert os.path.realpath(tmp_path / "trainkit" / "common.py") in result.dependencies


def test_a_module_moved_out_of_a_regular_package_silences_the_script(tmp_path):
    # trainkit.legacy became trainkit/legacy_v2/...; trainkit/__init__.py is still there.
    header = "import trainkit.common\nfrom trainkit.legacy import build_model, build_optimizer"
    result, lines = _findings(tmp_path, header=header)
    assert lines == []
    assert os.path.realpath(tmp_path / "trainkit") in result.dependencies  # adding legacy.py changes it


def test_import_of_a_dotted_module_the_package_lacks_silences_the_script(tmp_path):
    header = "import trainkit.legacy\nfrom trainkit.common import build_model, build_optimizer"
    _, lines = _findings(tmp_path, header=header)
    assert lines == []


def _relative_findings(tmp_path, header: str):
    # A model package whose training module imports the helpers relatively.
    files = {
        "pyproject.toml": "",
        "asr/__init__.py": "",
        "asr/utils/__init__.py": "",
        "asr/utils/common.py": _COMMON,
        "asr/models/__init__.py": "",
        "asr/models/ctc/__init__.py": "",
        "asr/models/ctc/train.py": _SCRIPT.replace("HEADER", header),
    }
    write(tmp_path, files)
    result = lint_file(str(tmp_path / "asr" / "models" / "ctc" / "train.py"), [all_rules()[CODE]])
    return [f.line for f in result.findings if f.code == CODE]


def test_a_relative_import_from_the_package_that_holds_the_helpers_is_reported(tmp_path):
    header = "from ...utils.common import build_model, build_optimizer"
    assert _relative_findings(tmp_path, header) == [_accumulation_line(header=header)]


def test_a_relative_import_one_level_short_silences_the_script(tmp_path):
    # `..` is asr.models, which holds no `utils`: the import raises before anything runs.
    header = "from ..utils.common import build_model, build_optimizer"
    assert _relative_findings(tmp_path, header) == []


def test_top_level_code_before_the_failing_import_still_runs(tmp_path):
    # The module-level loop runs before the import fails; the function after it never does.
    script = textwrap.dedent(
        """\
        import torch

        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        total = 0.0
        for x in torch.randn(8, 4).split(2):
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss

        from trainkit.common import build_model
        """
    )
    _, lines = _findings(tmp_path, script=script + _SCRIPT.replace("HEADER", ""), common=_COMMON_AFTER_REFACTOR)
    assert lines == [11]


def _namespace_findings(tmp_path, header: str, common: str):
    # A checkout with no root marker and no __init__.py anywhere (namespace folders), run from its
    # top: the script in speaker/misc/ imports the helpers of speaker/ and the data code of data/.
    files = {
        "speaker/common_func.py": common,
        "speaker/train_egs.py": _SCRIPT.replace("HEADER", _IMPORT.replace("trainkit.common", "speaker.common_func")),
        "data/datasets/egs.py": "import torch\n\n\nclass EgsDataset(torch.utils.data.Dataset):\n    pass\n",
        "speaker/misc/train_old.py": _SCRIPT.replace("HEADER", header),
    }
    write(tmp_path, files)
    result = lint_file(str(tmp_path / "speaker" / "misc" / "train_old.py"), [all_rules()[CODE]])
    return [f.line for f in result.findings if f.code == CODE]


_NAMESPACE_IMPORT = (
    "from data.datasets.egs import EgsDataset\nfrom speaker.common_func import build_model, build_optimizer"
)


def test_a_namespace_checkout_whose_helpers_exist_is_reported(tmp_path):
    lines = _namespace_findings(tmp_path, _NAMESPACE_IMPORT, _COMMON)
    assert lines == [_accumulation_line(header=_NAMESPACE_IMPORT)]


def test_a_name_gone_from_a_namespace_checkouts_helpers_silences_the_script(tmp_path):
    # data/datasets/egs.py is a file two folders above the script's: that folder is on sys.path
    # (an installed package would not have this layout), so speaker/common_func.py is the module imported.
    assert _namespace_findings(tmp_path, _NAMESPACE_IMPORT, _COMMON_AFTER_REFACTOR) == []


def test_a_namespace_checkout_script_that_touches_sys_path_keeps_the_findings(tmp_path):
    header = "import os\nimport sys\n\nsys.path.insert(0, os.environ['SPEAKER_HOME'])\n" + _NAMESPACE_IMPORT
    assert _namespace_findings(tmp_path, header, _COMMON_AFTER_REFACTOR) == [_accumulation_line(header=header)]


# ----- the binding model ---------------------------------------------------------------------------


def test_top_level_bound_names_counts_every_binding_form():
    source = textwrap.dedent(
        """\
        import os.path
        from torch import nn as tnn
        a, (b, *c) = 1, (2, 3)
        d: int = 4
        e += 1
        for f in []:
            pass
        with open(os.devnull) as g:
            pass
        try:
            pass
        except Exception as h:
            pass
        if (i := 5):
            def j():
                global k
                local = 1
        class L:
            inner = 1
        del m
        """
    )
    ctx = FileContext("m.py", source, ast.parse(source))
    names = top_level_bound_names(ctx)
    assert set("abcdefghijkm") | {"os", "tnn", "L"} <= names
    assert "local" not in names and "inner" not in names
