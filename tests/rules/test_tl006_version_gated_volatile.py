"""TL006 and `Variable(x, volatile=True)`: since PyTorch 0.4 `volatile` is ignored, so an
evaluation relying on it records a graph; but in a branch that runs only on a release before 0.4
(a condition on `torch.__version__`, or a value derived from it), volatile still switched autograd
off (torchmodel.torch_versions)."""

import pytest
from expect_markers import check

_OLD_TORCH_BRANCHES = [
    ("TORCH_RELEASE = torch.__version__[:3]", "if TORCH_RELEASE == '0.3':"),
    ("TORCH_RELEASE = torch.__version__", "if TORCH_RELEASE < '0.4':"),
    ("TORCH_RELEASE = LooseVersion(torch.__version__)", "if TORCH_RELEASE < LooseVersion('0.4.0'):"),
    ("TORCH_RELEASE = version.parse(torch.__version__)", "if not TORCH_RELEASE >= version.parse('0.4'):"),
    ("TORCH_RELEASE = torch.__version__.split('+')[0]", "if TORCH_RELEASE in ('0.2', '0.3'):"),
    ("TORCH_RELEASE = torch.__version__", "if TORCH_RELEASE.startswith('0.3'):"),
]


def _segmenter(binding: str, branch: str) -> str:
    return f"""
        from distutils.version import LooseVersion

        import torch
        from packaging import version
        from torch.autograd import Variable

        {binding}

        def predict_tiles(net, tiles):
            scores = []
            for tile in tiles:
                scores.append(net(Variable(torch.from_numpy(tile), volatile=True).cuda()).cpu())  # expect: TL006
            return scores

        def main(net, loader):
            net.load_state_dict(torch.load("best.pth"))
            net.eval()
            for batch in loader:
                {branch}
                    masks = predict_tiles(net, batch)
                else:
                    with torch.no_grad():
                        masks = predict_tiles(net, batch)
                print(len(masks))

        if __name__ == "__main__":
            main(Segmenter(), tile_loader)
        """


@pytest.mark.parametrize(("binding", "branch"), _OLD_TORCH_BRANCHES)
def test_volatile_input_in_a_branch_for_old_torch_is_silent(lint, binding, branch):
    source = _segmenter(binding, branch).replace("  # expect: TL006", "")
    check(lint, source, "TL006")


@pytest.mark.parametrize(
    ("binding", "branch"),
    [
        # Not a release before 0.4: these hold on new releases too, where volatile is ignored.
        ("TORCH_RELEASE = torch.__version__[:1]", "if TORCH_RELEASE < '0.4':"),
        ("TORCH_RELEASE = torch.__version__.split('.')[0]", "if TORCH_RELEASE == '0':"),
        ("TORCH_RELEASE = torch.__version__", "if TORCH_RELEASE < '1.2':"),
        ("TORCH_RELEASE = torch.__version__", "if TORCH_RELEASE >= '0.4':"),
        ("TORCH_RELEASE = torch.__version__", "if TORCH_RELEASE != '0.3':"),
        ("TORCH_RELEASE = compute_release()", "if TORCH_RELEASE == '0.3':"),
    ],
)
def test_volatile_input_in_a_branch_that_new_torch_takes_is_reported(lint, binding, branch):
    findings = check(lint, _segmenter(binding, branch), "TL006")
    assert findings[0].line == 13
    assert "`net(...)` evaluates with autograd on in `predict_tiles()`" in findings[0].message
    assert "called at line 21 outside any no-grad block" in findings[0].message


def test_input_without_volatile_in_an_old_torch_branch_is_reported(lint):
    # Only volatile inputs kept old releases from recording: a plain input recorded then too.
    findings = check(
        lint,
        """
        import torch

        OLD_TORCH = torch.__version__ < "0.4"

        def predict(net, images):
            return net(images.cuda()).argmax(1)  # expect: TL006

        def run(net, loader):
            net.load_state_dict(torch.load("best.pth"))
            net.eval()
            for images in loader:
                if OLD_TORCH:
                    print(predict(net, images))
                else:
                    with torch.no_grad():
                        print(predict(net, images))

        if __name__ == "__main__":
            run(Classifier(), test_loader)
        """,
        "TL006",
    )
    assert "called at line 14" in findings[0].message


def test_unguarded_volatile_input_is_reported(lint):
    findings = check(
        lint,
        """
        import torch
        from torch.autograd import Variable

        def test(net, loader):
            net.eval()
            for images, labels in loader:
                images = Variable(images.cuda(), volatile=True)
                print(net(images).argmax(1).eq(labels).sum().item())  # expect: TL006
        """,
        "TL006",
    )
    assert "`net(...)` evaluates with autograd on in `test()`" in findings[0].message
