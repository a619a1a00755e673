"""Cross-file lookups (analysis.project, analysis.callgraph.resolve_call): real files in a
temporary directory, found on disk as Python would import them, within the documented bounds."""

from __future__ import annotations

import ast
import builtins
import os
import pathlib
import textwrap

import pytest
from project_helpers import write

from torchlint.analysis import project as project_mod
from torchlint.analysis.callgraph import (
    class_bases,
    find_method,
    resolve_call,
    resolve_callee,
    resolve_class,
    resolve_local_call,
    resolve_name,
)
from torchlint.analysis.context import FileContext
from torchlint.analysis.dataflow import resolve_instance_call
from torchlint.analysis.definitions import Definition
from torchlint.analysis.project import Module, Projects


def context(path, projects: Projects | None = None) -> FileContext:
    path = str(path)
    source = pathlib.Path(path).read_text()
    projects = Projects() if projects is None else projects
    return FileContext(path, source, ast.parse(source), projects.for_file(path))


def calls(ctx: FileContext) -> dict[str, str | None]:
    """Each call's text -> where the function it runs is defined (``file:qualname``, file relative to the root)."""
    found = {}
    for call in ctx.calls:
        target = resolve_call(ctx, call)
        found[ast.unparse(call)] = None if target is None else where(ctx, target)
    return found


def where(ctx: FileContext, target: Definition | Module) -> str:
    root = ctx.project.root
    if isinstance(target, Module):
        return f"module {target.name}"
    return f"{os.path.relpath(target.path, root)}:{target.qualname}"


def lookup(ctx: FileContext, text: str):
    return ctx.project.lookup(ctx, ast.parse(text, mode="eval").body)


# ----- imports of every shape ----------------------------------------------------------------


def test_sibling_script_import(tmp_path):
    # `from fp16_util import zero_grad` next to train.py: Python puts the script's folder on sys.path.
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "scripts/fp16_util.py": """
                def zero_grad(params):
                    for p in params:
                        p.grad = None
            """,
            "scripts/train.py": """
                from fp16_util import zero_grad
                zero_grad(model_params)
            """,
        },
    )
    ctx = context(tmp_path / "scripts/train.py")
    assert calls(ctx)["zero_grad(model_params)"] == "scripts/fp16_util.py:zero_grad"


def test_relative_imports(tmp_path):
    write(
        tmp_path,
        {
            "setup.py": "",
            "pkg/__init__.py": "",
            "pkg/fp16_util.py": "def zero_grad(params): pass\n",
            "pkg/train/__init__.py": "",
            "pkg/train/loop.py": """
                from .. import fp16_util
                from ..fp16_util import zero_grad
                from .steps import step as do_step
                zero_grad(params)
                fp16_util.zero_grad(params)
                do_step()
            """,
            "pkg/train/steps.py": "def step(): pass\n",
        },
    )
    ctx = context(tmp_path / "pkg/train/loop.py")
    assert calls(ctx) == {
        "zero_grad(params)": "pkg/fp16_util.py:zero_grad",
        "fp16_util.zero_grad(params)": "pkg/fp16_util.py:zero_grad",
        "do_step()": "pkg/train/steps.py:step",
    }


def test_package_imports_in_every_spelling(tmp_path):
    write(
        tmp_path,
        {
            ".git/HEAD": "",
            "pkg/__init__.py": "",
            "pkg/util.py": "def f(x): return x\n",
            "tools/train.py": """
                import pkg.util
                import pkg.util as u
                from pkg.util import f
                from pkg import util
                pkg.util.f(1)
                u.f(2)
                f(3)
                util.f(4)
            """,
        },
    )
    ctx = context(tmp_path / "tools/train.py")
    assert set(calls(ctx).values()) == {"pkg/util.py:f"}
    assert where(ctx, lookup(ctx, "u")) == "module pkg.util"


def test_src_layout_and_namespace_packages(tmp_path):
    # No __init__.py anywhere (namespace packages), the package under src/.
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "src/mylib/losses/focal.py": "def focal_loss(x): return x\n",
            "train.py": "from mylib.losses.focal import focal_loss\nfocal_loss(1)\n",
        },
    )
    assert calls(context(tmp_path / "train.py")) == {"focal_loss(1)": "src/mylib/losses/focal.py:focal_loss"}


def test_re_exports_through_init_star_imports_and_aliases(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "models/__init__.py": """
                from .resnet import ResNet
                from .helpers import *
                Net = ResNet
                build = helpers_build_alias = None
            """,
            "models/resnet.py": "class ResNet:\n    def forward(self, x): return x\n",
            "models/helpers.py": "def init_weights(m): pass\ndef _private(): pass\n",
            "train.py": """
                from models import Net, ResNet, init_weights, _private, build
                init_weights(m)
                _private()
                build()
            """,
        },
    )
    ctx = context(tmp_path / "train.py")
    assert where(ctx, lookup(ctx, "Net")) == "models/resnet.py:ResNet"
    assert where(ctx, lookup(ctx, "ResNet.forward")) == "models/resnet.py:ResNet.forward"
    # A star import does not export private names; a name bound to a value is not a function.
    assert calls(ctx) == {"init_weights(m)": "models/helpers.py:init_weights", "_private()": None, "build()": None}


def test_a_package_submodule_the_package_does_not_import(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "pkg/__init__.py": "VERSION = 1\n",
            "pkg/util.py": "def f(): pass\n",
            "train.py": "from pkg import util\nutil.f()\n",
        },
    )
    assert calls(context(tmp_path / "train.py")) == {"util.f()": "pkg/util.py:f"}


def test_class_from_another_file_its_bases_and_methods(tmp_path):
    # A model class defined in models.py is known in train.py: its bases (through another file,
    # down to the imported torch.nn.Module) and its forward; self.method() reaches an imported base.
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "base.py": """
                import torch.nn as nn
                class BaseModel(nn.Module):
                    def init_weights(self):
                        pass
            """,
            "models.py": """
                from base import BaseModel
                class Generator(BaseModel):
                    def forward(self, z):
                        return z
            """,
            "train.py": """
                from models import Generator
                class Trainer(Generator):
                    def run(self):
                        self.init_weights()
                        self.forward(1)
                        self.nothing()
                G_AB = Generator()
            """,
        },
    )
    ctx = context(tmp_path / "train.py")
    generator = lookup(ctx, "Generator")
    assert generator.is_class and where(ctx, generator) == "models.py:Generator"
    (base,) = class_bases(generator)
    assert where(ctx, base) == "base.py:BaseModel"
    assert class_bases(base) == ["torch.nn.Module"]
    assert where(ctx, find_method(generator, "forward")) == "models.py:Generator.forward"
    assert where(ctx, find_method(generator, "init_weights")) == "base.py:BaseModel.init_weights"
    assert calls(ctx) == {
        "self.init_weights()": "base.py:BaseModel.init_weights",
        "self.forward(1)": "models.py:Generator.forward",
        "self.nothing()": None,
        "Generator()": None,  # a class is built, not a function run (see lookup for the class)
    }
    # The same-file view stops at the file's edge.
    trainer_call = next(c for c in ctx.calls if ast.unparse(c) == "self.init_weights()")
    assert resolve_local_call(ctx, trainer_call) is None


def test_super_calls_reach_the_bases_in_other_files(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "base.py": "class Base:\n    def step(self):\n        pass\n",
            "train.py": """
                from base import Base
                class Trainer(Base):
                    def step(self):
                        super().step()
                        super().__init__()
                        self.step()
            """,
        },
    )
    assert calls(context(tmp_path / "train.py")) == {
        "super().step()": "base.py:Base.step",
        "super().__init__()": None,
        "super()": None,
        "self.step()": "train.py:Trainer.step",
    }


def test_resolve_name_finds_classes_with_and_without_a_project(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "models.py": "class Generator:\n    def forward(self, z):\n        return z\n",
            "train.py": "from models import Generator\nclass Local:\n    def run(self): pass\nG_AB = Generator()\n",
        },
    )
    ctx = context(tmp_path / "train.py")
    build = next(c for c in ctx.calls if ast.unparse(c) == "Generator()")
    assert where(ctx, resolve_name(ctx, build.func)) == "models.py:Generator"
    assert where(ctx, resolve_name(ctx, ast.parse("Local.run", mode="eval").body)) == "train.py:Local.run"
    # Without a project (a string), only the file's own top level.
    alone = FileContext("<string>", ctx.source, ctx.tree)
    assert resolve_name(alone, build.func) is None
    assert resolve_name(alone, ast.parse("Local.run", mode="eval").body).qualname == "Local.run"


def test_the_pairs_for_models_and_callable_instances_across_files(tmp_path):
    """resolve_callee/resolve_class answer with the parsed file that defines the function or class
    (a class nested in a function of this file too); resolve_instance_call finds the ``__call__``
    of an instance of a class of another file, through its bases."""
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "losses.py": "class Base:\n    def __call__(self, x):\n        return x\nclass Loss(Base):\n    pass\ndef helper():\n    pass\n",
            "train.py": """
                import losses
                from losses import Loss
                def main():
                    class Inner:
                        pass
                    Inner()
                    compute = Loss()
                    compute(1)
                    other = losses.Loss()
                    other(2)
                    losses.helper()
                    print(3)
            """,
        },
    )
    ctx = context(tmp_path / "train.py")
    by_text = {ast.unparse(c): c for c in ctx.calls}
    found = resolve_class(ctx, by_text["Loss()"].func)
    assert (os.path.basename(found[0].path), found[1].name) == ("losses.py", "Loss")
    assert resolve_class(ctx, by_text["losses.Loss()"].func)[1] is found[1]
    assert resolve_class(ctx, by_text["Inner()"].func) == (ctx, ctx.classes["Inner"])
    assert resolve_class(ctx, by_text["print(3)"].func) is None
    assert resolve_callee(ctx, by_text["Loss()"]) is None  # a class is no function
    callee_ctx, function = resolve_callee(ctx, by_text["losses.helper()"])
    assert (os.path.basename(callee_ctx.path), function.name) == ("losses.py", "helper")
    for text in ("compute(1)", "other(2)"):
        method = resolve_instance_call(ctx, by_text[text])
        assert where(ctx, method) == "losses.py:Base.__call__"
    assert resolve_instance_call(ctx, by_text["print(3)"]) is None


def test_local_definitions_win_and_nested_scopes_are_kept(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "util.py": "def step(): pass\n",
            "train.py": """
                from util import step
                def main():
                    def step():
                        pass
                    step()
                step()
            """,
        },
    )
    assert [where(context(tmp_path / "train.py"), d) for d in _resolved(tmp_path / "train.py")] == [
        "train.py:main.<locals>.step",
        "util.py:step",
    ]


def _resolved(path):
    ctx = context(path)
    return [resolve_call(ctx, c) for c in ctx.calls]


# ----- what stays unknown ----------------------------------------------------------------------


def test_missing_modules_and_names_are_unknown(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "util.py": "x = 1\n",
            "train.py": """
                import torch
                from missing_module import f
                from util import not_there, x
                from .nowhere import g
                torch.nn.functional.relu(t)
                f()
                not_there()
                x()
                g()
            """,
        },
    )
    assert set(calls(context(tmp_path / "train.py")).values()) == {None}


def test_a_cycle_between_two_modules_ends(tmp_path):
    # a re-exports from b, b from a: the name is nowhere, and the lookup stops.
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "a.py": "from b import helper\nfrom b import loop\ndef train(): pass\n",
            "b.py": "from a import helper\nfrom a import train as loop\n",
            "main.py": "from a import helper, loop\nhelper()\nloop()\n",
        },
    )
    assert calls(context(tmp_path / "main.py")) == {"helper()": None, "loop()": "a.py:train"}


def test_nothing_outside_the_root_is_read(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    root = tmp_path / "proj"
    write(
        tmp_path,
        {
            "outside/util.py": "def f(): pass\n",
            "outside/pkg/__init__.py": "",
            "outside/pkg/mod.py": "def g(): pass\n",
            "proj/pyproject.toml": "",
            "proj/env/pyvenv.cfg": "",
            "proj/env/vendored.py": "def v(): pass\n",
            "proj/train.py": """
                import util
                from ..outside.util import f
                from .. import pkg
                from linked import h
                from env.vendored import v
                util.f()
                f()
                pkg.mod.g()
                h()
                v()
            """,
        },
    )
    (root / "linked.py").symlink_to(outside / "util.py")
    opened = []
    real_open = builtins.open

    def spy_open(file, *args, **kwargs):
        opened.append(os.path.realpath(file))
        return real_open(file, *args, **kwargs)

    scanned = []
    real_scandir = os.scandir

    def spy_scandir(path="."):
        scanned.append(os.path.realpath(path))
        return real_scandir(path)

    ctx = context(root / "train.py")
    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(os, "scandir", spy_scandir)
    assert set(calls(ctx).values()) == {None}
    # The only candidate files are linked.py, which leaves the root, and env/vendored.py, in a virtual environment.
    assert scanned and opened == []
    assert all(path.startswith(str(root.resolve())) for path in scanned)


def test_files_in_site_packages_have_no_project(tmp_path):
    write(tmp_path, {"lib/site-packages/pkg/a.py": "", "lib/site-packages/pkg/__init__.py": ""})
    assert Projects().for_file(str(tmp_path / "lib/site-packages/pkg/a.py")) is None


def test_the_root_depends_on_the_file_not_on_the_call(tmp_path):
    write(
        tmp_path,
        {
            "repo/.git/HEAD": "",
            "repo/a/b/c.py": "",
            "loose/pkg/__init__.py": "",
            "loose/pkg/sub/__init__.py": "",
            "loose/pkg/sub/m.py": "",
            "loose/script.py": "",
        },
    )
    projects = Projects()
    assert projects.for_file(str(tmp_path / "repo/a/b/c.py")).root == str((tmp_path / "repo").resolve())
    # Without a marker: the directory above the outermost package, or a script's own folder.
    assert projects.for_file(str(tmp_path / "loose/pkg/sub/m.py")).root == str((tmp_path / "loose").resolve())
    assert projects.for_file(str(tmp_path / "loose/script.py")).root == str((tmp_path / "loose").resolve())
    assert projects.for_file(str(tmp_path / "loose/script.py")) is projects.for_file(
        str(tmp_path / "loose/pkg/sub/m.py")
    )


@pytest.mark.parametrize("first", ["TrainAndTest/train.py", "TrainAndTest/misc/old.py", "data/raw/notes.py"])
def test_the_root_of_a_folder_without_a_marker_does_not_depend_on_the_order(tmp_path, first):
    # No root marker anywhere. A folder of scripts with a sub-folder of scripts is one project, run from
    # its top, whichever file the run met first; a folder whose parent holds no Python file stands alone.
    write(
        tmp_path,
        {"repo/TrainAndTest/train.py": "", "repo/TrainAndTest/misc/old.py": "", "repo/data/raw/notes.py": ""},
    )
    projects = Projects()
    projects.for_file(str(tmp_path / "repo" / first))
    top = str((tmp_path / "repo/TrainAndTest").resolve())
    assert projects.for_file(str(tmp_path / "repo/TrainAndTest/misc/old.py")).root == top
    assert projects.for_file(str(tmp_path / "repo/TrainAndTest/train.py")).root == top
    assert projects.for_file(str(tmp_path / "repo/data/raw/notes.py")).root == str(
        (tmp_path / "repo/data/raw").resolve()
    )


# ----- bounds ----------------------------------------------------------------------------------


def test_a_module_over_the_size_bound_is_not_read(tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "big.py": "def f(): pass\n" + "# padding\n" * 50,
            "small.py": "def g(): pass\n",
            "train.py": "from big import f\nfrom small import g\nf()\ng()\n",
        },
    )
    monkeypatch.setattr(project_mod, "MAX_MODULE_BYTES", 100)
    assert calls(context(tmp_path / "train.py")) == {"f()": None, "g()": "small.py:g"}


def test_re_export_chains_stop_at_the_hop_bound(tmp_path, monkeypatch):
    hops = project_mod.MAX_IMPORT_HOPS
    files = {"pyproject.toml": "", "m0.py": "def f(): pass\n"}
    for i in range(1, hops + 2):
        files[f"m{i}.py"] = f"from m{i - 1} import f\n"
    files["near.py"] = f"from m{hops - 1} import f\nf()\n"
    files["far.py"] = f"from m{hops + 1} import f\nf()\n"
    write(tmp_path, files)
    projects = Projects()
    assert calls(context(tmp_path / "near.py", projects)) == {"f()": "m0.py:f"}
    assert calls(context(tmp_path / "far.py", projects)) == {"f()": None}
    # The answer does not depend on what was asked before: the near chain again, and the far one fresh.
    assert calls(context(tmp_path / "near.py", projects)) == {"f()": "m0.py:f"}
    assert calls(context(tmp_path / "far.py")) == {"f()": None}


def test_the_module_count_bound_and_the_parse_cache(tmp_path, monkeypatch):
    files = {"pyproject.toml": ""}
    for i in range(6):
        files[f"m{i}.py"] = f"def f{i}(): pass\n"
    files["train.py"] = "".join(f"from m{i} import f{i}\n" for i in range(6)) + "".join(f"f{i}()\n" for i in range(6))
    write(tmp_path, files)
    monkeypatch.setattr(project_mod, "CACHED_MODULES", 2)  # parsed modules are dropped, then read again
    assert set(calls(context(tmp_path / "train.py")).values()) == {f"m{i}.py:f{i}" for i in range(6)}
    monkeypatch.setattr(project_mod, "MAX_MODULES", 3)
    found = calls(context(tmp_path / "train.py"))
    assert sum(v is not None for v in found.values()) == 3


def test_the_parse_cache_bound_holds_for_all_the_projects_of_a_run(tmp_path, monkeypatch):
    monkeypatch.setattr(project_mod, "CACHED_MODULES", 3)
    files = {}
    for root in ("a", "b"):
        files[f"{root}/pyproject.toml"] = ""
        files.update({f"{root}/m{i}.py": f"def f{i}(): pass\n" for i in range(3)})
        files[f"{root}/train.py"] = "".join(f"from m{i} import f{i}\nf{i}()\n" for i in range(3))
    write(tmp_path, files)
    projects = Projects()
    for root in ("a", "b"):
        ctx = context(tmp_path / root / "train.py", projects)
        assert sorted(calls(ctx).values()) == [f"m{i}.py:f{i}" for i in range(3)]
    # Two roots, one bound: b's modules pushed a's out.
    assert [os.path.relpath(path, tmp_path) for path in projects.parsed.paths()] == [
        os.path.join("b", f"m{i}.py") for i in range(3)
    ]


# ----- without a project ---------------------------------------------------------------------------


def test_a_string_has_no_project_and_only_its_own_functions():
    source = textwrap.dedent(
        """
        from util import zero_grad
        def local(): pass
        zero_grad(p)
        local()
        """
    )
    ctx = FileContext("<string>", source, ast.parse(source))
    assert ctx.project is None
    assert [resolve_call(ctx, c) and resolve_call(ctx, c).qualname for c in ctx.calls] == [None, "local"]


@pytest.mark.parametrize("spelling", ["train.py", "./train.py", "sub/../train.py"])
def test_one_file_under_several_spellings_is_one_key(tmp_path, monkeypatch, spelling):
    write(tmp_path, {"pyproject.toml": "", "sub/x.py": "", "train.py": "def f(): pass\nf()\n"})
    monkeypatch.chdir(tmp_path)
    ctx = context(spelling)
    (target,) = [resolve_call(ctx, c) for c in ctx.calls]
    assert target.key == (str((tmp_path / "train.py").resolve()), "f", 1)
