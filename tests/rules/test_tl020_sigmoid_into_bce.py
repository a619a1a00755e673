"""TL020 sigmoid-into-bce: sigmoid output fed to a loss that applies sigmoid itself."""

from expect_markers import check

CODE = "TL020"


# ----- positives ------------------------------------------------------------------------------


def test_dcgan_style_discriminator_ending_in_sigmoid(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn

        class Discriminator(nn.Module):
            def __init__(self, ndf):
                super().__init__()
                self.main = nn.Sequential(
                    nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
                    nn.Sigmoid(),
                )

            def forward(self, input):
                return self.main(input).view(-1, 1).squeeze(1)

        netD = Discriminator(64).to(device)
        criterion = nn.BCEWithLogitsLoss()
        output = netD(real_cpu)
        errD_real = criterion(output, label)  # expect: TL020
        """,
        CODE,
    )
    finding = findings[0]
    assert finding.severity == "error" and finding.name == "sigmoid-into-bce"
    assert "`output` is already sigmoid output (sigmoid at line 9)" in finding.message
    assert "pass the logits" in finding.message and "`nn.BCELoss`" in finding.message


def test_torch_sigmoid_through_squeeze(lint):
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F
        def step(model, x, y):
            p = torch.sigmoid(model(x)).squeeze(-1)
            return F.binary_cross_entropy_with_logits(p, y.float())  # expect: TL020
        """,
        CODE,
    )


def test_sigmoid_method_and_module_level_criterion(lint):
    check(
        lint,
        """
        import torch.nn as nn
        bce = nn.BCEWithLogitsLoss(pos_weight=w)
        def train(model, loader):
            for x, y in loader:
                scores = model(x).sigmoid()
                loss = bce(scores, y)  # expect: TL020
                loss.backward()
        """,
        CODE,
    )


def test_self_activation_attribute(lint):
    check(
        lint,
        """
        import torch
        from torch import nn
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 1)
                self.act = nn.Sigmoid()
                self.criterion = nn.BCEWithLogitsLoss()
            def loss(self, x, y):
                return self.criterion(self.act(self.fc(x)), y)  # expect: TL020
        """,
        CODE,
    )


def test_clamped_sigmoid_and_fresh_loss_object(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        def step(logits, y):
            prob = torch.clamp(torch.sigmoid(logits), 1e-4, 1 - 1e-4)
            return nn.BCEWithLogitsLoss()(prob, y)  # expect: TL020
        """,
        CODE,
    )


def test_model_forward_returns_sigmoid_on_every_path(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                if self.extra:
                    return torch.sigmoid(self.a(x))
                return torch.sigmoid(self.b(x))
        model = Net()
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(model(x), y)  # expect: TL020
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_logits_to_loss_sigmoid_for_predictions(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        criterion = nn.BCEWithLogitsLoss()
        def step(model, x, y):
            logits = model(x)
            loss = criterion(logits, y)
            preds = (torch.sigmoid(logits) > 0.5).float()
            return loss, preds
        """,
            CODE,
        )
        == []
    )


def test_sigmoid_into_plain_bce(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        criterion = nn.BCELoss()
        def step(model, x, y):
            p = torch.sigmoid(model(x))
            return criterion(p, y) + F.binary_cross_entropy(p, y)
        """,
            CODE,
        )
        == []
    )


def test_gan_discriminator_without_sigmoid(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        class D(nn.Module):
            def __init__(self):
                super().__init__()
                self.main = nn.Sequential(nn.Linear(8, 8), nn.Sigmoid(), nn.Linear(8, 1))
            def forward(self, x):
                return self.main(x)
        netD = D()
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(netD(x), y)
        """,
            CODE,
        )
        == []
    )


def test_sigmoid_only_in_eval_branch(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                out = self.fc(x)
                if not self.training:
                    out = torch.sigmoid(out)
                return out
        model = Net()
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(model(x), y)
        """,
            CODE,
        )
        == []
    )


def test_sigmoid_used_as_target_or_weight(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn.functional as F
        def distill(student_logits, teacher_logits, w):
            soft_targets = torch.sigmoid(teacher_logits)
            return F.binary_cross_entropy_with_logits(student_logits, soft_targets, weight=torch.sigmoid(w))
        """,
            CODE,
        )
        == []
    )


def test_unknown_loss_object_and_rebound_name(lint):
    assert (
        lint(
            """
        import torch
        def step(model, x, y, loss_fn):
            out = torch.sigmoid(model(x))
            a = loss_fn(out, y)
            out = model.logits(x)
            return a + torch.nn.functional.binary_cross_entropy_with_logits(out, y)
        """,
            CODE,
        )
        == []
    )


def test_forward_inherited_from_a_base_class_of_the_file(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        class Base(nn.Module):
            def forward(self, x):
                return torch.sigmoid(self.head(x))
        class Wide(Base):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(64, 1)
        model = Wide()
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(model(x).squeeze(1), y)  # expect: TL020
        """,
        CODE,
    )


# ----- reached through roles from data flow (issue 9) -----

_FIT = """
    import torch
    import torch.nn as nn

    def fit(model, criterion, optimizer, loader):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(torch.sigmoid(model(x)), y)  # expect: TL020
            loss.backward()
            optimizer.step()

    def main():
        model = nn.Linear(10, 1)
        fit(model, CRITERION, torch.optim.SGD(model.parameters(), lr=0.1), loader)
    """


def test_bce_with_logits_passed_into_the_training_function(lint):
    check(lint, _FIT.replace("CRITERION", "nn.BCEWithLogitsLoss()"), CODE)


def test_plain_bce_passed_into_the_training_function_is_silent(lint):
    assert lint(_FIT.replace("CRITERION", "nn.BCELoss()").replace("  # expect: TL020", ""), CODE) == []


# ----- a model whose layers the script replaces after building it ------------------------------------

_HEAD_REPLACED = """
    import torch
    import torch.nn as nn


    class ReturnClassifier(nn.Module):
        def __init__(self, n_features, hidden=96):
            super().__init__()
            self.lstm = nn.LSTM(n_features, hidden, num_layers=2, batch_first=True)
            self.classifier = nn.Sequential(nn.Linear(hidden, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.classifier(out[:, -1])


    def fit(loader, n_features, pos_weight):
        model = ReturnClassifier(n_features)
        criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
        model.classifier[-1] = nn.Identity()  # logits for BCEWithLogitsLoss
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for batch_x, batch_y in loader:
            optimizer.zero_grad()
            loss = criterion(model(batch_x).squeeze(-1), batch_y)
            loss.backward()
            optimizer.step()
    """


def test_sigmoid_head_replaced_by_identity_before_training_is_silent(lint):
    assert lint(_HEAD_REPLACED, CODE) == []


def test_sigmoid_head_kept_is_reported(lint):
    source = _HEAD_REPLACED.replace(
        "        model.classifier[-1] = nn.Identity()  # logits for BCEWithLogitsLoss\n", ""
    )
    source = source.replace(
        "loss = criterion(model(batch_x).squeeze(-1), batch_y)",
        "loss = criterion(model(batch_x).squeeze(-1), batch_y)  # expect: TL020",
    )
    check(lint, source, CODE)


def test_a_setting_stored_on_the_model_keeps_its_head_known(lint):
    source = _HEAD_REPLACED.replace(
        "model.classifier[-1] = nn.Identity()  # logits for BCEWithLogitsLoss", 'model.name = "lstm-classifier"'
    ).replace(
        "loss = criterion(model(batch_x).squeeze(-1), batch_y)",
        "loss = criterion(model(batch_x).squeeze(-1), batch_y)  # expect: TL020",
    )
    check(lint, source, CODE)
