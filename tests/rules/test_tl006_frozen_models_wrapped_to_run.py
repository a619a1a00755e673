"""TL006: a model frozen whole, then loaded and wrapped in a module that runs its very parameters
(``nn.DataParallel(model)``) before an evaluation helper runs it."""

from expect_markers import check

CODE = "TL006"

_SCRIPT = """
    import torch
    import torch.nn as nn
    from detection.models import ClipDetector


    def run_test(detector, loader):
        detector.eval()
        results = []
        for clips, _ in loader:
            scores, boxes = detector(clips.cuda())  {marker}
            results.append((scores.cpu(), boxes.cpu()))
        return results


    def main(args, loader):
        detector = ClipDetector(depth=args.depth)
        for _, weight in detector.named_parameters():
            weight.requires_grad = False
        checkpoint = torch.load(args.checkpoint, map_location="cpu")
        detector.load_state_dict(checkpoint["model"])
        if args.cuda:
            detector = detector.cuda()
            detector = {wrap}
        {after}
        return run_test(detector, loader)
"""


def _script(marker="", wrap="nn.parallel.DataParallel(detector, device_ids=args.gpus)", after="pass"):
    return _SCRIPT.format(marker=marker, wrap=wrap, after=after)


def test_frozen_model_wrapped_in_data_parallel_is_silent(lint):
    check(lint, _script(), CODE)


def test_frozen_model_compiled_is_silent(lint):
    check(lint, _script(wrap="torch.compile(detector)"), CODE)


def test_frozen_model_unfrozen_through_the_wrapper_is_reported(lint):
    findings = check(lint, _script(marker="# expect: TL006", after="detector.module.head.requires_grad_(True)"), CODE)
    assert findings[0].message.startswith("`detector(...)` evaluates with autograd on in `run_test()`")


def test_wrapper_around_another_model_is_reported(lint):
    check(lint, _script(marker="# expect: TL006", wrap="nn.DataParallel(ClipDetector(depth=args.depth))"), CODE)
