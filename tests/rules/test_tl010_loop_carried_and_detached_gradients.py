"""TL010: only a binding carried round a loop's back edge accumulates across iterations, and
gradients asked for without ``create_graph`` carry no graph."""

from expect_markers import check

CODE = "TL010"


# ----- a total rebound on every path to the `+=` is a sum within one step ----------------------


def test_total_rebound_before_the_add_after_an_early_continue_is_one_steps_sum(lint):
    check(
        lint,
        """
        import torch.nn.functional as F
        def train(net, source, optimizer, batch_size):
            batch = []
            for step, item in enumerate(source):
                batch.append(item)
                if len(batch) < batch_size:
                    continue
                states, targets = collate(batch)
                batch.clear()
                optimizer.zero_grad()
                logits, values = net(states)
                value_loss = F.mse_loss(values, targets)
                policy_loss = -F.log_softmax(logits, dim=1).mean()
                policy_loss.backward(retain_graph=True)
                total = value_loss + 0.01 * logits.pow(2).mean()
                total.backward()
                optimizer.step()
                total += policy_loss
                log_scalar("loss_total", total, step)
        """,
        CODE,
    )


def test_total_carried_round_a_continue_after_the_add_still_accumulates(lint):
    findings = check(
        lint,
        """
        import torch.nn.functional as F
        def train(net, loader, optimizer, every):
            total = 0
            for step, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(net(x), y)
                loss.backward()
                optimizer.step()
                total += loss  # expect: TL010
                if step % every:
                    continue
                log_scalar("loss", total / every, step)
                total = 0
        """,
        CODE,
    )
    assert "`total` accumulates `loss`" in findings[0].message


def test_total_rebound_only_on_some_paths_before_the_add_still_accumulates(lint):
    findings = check(
        lint,
        """
        import torch.nn.functional as F
        def train(net, loader, optimizer):
            total = 0
            for step, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(net(x), y)
                loss.backward()
                optimizer.step()
                if step == 0:
                    total = loss.detach()
                total += loss  # expect: TL010
            return total
        """,
        CODE,
    )
    assert findings[0].line == 12


# ----- gradients from torch.autograd.grad ----------------------------------------------------------


def test_input_gradient_norm_without_create_graph_is_detached(lint):
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F
        def train(model, loader, optimizer):
            grad_norm = 0.0
            for x, y in loader:
                x.requires_grad_(True)
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward(retain_graph=True)
                optimizer.step()
                (x_grad,) = torch.autograd.grad(loss, x, create_graph=False)
                grad_norm += x_grad.abs().sum()
                grad_norm += torch.autograd.grad(loss, x)[0].norm()
            return grad_norm
        """,
        CODE,
    )


def test_input_gradient_with_create_graph_carries_a_graph(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn.functional as F
        def train(model, loader, optimizer, double_backward):
            penalty_total = 0.0
            for x, y in loader:
                x.requires_grad_(True)
                loss = F.cross_entropy(model(x), y)
                grads = torch.autograd.grad(loss, x, None, None, True)[0]
                penalty = grads.pow(2).sum()
                optimizer.zero_grad()
                (loss + penalty).backward()
                optimizer.step()
                penalty_total += penalty  # expect: TL010
                hvp = torch.autograd.grad(loss, x, create_graph=double_backward)[0]
                penalty_total += hvp.sum()  # expect: TL010
            return penalty_total
        """,
        CODE,
    )
    assert "`penalty_total` accumulates `penalty`" in findings[0].message
    assert "`penalty_total` accumulates `hvp.sum()`" in findings[1].message


# ----- a loss computed from operands that carry no graph is a plain number ----------------------


def test_loss_of_detached_output_and_loader_batches_is_plain(lint):
    check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        def fit(net, optimizer, train_set, epochs):
            loaders = {split: DataLoader(train_set[split], batch_size=16) for split in ("fit", "dev")}
            psnr_sum = {"fit": 0.0, "dev": 0.0}
            l1 = nn.L1Loss()
            for epoch in range(epochs):
                for it, pair in enumerate(loaders["fit"]):
                    blurred, sharp = [t.to("cuda") for t in pair]
                    optimizer.zero_grad()
                    restored = net(blurred)
                    loss = F.smooth_l1_loss(restored, sharp)
                    loss.backward()
                    optimizer.step()
                    residual = blurred - restored.detach()
                    psnr_sum["fit"] += F.mse_loss(residual, sharp)
                    psnr_sum["dev"] += l1(restored.data, sharp)
            return psnr_sum
        """,
        CODE,
    )


def test_loss_with_one_attached_operand_still_accumulates(lint):
    findings = check(
        lint,
        """
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        def fit(net, optimizer, train_set, epochs):
            loader = DataLoader(train_set, batch_size=16, shuffle=True)
            running = 0.0
            for epoch in range(epochs):
                for blurred, sharp in loader:
                    optimizer.zero_grad()
                    restored = net(blurred)
                    loss = F.smooth_l1_loss(restored, sharp)
                    loss.backward()
                    optimizer.step()
                    running += F.mse_loss(blurred - restored, sharp)  # expect: TL010
            return running
        """,
        CODE,
    )
    assert "`running` accumulates `F.mse_loss(blurred - restored, sharp)`" in findings[0].message


def test_loss_of_operands_not_known_to_be_plain_still_accumulates(lint):
    # ``batches`` is a parameter (it may hold anything) and the criterion is a project class that
    # may hold parameters of its own: neither is shown to carry no graph.
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class CentreLoss(nn.Module):
            def __init__(self, classes, dim):
                super().__init__()
                self.centres = nn.Parameter(torch.randn(classes, dim))
            def forward(self, features, labels):
                return (features - self.centres[labels]).pow(2).sum(1).mean()
        def fit(net, optimizer, batches):
            centre_loss = CentreLoss(10, 64)
            running = 0.0
            for features, labels in batches:
                optimizer.zero_grad()
                loss = F.cross_entropy(net(features), labels)
                loss.backward()
                optimizer.step()
                running += F.mse_loss(features, labels)  # expect: TL010
                running += centre_loss(features.detach(), labels)  # expect: TL010
            return running
        """,
        CODE,
    )
    assert len(findings) == 2
