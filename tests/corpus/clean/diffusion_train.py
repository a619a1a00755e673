"""Train a small DDPM denoiser; a sampling loop steps the *noise* scheduler, not the LR scheduler."""
import torch
import torch.nn.functional as F
from diffusers import DDPMScheduler, UNet2DModel
from diffusers.optimization import get_cosine_schedule_with_warmup


@torch.no_grad()
def sample(unet, noise_scheduler, n=16, size=32, device="cuda"):
    unet.eval()
    x = torch.randn(n, 3, size, size, device=device)
    noise_scheduler.set_timesteps(50)
    for t in noise_scheduler.timesteps:
        eps = unet(x, t).sample
        x = noise_scheduler.step(eps, t, x).prev_sample
    unet.train()
    return (x.clamp(-1, 1) + 1) / 2


def train(loader, epochs=100, sample_every=2000, device="cuda"):
    unet = UNet2DModel(sample_size=32, in_channels=3, out_channels=3, block_out_channels=(64, 128, 256, 256))
    unet.to(device)
    noise_scheduler = DDPMScheduler(num_train_timesteps=1000)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-4, weight_decay=1e-2)
    lr_scheduler = get_cosine_schedule_with_warmup(optimizer, 500, epochs * len(loader))
    step = 0
    for epoch in range(epochs):
        unet.train()
        for images, _ in loader:
            if step % sample_every == 0:
                torch.save(sample(unet, noise_scheduler, device=device).cpu(), f"samples_{step:07d}.pt")
            clean = images.to(device) * 2 - 1
            noise = torch.randn_like(clean)
            t = torch.randint(0, noise_scheduler.config.num_train_timesteps, (clean.size(0),), device=device)
            noisy = noise_scheduler.add_noise(clean, noise, t)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                pred = unet(noisy, t).sample
            loss = F.mse_loss(pred.float(), noise)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
            optimizer.step()
            lr_scheduler.step()
            step += 1
    return unet
