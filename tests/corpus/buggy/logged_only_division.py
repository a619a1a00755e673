"""A GPT pretraining loop whose micro-step loop divides only the number it prints: the loss
sent to backward is the full mean loss of each micro-batch, so the update is
`grad_accum_steps` times too large."""
import time

import torch


def train(model, loader, optimizer, total_batch_size=524288, B=16, T=1024, max_steps=19073):
    grad_accum_steps = total_batch_size // (B * T)
    for step in range(max_steps):
        t0 = time.time()
        model.train()
        optimizer.zero_grad(set_to_none=True)
        loss_accum = 0.0
        for micro_step in range(grad_accum_steps):
            x, y = loader.next_batch()
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                logits, loss = model(x, y)
            loss_accum += loss.detach() / grad_accum_steps
            loss.backward()  # expect: TL009
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        dt = time.time() - t0
        print(f"step {step:5d} | loss {loss_accum.item():.6f} | norm {norm:.4f} | dt {dt * 1000:.2f}ms")
