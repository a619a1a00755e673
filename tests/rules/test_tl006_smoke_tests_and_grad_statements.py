"""TL006: pytest smoke tests of freshly built models, and a bare ``torch.set_grad_enabled(expr)``
read on the evaluation path of a function that serves both phases."""

from expect_markers import check

# ----- smoke tests: synthetic masks, positions, literal batches, calls expected to raise ----------


def test_smoke_test_on_random_tokens_and_cast_mask_is_silent(lint):
    # A library model built in the test, fed `torch.randint(...)` tokens and a mask cast with `.bool()`,
    # optional positions from `torch.arange` or None: a check that the forward runs, no evaluation.
    source = """
        import pytest
        import torch
        from seqlib import SeqEncoder

        @pytest.mark.parametrize("use_positions", (True, False))
        def test_encoder_forward(use_positions):
            encoder = SeqEncoder(width=64, layers=2)
            tokens = torch.randint(0, 100, (2, 16))
            padding = torch.randint(0, 2, (2, 16)).bool()
            positions = torch.arange(16) if use_positions else None
            hidden = encoder(tokens, mask=padding, positions=positions)
        """
    assert lint(source, "TL006") == []


def test_literal_batch_moved_and_cast_repeatedly_is_silent(lint):
    source = """
        import torch
        from seqlib import SeqDecoder

        def test_decoder_survives_device_moves(config):
            decoder = SeqDecoder(config)
            decoder = decoder.half().to("cuda")
            decoder.eval()
            ids = torch.tensor([[17, 4, 9]]).to("cuda")
            keep = torch.tensor([[1, 1, 1]]).bool().to("cuda")
            _ = decoder(ids, attention_mask=keep)
            decoder = decoder.to("cpu").float()
            _ = decoder(ids.to("cpu"), attention_mask=keep.to("cpu"))
        """
    assert lint(source, "TL006") == []


def test_model_call_expected_to_raise_is_silent(lint):
    source = """
        import pytest
        import unittest

        def test_rejects_both_ids_and_embeddings(request):
            model = request.getfixturevalue("trained_model")
            batch = next(iter(request.getfixturevalue("val_loader")))
            with pytest.raises(ValueError, match="either"):
                model(batch)

        class DecoderTests(unittest.TestCase):
            def test_rejects_long_inputs(self):
                for batch in self.val_loader:
                    with self.assertRaisesRegex(RuntimeError, "too long"):
                        self.model(batch)
        """
    assert lint(source, "TL006") == []


def test_test_function_evaluating_a_loaded_model_on_real_data_is_reported(lint):
    # Same shapes on real data: a checkpoint loaded, its masks cast with `.bool()`, evaluated batch by
    # batch, outside any `pytest.raises`.
    findings = check(
        lint,
        """
        import torch
        from seqlib import SeqEncoder

        def test_checkpoint_accuracy(checkpoint_path, val_loader):
            encoder = SeqEncoder(width=64, layers=2)
            encoder.load_state_dict(torch.load(checkpoint_path))
            encoder.eval()
            correct = 0
            for batch in val_loader:
                mask = batch["mask"].bool()
                logits = encoder(batch["tokens"], mask=mask)  # expect: TL006
                correct += (logits.argmax(-1) == batch["label"]).sum().item()
            print(correct)
        """,
        "TL006",
    )
    assert "`encoder(...)` evaluates with autograd on in `test_checkpoint_accuracy()`" in findings[0].message


# ----- helpers whose only outcome is their assertions ----------------------------------------------


def test_helper_that_only_compares_two_backends_is_silent(lint):
    # A checking helper other test files import: the model is whatever they built, the outputs are
    # only compared with the exported graph's, nothing is returned, shown or kept.
    source = """
        import numpy as np
        import torch
        from exportlib import export_graph, run_exported

        def validate_export(model, inputs, path="model.onnx"):
            model.eval()
            with torch.no_grad():
                export_graph(model, inputs, path)
            exported = run_exported(path, inputs)
            expected = [out.detach().numpy() for out in model(inputs)]
            for got, want in zip(exported, expected):
                np.testing.assert_allclose(got, want, rtol=1e-3)

        def check_train_and_test_forward(detector, make_inputs):
            images, targets = make_inputs(num_classes=detector.num_classes)
            losses = detector(images, targets=targets, return_loss=True)
            assert isinstance(losses, dict)
            with torch.no_grad():
                detector.eval()
                detector(images, return_loss=False)
        """
    assert lint(source, "TL006") == []


def test_evaluation_helper_that_asserts_and_reports_is_reported(lint):
    # Its assertion is a sanity check on the way: the helper's outcome is the accuracy it returns.
    findings = check(
        lint,
        """
        import torch

        def validate(model, loader):
            model.eval()
            correct = seen = 0
            for images, labels in loader:
                logits = model(images)  # expect: TL006
                assert logits.shape[0] == labels.shape[0]
                correct += (logits.argmax(1) == labels).sum().item()
                seen += labels.numel()
            return correct / seen

        def log_validation(model, loader, writer, step):
            model.eval()
            for images, labels in loader:
                logits = model(images)  # expect: TL006
                assert torch.isfinite(logits).all()
                writer.add_scalar("val/acc", (logits.argmax(1) == labels).float().mean().item(), step)
        """,
        "TL006",
    )
    assert "`model(...)` evaluates with autograd on in `validate()`" in findings[0].message
    assert "`model(...)` evaluates with autograd on in `log_validation()`" in findings[1].message


# ----- a bare `torch.set_grad_enabled(expr)` on the evaluation path ----------------------------------
_RUN_EPOCH = """
import torch

def run_epoch(split):
    SWITCH
    model.train(split == "train")
    data = train_x if split == "train" else test_x
    losses = []
    for start in range(0, len(data), 64):
        batch = data[start:start + 64]
        loss = criterion(model(batch), batch)  # MARK
        losses.append(loss.item())
        if split == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return sum(losses) / len(losses)

for epoch in range(10):
    run_epoch("train")
    run_epoch("test")
"""


def test_grad_switch_statement_decided_off_on_the_evaluation_path_is_silent(lint):
    source = _RUN_EPOCH.replace("SWITCH", 'torch.set_grad_enabled(split == "train")').replace("  # MARK", "")
    assert lint(source, "TL006") == []


def test_grad_switch_statement_the_path_cannot_decide_is_silent(lint):
    source = _RUN_EPOCH.replace("SWITCH", "torch.set_grad_enabled(keep_graphs)").replace("  # MARK", "")
    assert lint(source, "TL006") == []


def test_grad_switch_statement_left_on_for_the_evaluation_path_is_reported(lint):
    source = _RUN_EPOCH.replace("SWITCH", 'torch.set_grad_enabled(mode=split != "val")')
    findings = check(lint, source.replace("# MARK", "# expect: TL006"), "TL006")
    assert "evaluation phase of `run_epoch()` (`split='test'`" in findings[0].message


def test_grad_switch_statement_only_on_the_training_branch_leaves_evaluation_reported(lint):
    source = _RUN_EPOCH.replace("SWITCH", 'if split == "train":\n        torch.set_grad_enabled(True)')
    check(lint, source.replace("# MARK", "# expect: TL006"), "TL006")


# ----- probes on synthetic batches rearranged by a shape function ------------------------------------

_TOKEN_PROBE = """
import einops
import torch
from mixers import MlpMixer

def evaluate_tokens(checkpoint, val_loader):
    mixer = MlpMixer(depth=8)
    mixer.load_state_dict(torch.load(checkpoint))
    mixer.eval()
    images = {images}
    tokens = einops.rearrange(images, "b c h w -> b (h w) c").contiguous()
    pooled = torch.cat([torch.zeros(4, 1, 3).cuda(), tokens], dim=1)
    out = mixer(pooled){marker}
    print(out.mean(), out.shape)
"""


def test_random_batch_rearranged_into_tokens_is_a_probe(lint):
    # `einops.rearrange` and `torch.cat` only reshape and join what they are handed: a random batch.
    source = _TOKEN_PROBE.format(images="torch.randn(4, 3, 32, 32).cuda()", marker="")
    check(lint, source, "TL006")


def test_real_batch_rearranged_into_tokens_is_evaluation(lint):
    source = _TOKEN_PROBE.format(images="next(iter(val_loader))[0].cuda()", marker="  # expect: TL006")
    findings = check(lint, source, "TL006")
    assert "`mixer(...)` evaluates with autograd on in `evaluate_tokens()`" in findings[0].message
