"""TL001: an object built by a library's learning-rate schedule builder (transformers'
``AdafactorSchedule(optimizer)``, ``get_scheduler(...)``, ``get_linear_schedule_with_warmup(...)``)
is a scheduler whatever it is named: its ``step()`` applies no gradient, so it needs no clear. The
optimizer it schedules still does."""

from expect_markers import check

CODE = "TL001"


def test_adafactor_schedule_stepped_after_a_cleared_optimizer_is_silent(lint):
    check(
        lint,
        """
        from transformers import T5ForConditionalGeneration
        from transformers.optimization import Adafactor, AdafactorSchedule

        model = T5ForConditionalGeneration.from_pretrained("t5-small")
        optimizer = Adafactor(model.parameters(), scale_parameter=True, relative_step=True, warmup_init=True, lr=None)
        lr_fn = AdafactorSchedule(optimizer)

        for epoch in range(EPOCHS):
            model.train()
            for sample in train_loader:
                outputs = model(**sample)
                outputs.loss.backward()
                optimizer.step()
                lr_fn.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_schedule_picked_by_a_flag_in_a_trainer_is_silent(lint):
    check(
        lint,
        """
        import torch
        from transformers import get_scheduler
        from transformers.optimization import Adafactor, AdafactorSchedule


        class Trainer:
            def __init__(self, model, loader, optimizer="adamw", accum=1):
                self.model, self.loader, self.accum = model, loader, accum
                if optimizer == "adamw":
                    self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=5e-5)
                    self.warmup = get_scheduler(name="linear", optimizer=self.optimizer,
                                                num_warmup_steps=0, num_training_steps=1000)
                else:
                    self.optimizer = Adafactor(self.model.parameters(), relative_step=True, lr=None)
                    self.warmup = AdafactorSchedule(self.optimizer)

            def train(self, epochs):
                for epoch in range(epochs):
                    for step, batch in enumerate(self.loader):
                        loss = self.model(**batch).loss / self.accum
                        loss.backward()
                        if step % self.accum == 0:
                            self.optimizer.step()
                            self.warmup.step()
                            self.optimizer.zero_grad()
        """,
        CODE,
    )


def test_adafactor_itself_is_still_an_optimizer_that_needs_clearing(lint):
    findings = check(
        lint,
        """
        from transformers.optimization import Adafactor, AdafactorSchedule

        optimizer = Adafactor(model.parameters(), relative_step=True, warmup_init=True, lr=None)
        lr_fn = AdafactorSchedule(optimizer)
        for epoch in range(EPOCHS):
            for sample in train_loader:
                model(**sample).loss.backward()
                optimizer.step()  # expect: TL001
                lr_fn.step()
        """,
        CODE,
    )
    assert "`optimizer.step()` applies gradients that are never cleared" in findings[0].message
