"""An old-style transformers fine-tuning loop (pre-Trainer) with manual accumulation."""
import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler
from tqdm import tqdm
from transformers import AdamW, BertForSequenceClassification, get_linear_schedule_with_warmup


def evaluate(args, model, eval_dataset):
    loader = DataLoader(eval_dataset, sampler=SequentialSampler(eval_dataset), batch_size=args.eval_batch_size)
    eval_loss, steps, correct = 0.0, 0, 0
    for batch in tqdm(loader, desc="Evaluating"):
        model.eval()
        batch = tuple(t.to(args.device) for t in batch)
        with torch.no_grad():
            inputs = {"input_ids": batch[0], "attention_mask": batch[1], "labels": batch[3]}
            outputs = model(**inputs)
            tmp_eval_loss, logits = outputs[:2]
            eval_loss += tmp_eval_loss.mean().item()
        correct += (logits.argmax(-1) == inputs["labels"]).sum().item()
        steps += 1
    return {"loss": eval_loss / steps, "acc": correct / len(eval_dataset)}


def train(args, train_dataset, eval_dataset):
    model = BertForSequenceClassification.from_pretrained(args.model_name, num_labels=args.num_labels)
    model.to(args.device)
    loader = DataLoader(train_dataset, sampler=RandomSampler(train_dataset), batch_size=args.train_batch_size)
    t_total = len(loader) // args.gradient_accumulation_steps * args.num_train_epochs
    no_decay = ["bias", "LayerNorm.weight"]
    grouped = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = AdamW(grouped, lr=args.learning_rate, eps=args.adam_epsilon)
    scheduler = get_linear_schedule_with_warmup(optimizer, args.warmup_steps, t_total)
    global_step, tr_loss = 0, 0.0
    model.zero_grad()
    for _ in range(int(args.num_train_epochs)):
        for step, batch in enumerate(tqdm(loader, desc="Iteration")):
            model.train()
            batch = tuple(t.to(args.device) for t in batch)
            outputs = model(input_ids=batch[0], attention_mask=batch[1], labels=batch[3])
            loss = outputs[0]
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            loss.backward()
            tr_loss += loss.item()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                scheduler.step()
                model.zero_grad()
                global_step += 1
                if args.logging_steps > 0 and global_step % args.logging_steps == 0:
                    print(global_step, evaluate(args, model, eval_dataset), tr_loss / global_step)
    return global_step, tr_loss / max(global_step, 1)
