"""TL008 and dimensions of size 1: a view that merges a transposed dimension of size 1 never raises.

The size is followed through the data flow: ``topk(k, dim)`` leaves ``dim`` of size ``k`` (``k`` followed
into the callers, ``maxk = max(topk)`` with every call in the project passing a ``topk`` whose largest
value is 1), ``argmax(dim, keepdim=True)`` leaves ``dim`` of size 1. A caller passing ``topk=(1, 5)``, or
a helper nobody in the project calls (an API: anyone may pass anything), keeps the finding."""

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL008"

_METRICS = """\
import torch


def precision_at_k(logits, labels, topk=(1,)):
    maxk = max(topk)
    _, ranked = logits.topk(maxk, 1, True, True)
    ranked = ranked.t()
    hits = ranked.eq(labels.view(1, -1).expand_as(ranked))
    return [hits[:k].view(-1).float().sum(0) * (100.0 / labels.size(0)) for k in topk]
"""

_TRAIN = """\
import torch
from speaker.metrics import precision_at_k


def run_epoch(model, loader, optimizer):
    for feats, labels in loader:
        logits = model(feats)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(CALL)
"""


def _project(call: str) -> dict[str, str]:
    return {
        "speaker/__init__.py": "",
        "speaker/metrics.py": _METRICS,
        "train.py": _TRAIN.replace("CALL", call),
    }


# ----- positives ------------------------------------------------------------------------------------


def test_a_caller_asking_for_top5_makes_the_view_raise(tmp_path):
    findings = lint_in_project(
        tmp_path, _project("precision_at_k(logits, labels, topk=(1, 5))"), "speaker/metrics.py", CODE
    )
    assert [f.line for f in findings] == [9]
    assert "merges dimensions 0 and 1 of `ranked.t()`" in findings[0].message


def test_a_helper_no_file_of_the_project_calls_is_an_api_and_stays_reported(tmp_path):
    findings = lint_in_project(tmp_path, _project("loss.item()"), "speaker/metrics.py", CODE)
    assert [f.line for f in findings] == [9]


def test_topk_of_a_size_the_code_does_not_show_is_reported(lint):
    check(
        lint,
        """
        import torch

        def hit_rate(scores, targets, k):
            _, idx = scores.topk(k, dim=1)
            idx = idx.t()
            hits = idx.eq(targets.unsqueeze(0).expand_as(idx))
            return hits[:k].view(-1).float().mean()  # expect: TL008

        def report(model, batch):
            scores = model(batch["x"])
            return hit_rate(scores, batch["y"], 5)
        """,
        CODE,
    )


def test_argmax_without_keepdim_tells_nothing_and_the_transpose_still_raises(lint):
    check(
        lint,
        """
        import torch

        def pixel_accuracy(logits, labels):
            scores = torch.softmax(logits, dim=1)
            best = scores.max(dim=1)[1]
            flipped = best.transpose(1, 2)
            return flipped.eq(labels.transpose(1, 2)).view(-1).float().mean()  # expect: TL008
        """,
        CODE,
    )


# ----- hard negatives --------------------------------------------------------------------------------


def test_every_caller_leaving_topk_at_its_default_makes_the_transposed_dimension_size_one(tmp_path):
    assert lint_in_project(tmp_path, _project("precision_at_k(logits, labels)"), "speaker/metrics.py", CODE) == []


def test_every_caller_passing_top1_only(tmp_path):
    files = _project("precision_at_k(logits.detach(), labels, topk=(1,))")
    assert lint_in_project(tmp_path, files, "speaker/metrics.py", CODE) == []


def test_an_int_topk_wrapped_in_a_tuple_by_the_helper(tmp_path):
    helper = """\
    import torch


    def seg_accuracy(pred, target, topk=1):
        if isinstance(topk, int):
            topk = (topk,)
        maxk = max(topk)
        _, label = pred.topk(maxk, dim=1)
        label = label.t()
        correct = label.eq(target.view(1, -1).expand_as(label))
        return [correct[:k].view(-1).float().sum(0) for k in topk]


    def head_loss(cls_score, labels):
        return torch.nn.functional.cross_entropy(cls_score, labels), seg_accuracy(cls_score, labels)
    """
    assert lint_in_project(tmp_path, {"seg/__init__.py": "", "seg/acc.py": helper}, "seg/acc.py", CODE) == []


def test_a_literal_top1(lint):
    assert (
        lint(
            """
            import torch

            def top1(cs, label):
                _, pred = cs.topk(1, 1, True, True)
                pred = pred.t()
                correct = pred.eq(label.view(1, -1).expand_as(pred))
                return correct[:1].view(-1).float().sum(0, keepdim=True)
            """,
            CODE,
        )
        == []
    )


def test_argmax_keepdim_then_transpose_of_a_tensor_of_any_rank(lint):
    assert (
        lint(
            """
            import torch

            def mask_accuracy(seg_logits, target):
                pred_label = seg_logits.argmax(dim=1, keepdim=True)
                pred_label = pred_label.transpose(0, 1)
                correct = pred_label.eq(target.unsqueeze(0).expand_as(pred_label))
                return correct[:1].view(-1).float().sum(0) * 100.0 / target.numel()
            """,
            CODE,
        )
        == []
    )
