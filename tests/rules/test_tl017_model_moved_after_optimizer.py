"""TL017 model-moved-after-optimizer: `.to()`/`.cuda()`/casts after the optimizer was built."""

import pytest
from expect_markers import check

CODE = "TL017"


# ----- positives: the optimizer holds state when the model moves, or the move makes new parameters --


def test_script_moves_model_after_loading_the_optimizer_state(lint):
    findings = check(
        lint,
        """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU())
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        optimizer.load_state_dict(torch.load("ckpt.pt")["optimizer"])
        model.cuda()  # expect: TL017
        """,
        CODE,
    )
    message = findings[0].message
    assert (
        findings[0].headline
        == "`model.cuda()` moves `model` after `optimizer` (built on line 4) was given state on line 5"
    )
    assert "the state `optimizer.load_state_dict(" in message and "stays on the old device" in message
    assert "move the model first" in message
    assert findings[0].severity == "warning" and findings[0].name == "model-moved-after-optimizer"


@pytest.mark.parametrize("move", ["model.half()", "model.bfloat16()", "model.double()", "model.to(torch.float16)"])
def test_casts_after_the_optimizer_state_was_restored(lint, move):
    check(
        lint,
        f"""
        import torch
        def build(model, checkpoint):
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            opt.load_state_dict(checkpoint["optimizer"])
            {move}  # expect: TL017
            return opt
        """,
        CODE,
    )


def test_param_groups_from_submodules_resumed_by_a_helper(lint):
    findings = check(
        lint,
        """
        import torch
        class Finetuner:
            def __init__(self, net, device, resume):
                self.net = net
                self.optimizer = torch.optim.Adam([
                    {"params": self.net.backbone.parameters(), "lr": 1e-5},
                    {"params": self.net.head.parameters()},
                ], lr=1e-3)
                load_checkpoint(resume, self.net, self.optimizer)
                self.net.to(device)  # expect: TL017

            def step(self, loss):
                loss.backward()
                self.optimizer.step()
        """,
        CODE,
    )
    assert "`self.optimizer`" in findings[0].message and "load_checkpoint(" in findings[0].message


def test_move_to_an_xla_device_after_the_optimizer(lint):
    findings = check(
        lint,
        """
        import torch
        import torch_xla.core.xla_model as xm
        def vanilla(cls_model):
            model = cls_model()
            optimizer = model.configure_optimizers()
            device = xm.xla_device()
            model = model.to(device)  # expect: TL017
            return model, optimizer
        """,
        CODE,
    )
    assert "creates new parameter tensors" in findings[0].message


def test_state_loaded_on_one_path_then_moved(lint):
    check(
        lint,
        """
        import torch
        from torch.optim import AdamW
        def main(args):
            net = MyNet()
            optim = AdamW(filter(lambda p: p.requires_grad, net.parameters()), lr=args.lr)
            if args.resume:
                optim.load_state_dict(torch.load(args.resume)["optim"])
            if args.gpu:
                net = net.cuda(args.gpu)  # expect: TL017
            train(net, optim)
        """,
        CODE,
    )


# ----- an optimizer without state: `Module.to` and casts keep the Parameter objects --------------


def test_move_after_building_an_optimizer_with_no_state_is_silent(lint):
    # Checked with torch 2.13: after `model.double()` the optimizer's params are the model's
    # (same objects), and the first step creates its state in the new dtype.
    assert not lint(
        """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU())
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        device
        model = model.to(device)
        criterion = torch.nn.CrossEntropyLoss().to(device)

        def build(model):
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            model.half()
            return opt

        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x.to(device)), y.to(device)).backward()
            optimizer.step()
        """,
        CODE,
    )


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
                optimizer.load_state_dict(torch.load(args.pretrained)["optimizer"])
            model.to(device)  # expect: TL017
            return model, optimizer

        def build_else_resume(args, device):
            if not args.resume:
                model = Net(args)
                optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
                optimizer.load_state_dict(args.warm_start_state)
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


def test_moved_between_two_training_runs_of_a_stateful_optimizer(lint):
    # The first run gives Adam its moments on the CPU; the second trains the moved model with them.
    check(
        lint,
        """
        import torch

        model = torch.nn.Linear(8, 2)
        adam = torch.optim.Adam(model.parameters(), lr=1e-3)
        sgd = torch.optim.SGD(model.parameters(), lr=0.01)
        for x, y in loader:
            adam.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            adam.step()
            sgd.step()
        model.to(device)  # expect: TL017
        for x, y in loader:
            adam.zero_grad()
            torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
            adam.step()
            sgd.step()
        """,
        CODE,
    )


_AFTER_TRAINING = """
    import torch

    def train_model(model, loader, optimizer, device):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
            optimizer.step()

    model = Net()
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=0.1)
    train_model(model, train_loader, optimizer, device)
    model.to(torch.device("cpu"))MARK
    model.eval()
    print(generate(model, prompt))
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt.pth")
    optimizer.zero_grad()
    checkpoint = torch.load("ckpt.pth")
    model = Net()
    model.load_state_dict(checkpoint["model"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.1)
    optimizer.load_state_dict(checkpoint["optimizer"])
    LATER
"""


def test_move_after_training_when_the_optimizer_never_steps_again_is_silent(lint):
    # After the move the first optimizer is only saved and cleared; the name is then rebound to a
    # new optimizer (on a new model) whose load_state_dict casts the state to its parameters.
    source = _AFTER_TRAINING.replace("MARK", "").replace("LATER", "train_model(model, train_loader, optimizer, device)")
    check(lint, source, CODE)


@pytest.mark.parametrize(
    "later",
    [
        "train_model(model, train_loader, optimizer, device)  # the same optimizer trains again",
        "optimizer.step()",
    ],
)
def test_move_after_training_when_the_optimizer_steps_again_is_reported(lint, later):
    # The state the first run gave the optimizer stays on the old device while training goes on.
    source = _AFTER_TRAINING.replace("MARK", "  # expect: TL017")
    source = source.replace(
        "    model = Net()\n    model.load_state_dict",
        "    " + later + "\n    model = Net()\n    model.load_state_dict",
    )
    check(lint, source.replace("LATER", ""), CODE)


# ----- what fills an optimizer's state: steps and loads, not reads --------------------------------


def test_state_loaded_by_a_project_helper_behind_logging_is_reported(lint):
    # Logging the optimizer gives it nothing; the helper of the file that loads its state does.
    findings = check(
        lint,
        """
        import logging
        import torch

        log = logging.getLogger(__name__)

        def restore_optimizer(opt, path):
            opt.load_state_dict(torch.load(path)["optim"])

        def prepare(net, args):
            optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
            log.info("optimizer: %s %s", type(optimizer), optimizer)
            restore_optimizer(optimizer, args.resume)
            net.to(args.device)  # expect: TL017
            for x, y in args.loader:
                torch.nn.functional.mse_loss(net(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )
    assert findings[0].headline == (
        "`net.to(args.device)` moves `net` after `optimizer` (built on line 11) was given state on line 13"
    )
    assert "restore_optimizer(optimizer, args.resume)" in findings[0].message


def test_reading_the_optimizer_gives_it_no_state(lint):
    # type(), str(), print(), logging, a helper that reads param_groups, a factory handed the
    # optimizer through **kwargs: none of them steps it or loads a state, so the first step after
    # the move creates the state on the new device.
    check(
        lint,
        """
        import logging
        import torch

        logger = logging.getLogger("train")

        def describe(opt):
            return ", ".join(str(group["lr"]) for group in opt.param_groups)

        def build_component(kind, **extra):
            return REGISTRY[kind](**extra)

        def configure(model, opt, spec):
            return build_component(spec["kind"], model=model, optimizer=opt)

        def setup(model, args):
            optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
            logger.debug("type %s", type(optimizer))
            print(repr(optimizer), str(optimizer))
            logger.info("learning rates: %s", describe(optimizer))
            logging.info("optimizer %s", optimizer)
            schedule = configure(model, optimizer, args.schedule)
            model.to(args.device)
            for x, y in args.loader:
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
                schedule.on_step()
        """,
        CODE,
    )


def test_formatting_the_optimizer_into_a_log_line_gives_it_no_state(lint):
    # `"...".format(optimizer)`, `template.format(...)`, `" | ".join(...)`, an f-string: a string's
    # methods only format what they are handed, whatever logger prints the result.
    assert not lint(
        """
        import torch

        TEMPLATE = "{:>12} : {:}"

        def search(controller, shared, args, log):
            w_opt = torch.optim.SGD(shared.parameters(), lr=0.05, momentum=0.9, nesterov=True)
            a_opt = torch.optim.Adam(controller.parameters(), lr=args.controller_lr, betas=(0.0, 0.999))
            log.write("a-optimizer : {:}".format(a_opt))
            log.write(TEMPLATE.format("w-optimizer", w_opt))
            log.write(" | ".join([repr(w_opt), f"{a_opt}"]))
            shared, controller = torch.nn.DataParallel(shared).cuda(), controller.cuda()
            for x, y in args.loader:
                w_opt.zero_grad()
                a_opt.zero_grad()
                torch.nn.functional.cross_entropy(shared(x), y).backward()
                controller(x).mean().backward()
                w_opt.step()
                a_opt.step()
        """,
        CODE,
    )


def test_resume_after_formatting_the_optimizer_is_reported_at_the_load(lint):
    # The log line gives nothing; the load after it does, and the move after that leaves the loaded
    # moments on the CPU.
    findings = check(
        lint,
        """
        import torch

        def search(controller, args, log):
            a_opt = torch.optim.Adam(controller.parameters(), lr=args.controller_lr)
            log.write("a-optimizer : {:}".format(a_opt))
            a_opt.load_state_dict(torch.load(args.resume)["a_opt"])
            controller = controller.cuda()  # expect: TL017
            for x in args.loader:
                controller(x).mean().backward()
                a_opt.step()
        """,
        CODE,
    )
    assert findings[0].headline == (
        "`controller.cuda()` moves `controller` after `a_opt` (built on line 5) was given state on line 7"
    )


# ----- a prepare-like call: its arguments run first, and it wraps the optimizer without filling it --


def test_fresh_optimizer_handed_to_amp_with_the_moved_model_is_silent(lint):
    # `model.cuda()` is an argument, so it runs before amp.initialize; the optimizer was just built.
    assert not lint(
        """
        import torch
        from apex import amp

        def fit(model, loader, cfg):
            optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.05)
            if cfg.mixed_precision:
                model, optimizer = amp.initialize(
                    model.cuda(), optimizer, opt_level="O1"
                )
            for images, labels in loader:
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                with amp.scale_loss(loss, optimizer) as scaled:
                    scaled.backward()
                optimizer.step()
        """,
        CODE,
    )


def test_preparing_the_optimizer_gives_it_no_state(lint):
    # accelerator.prepare wraps the optimizer and its scheduler; the first step after the move
    # creates the optimizer's state on the new device.
    assert not lint(
        """
        import torch
        from accelerate import Accelerator

        class Trainer:
            def __init__(self, net, lr, total_steps):
                self.accelerator = Accelerator()
                self.net = net
                self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr)
                self.scheduler = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, lr, total_steps)
                self.optimizer, self.scheduler = self.accelerator.prepare(self.optimizer, self.scheduler)
                self.net.to(self.accelerator.device)

            def train_step(self, x, y):
                self.accelerator.backward(torch.nn.functional.mse_loss(self.net(x), y))
                self.optimizer.step()
                self.scheduler.step()
        """,
        CODE,
    )


def test_library_trainer_handed_the_moved_model_is_silent(lint):
    # The move is an argument of the call that trains: it happens before any step.
    assert not lint(
        """
        import torch
        from somelib import Trainer

        def run(model, data, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            trainer = Trainer(
                optimizer,
                model.cuda(),
                max_epochs=epochs,
            )
            trainer.fit(data)
            optimizer.step()
        """,
        CODE,
    )


def test_resumed_optimizer_handed_to_amp_with_the_moved_model_is_reported(lint):
    # The state was loaded before the move; wrapping it in amp.initialize does not move it.
    findings = check(
        lint,
        """
        import torch
        from apex import amp

        def resume(model, cfg):
            optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
            checkpoint = torch.load(cfg.resume, map_location="cpu")
            optimizer.load_state_dict(checkpoint["optimizer"])
            model, optimizer = amp.initialize(
                model.cuda(),  # expect: TL017
                optimizer,
                opt_level="O2",
            )
            for x, y in cfg.loader:
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )
    assert findings[0].headline == (
        "`model.cuda()` moves `model` after `optimizer` (built on line 6) was given state on line 8"
    )
    assert "optimizer.load_state_dict(checkpoint[" in findings[0].message


def test_warmup_step_before_amp_with_the_moved_model_is_reported(lint):
    findings = check(
        lint,
        """
        import torch
        from apex import amp

        def train(model, batches, lr):
            optimizer = torch.optim.Adam(model.parameters(), lr=lr)
            x, y = next(batches)
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            model, optimizer = amp.initialize(model.cuda(), optimizer)  # expect: TL017
            for x, y in batches:
                torch.nn.functional.mse_loss(model(x.cuda()), y.cuda()).backward()
                optimizer.step()
        """,
        CODE,
    )
    assert findings[0].headline == (
        "`model.cuda()` moves `model` after `optimizer` (built on line 6) was given state on line 9"
    )


def test_building_a_scheduler_gives_the_optimizer_no_state(lint):
    assert not lint(
        """
        import torch

        def fit(model, loader, epochs, device):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
            model = model.to(device)
            for epoch in range(epochs):
                for x, y in loader:
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
                    optimizer.step()
                scheduler.step()
        """,
        CODE,
    )


def test_resumed_optimizer_with_a_scheduler_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        def fit(model, state, epochs, device):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            model.to(device)  # expect: TL017
            for epoch in range(epochs):
                optimizer.step()
                scheduler.step()
        """,
        CODE,
    )
    assert findings[0].headline.endswith("was given state on line 7")


# ----- the optimizer's state moved after the model: it follows the parameters ---------------------


def test_resume_then_move_with_the_state_moved_too_is_silent(lint):
    check(
        lint,
        """
        import torch
        def resume(net, path, device):
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
            opt.load_state_dict(torch.load(path)["opt"])
            net = net.to(device)
            for buffers in opt.state.values():
                for key, value in buffers.items():
                    if torch.is_tensor(value):
                        buffers[key] = value.to(device)
            return net, opt
        """,
        CODE,
    )


def test_state_moved_by_a_project_helper_after_the_move_is_silent(lint):
    check(
        lint,
        """
        import torch
        def state_to(optim, device):
            for param, slots in optim.state.items():
                for name in slots:
                    if isinstance(slots[name], torch.Tensor):
                        slots[name] = slots[name].cuda()
        def resume(net, ckpt):
            optim = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
            optim.load_state_dict(ckpt["optim"])
            net.cuda()
            state_to(optim, "cuda")
            return optim
        """,
        CODE,
    )


def test_state_moved_before_the_model_move_is_still_reported(lint):
    findings = check(
        lint,
        """
        import torch
        def resume(net, path):
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
            opt.load_state_dict(torch.load(path)["opt"])
            for buffers in opt.state.values():
                for key, value in buffers.items():
                    buffers[key] = value.to("cpu")
            net.cuda()  # expect: TL017
            return opt
        """,
        CODE,
    )
    assert findings[0].headline == "`net.cuda()` moves `net` after `opt` (built on line 4) was given state on line 5"


def test_state_only_read_after_the_move_is_still_reported(lint):
    check(
        lint,
        """
        import torch
        def resume(net, path, device):
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
            opt.load_state_dict(torch.load(path)["opt"])
            net.to(device)  # expect: TL017
            for buffers in opt.state.values():
                for key, value in buffers.items():
                    print(key, value.to("cpu").norm())
            return opt
        """,
        CODE,
    )
