"""TL006 judged by the callers of an evaluation helper in the project's other files (the reverse
index, ``analysis.callers``): every one of them under no-grad -> no finding; anything the index
cannot show -> today's verdict (the helper is reported)."""

import pytest
from project_helpers import lint_in_project

CODE = "TL006"

_HELPER = """\
import torch


def evaluate_captions(pipeline, captioner, prompts):
    captioner.eval()
    outputs = []
    for prompt in prompts:
        outputs.append(captioner(pipeline(prompt).images[0]).logits.softmax(-1))
    return torch.stack(outputs).mean(0)
"""
_LOOP = """\
import torch
from evalkit.metrics import evaluate_captions


def finetune(pipeline, captioner, optimizer, batches, prompts):
    for step, batch in enumerate(batches):
        pipeline.unet(batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            CALL
"""
_UNDER_NO_GRAD = "with torch.no_grad():\n                print(evaluate_captions(pipeline, captioner, prompts))"


def _project(caller_call: str, **extra: str) -> dict[str, str]:
    return {
        "evalkit/__init__.py": "",
        "evalkit/metrics.py": _HELPER,
        "finetune.py": _LOOP.replace("CALL", caller_call),
        **extra,
    }


def test_a_helper_every_caller_elsewhere_runs_under_no_grad_is_not_reported(tmp_path):
    assert lint_in_project(tmp_path, _project(_UNDER_NO_GRAD), "evalkit/metrics.py", CODE) == []


def test_a_caller_decorated_with_no_grad_in_a_package_that_re_exports_the_helper(tmp_path):
    files = _project(
        _UNDER_NO_GRAD,
        **{
            "evalkit/__init__.py": "from .metrics import evaluate_captions\n",
            "report.py": "import torch\nimport evalkit\n\n\n@torch.inference_mode()\n"
            "def weekly(pipeline, captioner, prompts):\n"
            "    return evalkit.evaluate_captions(pipeline, captioner, prompts)\n",
        },
    )
    assert lint_in_project(tmp_path, files, "evalkit/metrics.py", CODE) == []


@pytest.mark.parametrize(
    "extra",
    [
        # one caller elsewhere with autograd on
        {
            "report.py": "from evalkit import metrics\n\n\ndef weekly(p, c, prompts):\n    return metrics.evaluate_captions(p, c, prompts)\n"
        },
        # handed on as a callback: who runs it, and how, cannot be told
        {"hooks.py": "from evalkit.metrics import evaluate_captions\n\nHOOKS = [evaluate_captions]\n"},
        # looked up by name
        {"registry.py": "import evalkit.metrics as m\n\nscorer = getattr(m, 'evaluate_captions')\n"},
        # imported under another name: the index does not follow the alias, so it cannot show the caller
        {
            "alias.py": "from evalkit.metrics import evaluate_captions as score\n\n\ndef run(p, c, x):\n    return score(p, c, x)\n"
        },
    ],
)
def test_a_caller_the_index_cannot_show_under_no_grad_keeps_the_finding(tmp_path, extra):
    findings = lint_in_project(tmp_path, _project(_UNDER_NO_GRAD, **extra), "evalkit/metrics.py", CODE)
    assert [(f.line, f.code) for f in findings] == [(8, CODE)]
    assert "`captioner(...)` evaluates with autograd on in `evaluate_captions()`" in findings[0].message


def test_a_helper_no_file_calls_is_still_reported(tmp_path):
    files = {"evalkit/__init__.py": "", "evalkit/metrics.py": _HELPER}
    assert [f.line for f in lint_in_project(tmp_path, files, "evalkit/metrics.py", CODE)] == [8]


def test_a_caller_elsewhere_with_autograd_on_is_reported(tmp_path):
    call = "print(evaluate_captions(pipeline, captioner, prompts))"
    assert [f.line for f in lint_in_project(tmp_path, _project(call), "evalkit/metrics.py", CODE)] == [8]
