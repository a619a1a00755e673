"""torchlint.analysis.dataflow: reaching bindings and origins inside one file."""

import ast
import textwrap

from torchlint.analysis.context import FileContext
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import argument


def _setup(source):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, ast.parse(source))
    return ctx, dataflow(ctx)


def _use(ctx, name, line):
    """The Name node loading ``name`` on ``line``."""
    for node in ctx.nodes(ast.Name):
        if node.id == name and node.lineno == line and isinstance(node.ctx, ast.Load):
            return node
    raise AssertionError(f"no load of {name} on line {line}")


def _values(bindings):
    return [ast.unparse(b.value) if b.value is not None else b.kind for b in bindings]


def test_shared_per_file():
    ctx, flow = _setup("x = 1\n")
    assert dataflow(ctx) is flow


def test_latest_assignment_wins_and_self_reference_sees_previous():
    ctx, flow = _setup(
        """
        def f(x):
            y = x.t()
            y = y + 1
            return y
        """
    )
    assert _values(flow.reaching(_use(ctx, "y", 4))) == ["x.t()"]
    assert _values(flow.reaching(_use(ctx, "y", 5))) == ["y + 1"]
    assert _values(flow.reaching(_use(ctx, "x", 3))) == ["param"]


def test_branches_give_every_candidate_but_exclusive_branches_do_not_mix():
    ctx, flow = _setup(
        """
        def f(x, c):
            y = x
            if c:
                y = x.t()
                a = y
            else:
                y = x * 2
                b = y
            return y
        """
    )
    assert _values(flow.reaching(_use(ctx, "y", 6))) == ["x.t()"]
    assert _values(flow.reaching(_use(ctx, "y", 9))) == ["x * 2"]
    assert _values(flow.reaching(_use(ctx, "y", 10))) == ["x * 2", "x.t()", "x"]


def test_loop_bodies_and_targets():
    ctx, flow = _setup(
        """
        def f(items):
            total = 0
            for k, v in items.items():
                total += v
            return total
        """
    )
    (v,) = flow.reaching(_use(ctx, "v", 5))
    assert v.kind == "for" and ast.unparse(v.source) == "items.items()" and v.index == 1
    assert [b.kind for b in flow.reaching(_use(ctx, "total", 6))] == ["augassign", "assign"]


def test_try_handlers_and_comprehensions():
    ctx, flow = _setup(
        """
        def f(xs):
            try:
                k = 1
            except ValueError:
                k = 2
            except KeyError:
                print(k)
            return [k for k in xs]
        """
    )
    assert _values(flow.reaching(_use(ctx, "k", 8))) == ["1"]
    (comp,) = flow.reaching(_use(ctx, "k", 9))
    assert comp.kind == "for" and ast.unparse(comp.source) == "xs"


def test_enclosing_and_module_scopes():
    ctx, flow = _setup(
        """
        import torch.nn as nn
        criterion = nn.CrossEntropyLoss()
        def outer():
            scale = 2
            def inner(x):
                return criterion(x) * scale
            return inner
        """
    )
    assert _values(flow.reaching(_use(ctx, "criterion", 7))) == ["nn.CrossEntropyLoss()"]
    assert _values(flow.reaching(_use(ctx, "scale", 7))) == ["2"]
    assert [b.kind for b in flow.reaching(_use(ctx, "nn", 3))] == ["import"]


def test_tuple_unpacking():
    ctx, flow = _setup(
        """
        def f(model, x):
            a, b = x.t(), x
            logits, loss = model(x)
            return a, b, loss
        """
    )
    assert _values(flow.reaching(_use(ctx, "a", 5))) == ["x.t()"]
    (loss,) = flow.reaching(_use(ctx, "loss", 5))
    assert loss.kind == "unpack" and loss.index == 1 and ast.unparse(loss.source) == "model(x)"


def test_origins_follow_names_self_attributes_and_through():
    ctx, flow = _setup(
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.Sigmoid()
            def forward(self, x, c):
                h = self.act
                y = x.softmax(1) if c else x.sigmoid()
                z = y.view(-1)
                return h, z, c
        """
    )
    ret = ctx.nodes(ast.Return)[0].value.elts
    assert [ast.unparse(o) for o in flow.origins(ret[0])] == ["nn.Sigmoid()"]
    through_view = lambda e: e.func.value if isinstance(e, ast.Call) and e.func.attr == "view" else None  # noqa: E731
    assert [ast.unparse(o) for o in flow.origins(ret[1], through_view)] == ["x.softmax(1)", "x.sigmoid()"]
    assert flow.origins(ret[2]) == [None]


def test_argument_by_position_or_keyword():
    call = ast.parse("f(a, b, training=c)").body[0].value
    assert ast.unparse(argument(call, 1, "p")) == "b"
    assert ast.unparse(argument(call, 2, "training")) == "c"
    assert argument(call, 3, "inplace") is None


def test_later_binding_in_the_same_loop_body_overwrites():
    ctx, flow = _setup(
        """
        def f(x, levels):
            for level in levels:
                x = x.permute(0, 2, 1)
                if level:
                    x = x * 2
                x = x.reshape(-1)
            return x
        """
    )
    assert _values(flow.reaching(_use(ctx, "x", 8))) == ["x.reshape(-1)", "param"]


def test_returns_of_skips_nested_functions():
    from torchlint.analysis.nodes import returns_of

    func = ast.parse(
        textwrap.dedent(
            """
            def f(x):
                def g():
                    return 1
                if x:
                    return x
                try:
                    pass
                except Exception:
                    return None
                return g
            """
        )
    ).body[0]
    assert [r.lineno for r in sorted(returns_of(func), key=lambda r: r.lineno)] == [6, 10, 11]


def test_bindings_of_a_scope_are_in_source_order_inside_blocks():
    ctx, flow = _setup("def f():\n    for x in y:\n        a = 1\n        a = 2\n        if c:\n            a = 3\n")
    assert [b.stmt.lineno for b in flow.flow(ctx.functions["f"][0]).bindings["a"]] == [3, 4, 6]


def test_attribute_and_subscript_targets_are_bindings_named_by_their_text():
    ctx, flow = _setup(
        """
        def step(self, state):
            self.loss = self.model(x)
            self.loss /= n
            state["opt"] = make()
            a, self.b = pair()
            return self.loss, state["opt"]
        """
    )
    ret = ctx.nodes(ast.Return)[0]
    assert [b.kind for b in flow.reaching("self.loss", ret)] == ["augassign"]
    assert _values(flow.reaching("state['opt']", ret)) == ["make()"]  # named as unparsed
    ((b,),) = [flow.reaching("self.b", ret)]
    assert b.kind == "unpack" and b.index == 1 and ast.unparse(b.source) == "pair()"


def test_a_with_target_reaches_the_with_body():
    ctx, flow = _setup(
        """
        with amp.scale_loss(loss, opt) as scaled:
            scaled.backward()
        """
    )
    assert _values(flow.reaching(_use(ctx, "scaled", 3))) == ["amp.scale_loss(loss, opt)"]


def test_sole_value_is_the_value_of_a_name_assigned_once_in_its_scope():
    ctx, flow = _setup(
        """
        workers = 4
        batch = 8
        batch = 16
        def f(workers):
            return workers
        def g():
            return workers, batch
        """
    )
    values = [flow.sole_value(_use(ctx, name, line)) for name, line in (("workers", 6), ("workers", 8), ("batch", 8))]
    assert [ast.unparse(v) if v is not None else None for v in values] == [None, "4", None]


def test_visible_bindings_ignore_the_order_of_statements():
    ctx, flow = _setup(
        """
        def train(loader, k):
            need_update = False
            for i, x in enumerate(loader):
                if need_update:
                    step()
                need_update = (i + 1) % k == 0
        """
    )
    test = ctx.nodes(ast.If)[0].test
    assert _values(flow.visible_bindings("need_update", test)) == ["False", "(i + 1) % k == 0"]
    assert _values(flow.reaching(test)) == ["False"]


def test_origins_follow_a_parameter_to_every_call_site_when_asked():
    ctx, flow = _setup(
        """
        import torch.nn as nn
        def step(net, crit):
            return crit
        def main():
            step(model, nn.CrossEntropyLoss())
            step(model, crit=make_loss())
        def unused(crit):
            return crit
        """
    )
    crit = _use(ctx, "crit", 4)
    assert flow.origins(crit) == [None]  # a parameter, by default unknown
    assert [ast.unparse(o) for o in flow.origins(crit, parameters=True)] == ["nn.CrossEntropyLoss()", "make_loss()"]
    assert flow.origins(_use(ctx, "crit", 9), parameters=True) == [None]  # no call site in this file


def _move_receiver(expr):
    """Look through ``x.cuda()``: the result is the receiver."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "cuda":
        return expr.func.value
    return None


def test_origins_reached_by_two_paths_are_found_once_and_known():
    ctx, flow = _setup(
        """
        net = Net()
        if use_gpu:
            net = net.cuda()
        out = net(x)
        """
    )
    origins = flow.origins(_use(ctx, "net", 5), _move_receiver)
    assert [ast.unparse(o) for o in origins] == ["Net()"]


def test_through_may_choose_one_arm_of_a_conditional_expression():
    ctx, flow = _setup(
        """
        rate = 0.1
        p = 0.0 if not training else rate
        y = p
        """
    )
    use = _use(ctx, "p", 4)
    assert sorted(ast.unparse(o) for o in flow.origins(use)) == ["0.0", "0.1"]
    origins = flow.origins(use, lambda e: e.body if isinstance(e, ast.IfExp) else None)
    assert [ast.unparse(o) for o in origins] == ["0.0"]


def _assignment(ctx, line):
    return next(n for n in ctx.nodes(ast.Assign, ast.AnnAssign) if n.lineno == line)


def test_dead_store_is_a_store_that_no_read_reaches():
    ctx, flow = _setup(
        """
        def f(model, x, items):
            for _ in range(3):
                _ = model(x)
            out = model(x)
            out = model(x + 1)
            print(out)
            prev = None
            for item in items:
                if prev is not None:
                    print(prev)
                prev = model(item)
            kept = model(x)
            def show():
                print(kept)
            total: int = 0
            total += 1
            a = b = model(x)
            return b
        """
    )
    assert flow.dead_store(_assignment(ctx, 4))  # `_ = model(x)`: nothing reads `_`
    assert flow.dead_store(_assignment(ctx, 5))  # overwritten before the print
    assert not flow.dead_store(_assignment(ctx, 6))
    assert not flow.dead_store(_assignment(ctx, 12))  # read by the next iteration, above it
    assert not flow.dead_store(_assignment(ctx, 13))  # read by a closure
    assert not flow.dead_store(_assignment(ctx, 16))  # `total += 1` reads it
    assert not flow.dead_store(_assignment(ctx, 18))  # `b` is returned


def test_no_dead_store_where_names_are_read_by_text_or_are_attributes():
    ctx, flow = _setup(
        """
        def f(model, x):
            out = model(x)
            return locals()

        class Probe:
            out = compute()

        def g(model, x):
            global result
            result = model(x)
            self_out, = model(x),
        """
    )
    assert not flow.dead_store(_assignment(ctx, 3))
    assert not flow.dead_store(_assignment(ctx, 7))
    assert not flow.dead_store(_assignment(ctx, 11))
    assert not flow.dead_store(_assignment(ctx, 12))  # a tuple target is not a plain name
