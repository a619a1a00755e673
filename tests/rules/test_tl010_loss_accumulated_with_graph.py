"""TL010 loss-accumulated-with-graph: running totals that keep the autograd graph alive."""

from _expect import check

CODE = "TL010"


def lines(findings):
    return [f.line for f in findings]


# ----- positives ------------------------------------------------------------------------------


def test_running_loss_plus_equals_loss(lint):
    findings = lint(
        """
        import torch.nn as nn
        criterion = nn.CrossEntropyLoss()
        def train_epoch(model, loader, optimizer):
            model.train()
            running_loss = 0.0
            for images, labels in loader:
                optimizer.zero_grad()
                loss = criterion(model(images), labels)
                loss.backward()
                optimizer.step()
                running_loss += loss
            return running_loss / len(loader)
        """,
        CODE,
    )
    assert lines(findings) == [12]
    finding = findings[0]
    assert finding.severity == "warning" and finding.name == "loss-accumulated-with-graph"
    assert "`running_loss` accumulates `loss`" in finding.message
    assert "`loss.item()`" in finding.message


def test_amp_loop_total_equals_total_plus_scaled_loss(lint):
    findings = lint(
        """
        import torch
        def train(model, loader, optimizer, scaler):
            total = 0
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                total = total + loss * x.size(0)
            return total
        """,
        CODE,
    )
    assert lines(findings) == [12]
    assert "`loss * x.size(0)`" in findings[0].message


def test_meter_over_dict_of_losses(lint):
    findings = lint(
        """
        from collections import defaultdict
        def run(model, loader, optimizer):
            meters = defaultdict(float)
            for data in loader:
                loss_dict = model(data)
                losses = sum(loss_dict.values())
                optimizer.zero_grad()
                losses.backward()
                optimizer.step()
                for k, v in loss_dict.items():
                    meters[k] += v
        """,
        CODE,
    )
    assert lines(findings) == [12]


def test_losses_appended_and_stacked_later(lint):
    findings = lint(
        """
        import torch
        def fit(model, batches, opt, epochs):
            for epoch in range(epochs):
                epoch_losses = []
                for x, y in batches:
                    opt.zero_grad()
                    out = model(x)
                    loss = torch.nn.functional.mse_loss(out, y)
                    loss.backward()
                    opt.step()
                    epoch_losses.append(loss)
                print(epoch, torch.stack(epoch_losses).mean())
        """,
        CODE,
    )
    assert lines(findings) == [12]
    assert "`epoch_losses.append(loss)`" in findings[0].message


def test_accumulated_before_backward_in_accelerate_loop(lint):
    findings = lint(
        """
        def training_function(accelerator, model, train_dataloader, optimizer, lr_scheduler):
            for epoch in range(3):
                total_loss = 0
                for step, batch in enumerate(train_dataloader):
                    outputs = model(**batch)
                    loss = outputs.loss
                    total_loss += loss
                    accelerator.backward(loss)
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )
    assert lines(findings) == [8]


def test_loss_returned_by_a_train_step_helper(lint):
    findings = lint(
        """
        def train_step(model, batch, criterion, optimizer):
            optimizer.zero_grad()
            x, y = batch
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        def train(model, loader, criterion, optimizer, epochs):
            for epoch in range(epochs):
                epoch_loss = 0.0
                for batch in loader:
                    epoch_loss += train_step(model, batch, criterion, optimizer)
        """,
        CODE,
    )
    assert lines(findings) == [14]


def test_self_attribute_total_in_trainer_method(lint):
    findings = lint(
        """
        class Trainer:
            def train_epoch(self):
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    loss = self.criterion(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
                    self.epoch_loss += loss
        """,
        CODE,
    )
    assert lines(findings) == [9]


# ----- hard negatives -------------------------------------------------------------------------


def test_item_detach_and_float_conversions(lint):
    assert (
        lint(
            """
        def train(model, loader, criterion, optimizer, accelerator):
            a = b = c = d = e = 0.0
            losses = []
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                a += loss.item() * x.size(0)
                b += loss.detach().float()
                c = c + float(loss)
                d += accelerator.gather(loss.detach()).mean()
                step_loss = loss.item()
                e += step_loss
                losses.append(loss.item())
            return a, b, c, d, e, sum(losses)
        """,
            CODE,
        )
        == []
    )


def test_summed_losses_that_are_backpropagated(lint):
    assert (
        lint(
            """
        import torch
        def step(model, heads, x, targets, optimizer):
            for batch in range(10):
                optimizer.zero_grad()
                loss = 0
                parts = []
                for head, y in zip(heads, targets):
                    l = head(model(x), y)
                    loss += l
                    parts.append(l)
                total = loss + torch.stack(parts).sum()
                total.backward()
                optimizer.step()
        """,
            CODE,
        )
        == []
    )


def test_evaluation_under_no_grad(lint):
    assert (
        lint(
            """
        import torch
        def train_and_eval(model, loader, val_loader, criterion, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            val_loss = 0
            with torch.no_grad():
                for x, y in val_loader:
                    val_loss += criterion(model(x), y)
            return val_loss
        """,
            CODE,
        )
        == []
    )


def test_mc_samples_inside_one_closure_step(lint):
    # A few backward passes summed inside one optimizer step: bounded, not a leak.
    assert (
        lint(
            """
        import torch
        def training_step(self, batch):
            def closure():
                losses = []
                for i in range(2):
                    loss = self.compute_loss(batch)
                    losses.append(loss)
                    self.manual_backward(loss, retain_graph=i == 0)
                return torch.stack(losses).mean()
            self.opt.step(closure=closure)
        """,
            CODE,
        )
        == []
    )


def test_list_of_losses_never_aggregated_and_metrics_counters(lint):
    assert (
        lint(
            """
        def train(model, loader, criterion, optimizer):
            correct = 0
            seen = 0
            history = []
            for x, y in loader:
                optimizer.zero_grad()
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                correct += (out.argmax(1) == y).sum()
                seen += y.size(0)
                history.append(loss)
            return correct / seen
        """,
            CODE,
        )
        == []
    )


def test_nanogpt_micro_step_loop(lint):
    assert (
        lint(
            """
        for iter_num in range(max_iters):
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch('train')
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            lossf = loss.item() * gradient_accumulation_steps
            running = lossf if iter_num == 0 else running + lossf
        """,
            CODE,
        )
        == []
    )


def test_rebound_to_item_before_accumulating(lint):
    assert (
        lint(
            """
        def train(model, loader, criterion, optimizer):
            total = 0
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                loss = loss.item()
                total += loss
        """,
            CODE,
        )
        == []
    )


# ----- further cases (both kinds), from the audit and real-world shapes ---------------------


def test_style_transfer_partial_losses_summed_then_backpropagated(lint):
    # Shaped like a style-transfer loop: a per-layer sum that is scaled, added to the
    # content loss and backpropagated; only `.item()` values are kept across batches.
    assert (
        lint(
            """
        def train(epochs, loader, vgg, transformer, optimizer, mse_loss, grams, weight):
            for e in range(epochs):
                agg = 0.0
                for x, _ in loader:
                    optimizer.zero_grad()
                    feats = vgg(transformer(x))
                    style = 0.0
                    for f, g in zip(feats, grams):
                        style += mse_loss(f, g)
                    style *= weight
                    total = style + mse_loss(feats[1], x)
                    total.backward()
                    optimizer.step()
                    agg += style.item()
        """,
            CODE,
        )
        == []
    )


def test_helper_returning_a_number(lint):
    assert (
        lint(
            """
        def train_step(model, batch, criterion, optimizer):
            optimizer.zero_grad()
            loss = criterion(model(batch[0]), batch[1])
            loss.backward()
            optimizer.step()
            return loss.item()

        def train(model, loader, criterion, optimizer):
            total = 0.0
            for batch in loader:
                loss = train_step(model, batch, criterion, optimizer)
                total += loss
            return total
        """,
            CODE,
        )
        == []
    )


# ----- totals kept on the object by a per-batch method --------------------------------------------

_STEP_METHOD = """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def __init__(self, model, optimizer):
            self.model, self.optimizer = model, optimizer
            self.running_loss, self.eval_loss = 0.0, 0.0

        def train_step(self, x, y):
            loss = F.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.running_loss += LOSS
            step_total = 0.0
            step_total += loss

        @torch.no_grad()
        def eval_step(self, x, y):
            self.eval_loss += F.mse_loss(self.model(x), y)

        def train_epoch(self, loader):
            for x, y in loader:
                self.train_step(x, y)
            for x, y in loader:
                self.eval_step(x, y)
    """


def test_total_kept_on_self_by_a_per_batch_method(lint):
    source = _STEP_METHOD.replace("+= LOSS", "+= loss  # expect: TL010")
    check(lint, source, "TL010")


def test_detached_total_on_self_and_totals_that_do_not_outlive_the_step_are_silent(lint):
    assert lint(_STEP_METHOD.replace("+= LOSS", "+= loss.item()"), "TL010") == []
