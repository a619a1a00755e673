"""TL017 model-moved-after-optimizer: `.to()`/`.cuda()`/casts after the optimizer was built."""

import pytest
from _expect import check

CODE = "TL017"


def lines(findings):
    return [f.line for f in findings]


# ----- positives ------------------------------------------------------------------------------


def test_script_moves_model_after_adamw(lint):
    findings = lint(
        """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU())
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        optimizer.load_state_dict(torch.load("ckpt.pt")["optimizer"])
        model.cuda()
        """,
        CODE,
    )
    assert lines(findings) == [6]
    message = findings[0].message
    assert "`model.cuda()` moves `model` after `optimizer` was built from its parameters (line 4)" in message
    assert "move the model first" in message
    assert findings[0].severity == "warning" and findings[0].name == "model-moved-after-optimizer"


@pytest.mark.parametrize("move", ["model.half()", "model.bfloat16()", "model.double()", "model.to(torch.float16)"])
def test_casts_after_optimizer(lint, move):
    findings = lint(
        f"""
        import torch
        def build(model):
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            {move}
            return opt
        """,
        CODE,
    )
    assert lines(findings) == [5]


def test_param_groups_from_submodules(lint):
    findings = lint(
        """
        import torch
        class Finetuner:
            def __init__(self, net, device):
                self.net = net
                self.optimizer = torch.optim.Adam([
                    {"params": self.net.backbone.parameters(), "lr": 1e-5},
                    {"params": self.net.head.parameters()},
                ], lr=1e-3)
                self.net.to(device)
        """,
        CODE,
    )
    assert lines(findings) == [10]
    assert "`self.optimizer`" in findings[0].message


def test_configure_optimizers_before_move(lint):
    findings = lint(
        """
        import torch
        def vanilla(cls_model, device):
            model = cls_model()
            optimizer = model.configure_optimizers()
            model = model.to(device)
            return model, optimizer
        """,
        CODE,
    )
    assert lines(findings) == [6]


def test_named_parameters_filtered_then_moved(lint):
    findings = lint(
        """
        import torch
        from torch.optim import AdamW
        def main(args):
            net = MyNet()
            decay = [p for n, p in net.named_parameters() if "bias" not in n]
            optim = AdamW(filter(lambda p: p.requires_grad, net.parameters()), lr=args.lr)
            if args.gpu:
                net = net.cuda(args.gpu)
            train(net, optim)
        """,
        CODE,
    )
    assert lines(findings) == [9]


# ----- hard negatives -------------------------------------------------------------------------


def test_model_moved_before_optimizer(lint):
    assert not lint(
        """
        import torch
        model = Net().to("cuda")
        model.cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        """,
        CODE,
    )


def test_data_moved_not_model(lint):
    assert not lint(
        """
        import torch
        def train(model, loader, device):
            model.to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            for x, y in loader:
                x, y = x.to(device), y.cuda()
                weights = class_weights.to(device)
                loss = model(x).sub(y).pow(2).mul(weights).mean()
                loss.backward()
                optimizer.step()
        """,
        CODE,
    )


def test_half_for_export_after_training(lint):
    assert not lint(
        """
        import torch
        def main(model, loader):
            optimizer = torch.optim.Adam(model.parameters())
            for x in loader:
                model(x).mean().backward()
                optimizer.step()
                optimizer.zero_grad()
            model.half()
            torch.save(model.state_dict(), "model_fp16.pt")
        """,
        CODE,
    )


def test_optimizer_handed_to_trainer_before_move(lint):
    assert not lint(
        """
        import torch
        def main(model, data):
            optimizer = torch.optim.Adam(model.parameters())
            fit(model, optimizer, data)
            model.to("cpu")
            torch.save(model.state_dict(), "final.pt")
        """,
        CODE,
    )


def test_optimizer_in_other_branch(lint):
    assert not lint(
        """
        import torch
        def setup(model, args):
            if args.resume:
                optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
            else:
                model.cuda()
                optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
            return optimizer
        """,
        CODE,
    )


def test_new_model_after_reassignment(lint):
    assert not lint(
        """
        import torch
        def compare(device):
            model = Small()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model = Large()
            model.to(device)
            return optimizer
        """,
        CODE,
    )


def test_move_in_another_method(lint):
    # Only the same scope is judged: the order across methods is not known statically.
    assert not lint(
        """
        import torch
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
            def to_device(self, device):
                self.model.to(device)
        """,
        CODE,
    )


def test_other_module_moved(lint):
    assert not lint(
        """
        import torch
        def setup(model, teacher, device):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            teacher.to(device)
            loss_fn = torch.nn.CrossEntropyLoss().cuda()
            return optimizer
        """,
        CODE,
    )


# ----- miss: the other branch of an `if` loads model and optimizer from a checkpoint -------------


def test_fresh_branch_builds_the_optimizer_and_the_model_moves_after_the_if(lint):
    check(
        lint,
        """
        import torch

        def build(args, device):
            if args.resume:
                model, optimizer = load_checkpoint(args.resume)
            else:
                model = Net(args)
                optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
            model.to(device)  # expect: TL017
            return model, optimizer

        def build_else_resume(args, device):
            if not args.resume:
                model = Net(args)
                optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
            else:
                ckpt = torch.load(args.resume, map_location="cpu")
                model, optimizer = ckpt["model"], ckpt["optimizer"]
            model = model.to(device)  # expect: TL017
            return model, optimizer
        """,
        CODE,
    )


def test_checkpoint_branch_moves_and_the_fresh_branch_moves_first(lint):
    check(
        lint,
        """
        import torch

        def build(args, device):
            if args.resume:
                model, optimizer = load_checkpoint(args.resume)
                model.to(device)
            else:
                model = Net(args).to(device)
                optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
            return model, optimizer

        def reload(args, device):
            model = Net(args)
            optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
            model, optimizer = restore(args.resume, model, optimizer)
            model.to(device)
            return model, optimizer
        """,
        CODE,
    )
