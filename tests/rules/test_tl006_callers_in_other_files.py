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


# ----- a class whose every object is built and used under no-grad in other files -----------------
_SOLVER = """\
import torch


class OdeSolver:
    def __init__(self, model, steps):
        self.model = model
        self.steps = steps

    def predict_noise(self, x, t):
        return self.model(x, t)

    def update(self, x, t, dt):
        return x - dt * self.predict_noise(x, t)

    def sample(self, x):
        dt = 1.0 / self.steps
        for i in range(self.steps):
            x = self.update(x, 1.0 - i * dt, dt)
        return x
"""
_FRONTEND = """\
import torch
from samplers.ode import OdeSolver


class Sampler:
    def __init__(self, diffusion):
        self.diffusion = diffusion

    @torch.no_grad()
    def sample(self, noise, cond, steps=20):
        def denoise(x, t):
            return self.diffusion.apply_model(x, t, cond)

        BODY
"""
_CONFINED = "solver = OdeSolver(denoise, steps)\n        return solver.sample(noise)"


def _solver_project(body: str = _CONFINED, solver: str = _SOLVER, **extra: str) -> dict[str, str]:
    return {
        "samplers/__init__.py": "",
        "samplers/ode.py": solver,
        "samplers/frontend.py": _FRONTEND.replace("BODY", body),
        **extra,
    }


def test_methods_of_objects_built_and_used_only_under_no_grad_elsewhere_are_not_reported(tmp_path):
    assert lint_in_project(tmp_path, _solver_project(), "samplers/ode.py", CODE) == []


@pytest.mark.parametrize(
    ("body", "extra"),
    [
        # built with autograd on
        ("with torch.enable_grad():\n            return OdeSolver(denoise, steps).sample(noise)", {}),
        # the object leaves the no-grad function: whoever holds it may sample with autograd on
        ("self.solver = OdeSolver(denoise, steps)\n        return self.solver.sample(noise)", {}),
        ("solver = OdeSolver(denoise, steps)\n        return solver", {}),
        ("solver = OdeSolver(denoise, steps)\n        self.keep(solver)\n        return solver.sample(noise)", {}),
        # another file builds one outside any no-grad region
        (
            _CONFINED,
            {
                "train.py": "from samplers.ode import OdeSolver\n\n\ndef preview(fn, x):\n    return OdeSolver(fn, 4).sample(x)\n"
            },
        ),
        # a subclass elsewhere: its objects are not followed
        (_CONFINED, {"fast.py": "from samplers.ode import OdeSolver\n\n\nclass Fast(OdeSolver):\n    pass\n"}),
    ],
)
def test_an_object_not_shown_confined_to_no_grad_keeps_the_finding(tmp_path, body, extra):
    findings = lint_in_project(tmp_path, _solver_project(body, **extra), "samplers/ode.py", CODE)
    assert [(f.line, f.code) for f in findings] == [(10, CODE)]
    assert "`self.model(...)` evaluates with autograd on in `predict_noise()`" in findings[0].message


def test_a_class_that_switches_autograd_back_on_keeps_the_finding(tmp_path):
    solver = _SOLVER.replace(
        "            x = self.update(x, 1.0 - i * dt, dt)",
        "            with torch.enable_grad():\n                x = self.update(x, 1.0 - i * dt, dt)",
    )
    findings = lint_in_project(tmp_path, _solver_project(solver=solver), "samplers/ode.py", CODE)
    assert [f.line for f in findings] == [10]


def test_a_trainer_built_in_a_training_script_still_evaluates_its_model_with_autograd_on(tmp_path):
    """The usual trainer class: handed a model from outside, built where autograd is on."""
    trainer = _SOLVER.replace("def sample(self, x):", "def fit(self, x):")
    script = "import torch\nfrom samplers.ode import OdeSolver\n\nsolver = OdeSolver(torch.nn.Linear(2, 2), 10)\nsolver.fit(torch.zeros(2))\n"
    findings = lint_in_project(tmp_path, _solver_project(solver=trainer, **{"run.py": script}), "samplers/ode.py", CODE)
    assert [f.line for f in findings] == [10]
