"""TL009: a loss divided inside a comprehension is followed through the container it builds
(``tuple(...)``/``list(...)`` of a generator, a list comprehension, ``sum(...)``) and through
indexing and unpacking of that container."""

from expect_markers import check

CODE = "TL009"


# ----- positives ------------------------------------------------------------------------------


def test_comprehension_that_divides_only_the_logged_numbers(lint):
    check(
        lint,
        """
        import torch

        class Trainer:
            def run(self, model, data, optimizer, criterion, recorder):
                for batch_idx, (x, y) in enumerate(data):
                    losses = self.calc_losses(model(x), y, criterion)
                    main_loss = losses[0]
                    main_loss.backward()  # expect: TL009
                    if (batch_idx + 1) % self.acc_iters == 0:
                        optimizer.step()
                        optimizer.zero_grad()
                    recorder.add(*(loss.item() / self.acc_iters for loss in losses))

            def calc_losses(self, output, y, criterion):
                return criterion(output, y), (output.argmax(1) == y).float().mean()
        """,
        CODE,
    )


def test_comprehension_that_weights_without_dividing(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, weights, accum_steps):
            for step, (x, y) in enumerate(loader):
                terms = model.losses(x, y)
                weighted = [w * t for w, t in zip(weights, terms)]
                loss, aux = weighted
                loss.backward()  # expect: TL009
                if (step + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_tuple_of_generator_dividing_each_loss_then_indexed(lint):
    check(
        lint,
        """
        import torch

        class Trainer:
            def run(self, model, data, optimizer, criterion, scaler=None):
                optimizer.zero_grad()
                for batch_idx, (x, y) in enumerate(data):
                    with torch.autocast(device_type="cuda", enabled=scaler is not None):
                        losses = self.calc_losses(model(x), y, criterion)
                    if not isinstance(losses, tuple):
                        losses = (losses,)
                    losses = tuple(loss / self.acc_iters for loss in losses)
                    main_loss = losses[0]
                    if scaler is None:
                        main_loss.backward()
                    else:
                        scaler.scale(main_loss).backward()
                    if (batch_idx + 1) % self.acc_iters == 0:
                        if scaler is None:
                            optimizer.step()
                        else:
                            scaler.step(optimizer)
                            scaler.update()
                        optimizer.zero_grad()

            def calc_losses(self, output, y, criterion):
                return criterion(output, y)
        """,
        CODE,
    )


def test_list_comprehension_dividing_each_loss_then_unpacked(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, accum_steps):
            for step, (x, y) in enumerate(loader):
                rec, kl = model.losses(x, y)
                rec, kl = [term / accum_steps for term in (rec, kl)]
                (rec + kl).backward()
                if (step + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


def test_sum_of_divided_terms(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, accum_steps):
            for step, (x, y) in enumerate(loader):
                outputs = model(x)
                loss = sum(head_loss / accum_steps for head_loss in model.head_losses(outputs, y))
                loss.backward()
                if (step + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )
