"""TL012 softmax-into-cross-entropy: probabilities (or log-probabilities) fed to cross-entropy."""

from expect_markers import check

CODE = "TL012"


# ----- positives ------------------------------------------------------------------------------


def test_model_whose_forward_returns_softmax(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(128, 10)

            def forward(self, x):
                x = self.fc(x)
                return F.softmax(x, dim=1)

        def train(loader, optimizer):
            model = Classifier().to("cuda")
            criterion = nn.CrossEntropyLoss()
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)  # expect: TL012
                loss.backward()
        """,
        CODE,
    )
    finding = findings[0]
    assert finding.severity == "error" and finding.name == "softmax-into-cross-entropy"
    assert "`model(x)` is already softmax output (softmax at line 12)" in finding.message
    assert "pass the logits" in finding.message


def test_softmax_method_through_variables_and_view(lint):
    findings = check(
        lint,
        """
        import torch.nn.functional as F
        def step(model, x, y):
            logits = model(x)
            probs = logits.softmax(dim=-1)
            flat = probs.view(-1, probs.size(-1))
            return F.cross_entropy(flat, y.view(-1))  # expect: TL012
        """,
        CODE,
    )
    assert "(softmax at line 5)" in findings[0].message


def test_nn_softmax_attribute_in_lightning_module(lint):
    check(
        lint,
        """
        import torch.nn as nn
        import lightning.pytorch as pl
        class Lit(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(32, 4)
                self.softmax = nn.Softmax(dim=1)
                self.loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
            def training_step(self, batch, batch_idx):
                x, y = batch
                out = self.softmax(self.net(x))
                return self.loss_fn(out, y)  # expect: TL012
        """,
        CODE,
    )


def test_sequential_model_ending_in_softmax(lint):
    check(
        lint,
        """
        import torch
        from torch import nn
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10), nn.Softmax(dim=1))
        loss_fn = nn.CrossEntropyLoss()
        for X, y in dataloader:
            pred = model(X)
            loss = loss_fn(pred, y)  # expect: TL012
            loss.backward()
        """,
        CODE,
    )


def test_log_softmax_into_cross_entropy_suggests_nll(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn.functional as F
        def step(logits, target):
            logp = torch.log_softmax(logits, dim=-1)
            return F.cross_entropy(input=logp, target=target)  # expect: TL012
        """,
        CODE,
    )
    assert "log_softmax output" in findings[0].message and "`F.nll_loss`" in findings[0].message


def test_nested_model_class_with_softmax_head(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.Sequential(nn.Linear(8, 3), nn.LogSoftmax(dim=-1))
            def forward(self, x):
                return self.layers(x)
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Head()
            def forward(self, x):
                return self.head(x)
        net = Net()
        criterion = nn.CrossEntropyLoss()
        loss = criterion(net(inputs).squeeze(1), labels)  # expect: TL012
        """,
        CODE,
    )
    assert "log_softmax at line 6" in findings[0].message


# ----- hard negatives -------------------------------------------------------------------------


def test_softmax_only_for_metrics_next_to_loss_on_logits(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        criterion = nn.CrossEntropyLoss()
        def train_step(model, x, y):
            logits = model(x)
            loss = criterion(logits, y)
            probs = torch.softmax(logits, dim=1)
            conf, pred = probs.max(1)
            return loss, conf, pred
        """,
            CODE,
        )
        == []
    )


def test_forward_returns_softmax_only_in_eval(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def forward(self, x):
                x = self.fc(x)
                if not self.training:
                    return F.softmax(x, dim=1)
                return x
        model = Net()
        criterion = nn.CrossEntropyLoss()
        loss = criterion(model(inputs), targets)
        """,
            CODE,
        )
        == []
    )


def test_log_softmax_into_nll_loss_and_softmax_into_other_losses(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn.functional as F
        def losses(logits, y, teacher_logits):
            logp = F.log_softmax(logits, dim=1)
            a = F.nll_loss(logp, y)
            b = F.kl_div(logp, F.softmax(teacher_logits, dim=1), reduction="batchmean")
            c = F.mse_loss(torch.softmax(logits, 1), F.one_hot(y, 10).float())
            return a + b + c
        """,
            CODE,
        )
        == []
    )


def test_softmax_target_for_soft_labels(lint):
    # The *target* of cross-entropy may be probabilities (soft labels, distillation).
    assert (
        lint(
            """
        import torch.nn.functional as F
        def distill(student_logits, teacher_logits, T):
            soft = F.softmax(teacher_logits / T, dim=-1)
            return F.cross_entropy(student_logits / T, soft)
        """,
            CODE,
        )
        == []
    )


def test_reassigned_after_softmax_and_unknown_criterion(lint):
    assert (
        lint(
            """
        import torch.nn.functional as F
        def step(model, x, y, criterion):
            out = F.softmax(model(x), 1)
            out = model.head(x)
            a = F.cross_entropy(out, y)
            b = criterion(F.softmax(model(x), 1), y)
            return a + b
        """,
            CODE,
        )
        == []
    )


def test_model_with_softmax_in_the_middle(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(4, 4), nn.Softmax(dim=-1), nn.Linear(4, 3))
            def forward(self, x):
                return self.net(x)
        model = Attn()
        loss = nn.CrossEntropyLoss()(model(x), y)
        """,
            CODE,
        )
        == []
    )


# ----- further cases (both kinds), from the audit and real-world shapes ---------------------


def test_wrapped_model_and_criterion_moved_to_device(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.classifier = nn.Sequential(nn.Linear(512, 10), nn.Softmax(dim=1))
            def forward(self, x):
                return self.classifier(x)
        def main(device, loader, optimizer):
            model = torch.nn.DataParallel(Net()).to(device)
            criterion = nn.CrossEntropyLoss().cuda()
            for images, target in loader:
                output = model(images)
                loss = criterion(output, target)  # expect: TL012
                loss.backward()
        """,
        CODE,
    )


def test_criterion_chosen_by_config_is_unknown(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        def main(args, logits_model, x, y):
            if args.loss == "ce":
                criterion = nn.CrossEntropyLoss()
            else:
                criterion = nn.MSELoss()
            return criterion(torch.softmax(logits_model(x), 1), y)
        """,
            CODE,
        )
        == []
    )


def test_lightning_training_step_calling_self(lint):
    findings = check(
        lint,
        """
        import torch.nn.functional as F
        import lightning as L
        class LitClassifier(L.LightningModule):
            def forward(self, x):
                return F.softmax(self.fc(x), dim=-1)
            def training_step(self, batch, batch_idx):
                x, y = batch
                return F.cross_entropy(self(x), y)  # expect: TL012
        """,
        CODE,
    )
    assert "softmax at line 6" in findings[0].message


# ----- criteria and heads reached through the data flow (roles from data flow, issue 9) -----


def test_criterion_passed_into_the_training_function(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        def train_model(model, criterion, optimizer, loader, epochs):
            for epoch in range(epochs):
                for x, y in loader:
                    optimizer.zero_grad()
                    probs = F.softmax(model(x), dim=1)
                    loss = criterion(probs, y)  # expect: TL012
                    loss.backward()
                    optimizer.step()

        def main():
            model = nn.Linear(10, 3)
            train_model(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1), loader, 10)
        """,
        CODE,
    )


def test_criterion_passed_in_that_expects_log_probabilities_is_silent(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        def train_model(model, criterion, optimizer, loader):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(F.log_softmax(model(x), dim=1), y).backward()
                optimizer.step()

        def main():
            model = nn.Linear(10, 3)
            train_model(model, nn.NLLLoss(), torch.optim.SGD(model.parameters(), lr=0.1), loader)
        """,
        CODE,
    )


_ACGAN = """
    import torch
    import torch.nn as nn

    class Discriminator(nn.Module):
        def __init__(self, n_classes):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.LeakyReLU(0.2))
            self.adv_layer = nn.Sequential(nn.Linear(16 * 16 * 16, 1), nn.Sigmoid())
            self.aux_layer = nn.Sequential(nn.Linear(16 * 16 * 16, n_classes), HEAD)

        def forward(self, img):
            out = self.conv(img).flatten(1)
            return self.adv_layer(out), self.aux_layer(out)

    discriminator = Discriminator(10)
    adversarial_loss = nn.BCELoss()
    auxiliary_loss = nn.CrossEntropyLoss()
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
    for imgs, labels in dataloader:
        optimizer_D.zero_grad()
        real_pred, real_aux = discriminator(imgs)
        d_loss = adversarial_loss(real_pred, valid) + auxiliary_loss(real_aux, labels)  # expect: TL012
        d_loss.backward()
        optimizer_D.step()
    """


def test_softmax_head_reached_through_a_forward_returning_a_tuple(lint):
    check(lint, _ACGAN.replace("HEAD", "nn.Softmax()"), CODE)


def test_logits_head_reached_through_a_forward_returning_a_tuple_is_silent(lint):
    source = _ACGAN.replace("HEAD", "nn.Identity()").replace("  # expect: TL012", "")
    assert lint(source, CODE) == []


# ----- an attribute is what it was assigned, whatever its name ------------------------------------

_NAMED_HEAD = """
import torch
import torch.nn as nn

class Tagger(nn.Module):
    def __init__(self, dim, tags):
        super().__init__()
        self.fc = nn.Linear(dim, tags)
        self.softmax = {head}

    def forward(self, x):
        return self.softmax(self.fc(x))

net = Tagger(32, 5)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.Adam(net.parameters())
for x, y in loader:
    opt.zero_grad()
    scores = net(x)
    loss = criterion(scores, y){marker}
    loss.backward()
    opt.step()
"""


def test_attribute_named_softmax_holding_log_softmax_is_log_probabilities(lint):
    source = _NAMED_HEAD.format(head="nn.LogSoftmax(dim=1)", marker="  # expect: TL012")
    (finding,) = check(lint, source, "TL012")
    assert "given log-probabilities" in finding.message
    assert "log_softmax at line 9" in finding.message and "`F.nll_loss`" in finding.message


def test_attribute_named_softmax_holding_softmax_is_probabilities(lint):
    (finding,) = check(lint, _NAMED_HEAD.format(head="nn.Softmax(dim=1)", marker="  # expect: TL012"), "TL012")
    assert "given probabilities" in finding.message and "softmax at line 9" in finding.message


def test_attribute_named_softmax_holding_no_activation_is_silent(lint):
    check(lint, _NAMED_HEAD.format(head="nn.Identity()", marker=""), "TL012")


def test_tensor_softmax_method_is_still_probabilities(lint):
    source = _NAMED_HEAD.format(head="nn.Identity()", marker="  # expect: TL012").replace(
        "return self.softmax(self.fc(x))", "return self.fc(x).softmax(-1)"
    )
    (finding,) = check(lint, source, "TL012")
    assert "given probabilities" in finding.message
