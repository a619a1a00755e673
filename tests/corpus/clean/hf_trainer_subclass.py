"""A transformers Trainer with a class-weighted loss and a custom training step."""
import torch
from torch import nn
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments


class WeightedLossTrainer(Trainer):
    def __init__(self, *args, class_weights=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.class_weights = class_weights

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits
        weight = self.class_weights.to(logits.device) if self.class_weights is not None else None
        loss_fct = nn.CrossEntropyLoss(weight=weight)
        loss = loss_fct(logits.view(-1, model.config.num_labels), labels.view(-1))
        return (loss, outputs) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        inputs = self._prepare_inputs(inputs)
        with self.compute_loss_context_manager():
            loss = self.compute_loss(model, inputs)
        if self.args.n_gpu > 1:
            loss = loss.mean()
        self.accelerator.backward(loss)
        return loss.detach() / self.args.gradient_accumulation_steps


def build(train_ds, eval_ds, weights):
    name = "distilbert-base-uncased"
    tokenizer = AutoTokenizer.from_pretrained(name)
    model = AutoModelForSequenceClassification.from_pretrained(name, num_labels=3)
    args = TrainingArguments(
        output_dir="out",
        per_device_train_batch_size=16,
        gradient_accumulation_steps=4,
        learning_rate=3e-5,
        num_train_epochs=3,
        eval_strategy="epoch",
        bf16=True,
    )
    return WeightedLossTrainer(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        tokenizer=tokenizer,
        class_weights=torch.tensor(weights, dtype=torch.float),
    )


if __name__ == "__main__":
    import datasets

    raw = datasets.load_dataset("glue", "mnli")
    trainer = build(raw["train"], raw["validation_matched"], [1.0, 1.5, 1.0])
    trainer.train()
    print(trainer.evaluate())
