"""TL006: a model run on synthetic input (``torch.randn`` noise) is a shape probe only while
nothing has trained it. A generator sampled from noise in a helper that runs after a training
step is evaluation of the trained model and is reported; a probe before any training, and a model
the probing function builds itself, stay silent."""

from expect_markers import check

CODE = "TL006"

_GAN = """
    import torch
    from torch import nn
    from torchvision.utils import save_image

    LATENT = 64


    class Generator(nn.Module):
        def __init__(self, n_classes=10):
            super().__init__()
            self.embed = nn.Embedding(n_classes, LATENT)
            self.net = nn.Sequential(nn.Linear(LATENT, 256), nn.ReLU(), nn.Linear(256, 784), nn.Tanh())

        def forward(self, z, labels):
            return self.net(z * self.embed(labels)).view(-1, 1, 28, 28)


    def {helper}

    def train(generator, discriminator, loader, epochs=20):
        opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4)
        opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
        bce = nn.BCEWithLogitsLoss()
        {probe}
        for epoch in range(epochs):
            for real, labels in loader:
                ones, zeros = torch.ones(len(real), 1), torch.zeros(len(real), 1)
                fake = generator(torch.randn(len(real), LATENT), labels)
                d_loss = bce(discriminator(real), ones) + bce(discriminator(fake.detach()), zeros)
                opt_d.zero_grad()
                d_loss.backward()
                opt_d.step()
                g_loss = bce(discriminator(fake), ones)
                opt_g.zero_grad()
                g_loss.backward()
                opt_g.step()
            generator.eval()
            {after}
            generator.train()
    """

_SAMPLE_GRID = """sample_grid(generator, epoch, rows=10):
        images = []
        for digit in range(rows):
            noise = torch.randn(rows, LATENT)
            labels = torch.full((rows,), digit)
            images.append(generator(noise, labels).cpu())  {marker}
        save_image(torch.cat(images), f"samples/epoch_{{epoch:03d}}.png", nrow=rows, normalize=True)
    """


def _source(helper: str, after: str, probe: str = "pass") -> str:
    return _GAN.format(helper=helper, after=after, probe=probe)


def test_trained_generator_sampled_from_noise_after_the_step_is_reported(lint):
    source = _source(_SAMPLE_GRID.format(marker="# expect: TL006"), "sample_grid(generator, epoch)")
    findings = check(lint, source, CODE)
    message = findings[0].message
    assert "`generator(...)` evaluates with autograd on in `sample_grid()`" in message
    call_line = next(
        n for n, line in enumerate(source.splitlines(), 1) if line.strip() == "sample_grid(generator, epoch)"
    )
    assert f"called at line {call_line} outside any no-grad block" in message


def test_shape_probe_on_random_input_before_any_training_is_silent(lint):
    # A check of the architecture, run once before the first step: the untrained generator's
    # output shape is read, nothing is evaluated. After the epochs nothing samples.
    helper = """validate_architecture(generator, rows=10):
        out = generator(torch.randn(rows, LATENT), torch.arange(rows))
        print(f"generator output {tuple(out.shape)}, expected {(rows, 1, 28, 28)}")
    """
    check(lint, _source(helper, "pass", probe="validate_architecture(generator)"), CODE)


def test_model_built_inside_the_probing_function_is_silent(lint):
    # Called after training, but the probe builds a generator of its own from the configuration:
    # it is untrained in every run, whatever the training before the call did to the other one.
    helper = """output_shapes(config, rows=10):
        probe = Generator(**config)
        shapes = []
        for digit in range(rows):
            shapes.append(probe(torch.randn(rows, LATENT), torch.full((rows,), digit)).shape)
        return shapes
    """
    check(lint, _source(helper, "print(output_shapes({'n_classes': 10}))"), CODE)
