"""TL010: a total that is a dict or a set cannot be added to (``+=`` raises, nothing piles up),
and which element of the tuple an unreadable criterion returns is the loss is not shown."""

from expect_markers import check

CODE = "TL010"


# ----- a dict or a set as the running total -------------------------------------------------------


def test_dict_of_per_width_totals_added_to_as_a_whole_is_silent(lint):
    check(
        lint,
        """
        def train_epoch(model, loader, criterion, aux_criterion, optimizer, widths, ratio):
            model.train()
            aux_total = {"width%s" % w: 0.0 for w in widths}
            for feats, labels in loader:
                for width in widths:
                    model.set_width(width)
                    logits, embeds = model(feats)
                    cls_loss = criterion(logits, labels)
                    aux_loss = ratio * aux_criterion(embeds, labels)
                    aux_total += aux_loss
                    optimizer.zero_grad()
                    (cls_loss + aux_loss).backward()
                    optimizer.step()
            return aux_total
        """,
        CODE,
    )


def test_set_built_by_a_call_is_silent_too(lint):
    check(
        lint,
        """
        def fit(model, loader, criterion, optimizer):
            seen = set()
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                seen = seen + loss
        """,
        CODE,
    )


def test_a_number_on_one_path_and_a_dict_on_another_is_still_reported(lint):
    check(
        lint,
        """
        def train_epoch(model, loader, criterion, optimizer, per_width):
            if per_width:
                aux_total = {"w1": 0.0}
            else:
                aux_total = 0.0
            for x, y in loader:
                optimizer.zero_grad()
                logits, embeds = model(x)
                aux_loss = criterion(embeds, y)
                (criterion(logits, y) + aux_loss).backward()
                optimizer.step()
                aux_total += aux_loss  # expect: TL010
            return aux_total
        """,
        CODE,
    )


def test_dict_entry_accumulated_still_reported(lint):
    check(
        lint,
        """
        def train_epoch(model, loader, criterion, optimizer):
            meter = {"loss": 0.0}
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                meter["loss"] += loss  # expect: TL010
            return meter
        """,
        CODE,
    )


# ----- the tuple of a criterion the linter cannot read -------------------------------------------


def test_statistic_unpacked_beside_the_loss_of_an_unreadable_criterion_is_silent(lint):
    check(
        lint,
        """
        def train_dice(model, loader, optimizer, criterion):
            model.train()
            dice_bg, dice_fg, running = 0.0, 0.0, 0.0
            for volume, mask in loader:
                optimizer.zero_grad()
                loss, per_channel = criterion(model(volume), mask)
                loss.backward()
                optimizer.step()
                dice_bg += per_channel[0]
                dice_fg += per_channel[1]
                running += loss.item()
            return dice_bg / len(loader), dice_fg / len(loader), running
        """,
        CODE,
    )


def test_the_backpropagated_element_of_an_unreadable_criterion_is_still_reported(lint):
    check(
        lint,
        """
        def train_dice(model, loader, optimizer, criterion):
            model.train()
            running = 0.0
            for volume, mask in loader:
                optimizer.zero_grad()
                loss, per_channel = criterion(model(volume), mask)
                loss.backward()
                optimizer.step()
                running += loss  # expect: TL010
            return running
        """,
        CODE,
    )


def test_attached_element_of_a_readable_criterion_is_still_reported(lint):
    check(
        lint,
        """
        import torch.nn as nn

        class DiceLoss(nn.Module):
            def forward(self, pred, target):
                inter = (pred.sigmoid() * target).sum(dim=(2, 3))
                per_channel = 2 * inter / (pred.sigmoid().sum(dim=(2, 3)) + target.sum(dim=(2, 3)) + 1e-6)
                return 1 - per_channel.mean(), per_channel

        def train_dice(model, loader, optimizer):
            criterion = DiceLoss()
            dice = 0.0
            for volume, mask in loader:
                optimizer.zero_grad()
                loss, per_channel = criterion(model(volume), mask)
                loss.backward()
                optimizer.step()
                dice += per_channel[0]  # expect: TL010
            return dice
        """,
        CODE,
    )
