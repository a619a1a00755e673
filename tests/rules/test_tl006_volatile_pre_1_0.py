"""TL006 and `Variable(x, volatile=True)` in code written for PyTorch before 1.0: a file that reads a
scalar's `.data[0]` (or whose project pins such a release) runs either on a release before 0.4,
where a volatile input switched graph building off, or on one where its own `.data[0]` raises, so
its evaluation on volatile inputs records no graph (torchmodel.torch_versions.volatile_in_old_code).
Without such evidence `volatile` is a no-op and the evaluation is reported."""

import textwrap

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL006"

_TRAIN_2017 = """
    def train(epoch):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            if args.cuda:
                data, target = data.cuda(), target.cuda()
            data, target = Variable(data), Variable(target)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                print("Train Epoch: {} Loss: {:.6f}".format(epoch, {reading}))
"""

_TEST = """
    def test():
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in test_loader:
            if args.cuda:
                data, target = data.cuda(), target.cuda()
            data, target = Variable(data{volatile}), Variable(target)
            output = model(data)  {marker}
            test_loss += F.nll_loss(output, target, size_average=False).item()
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).long().cpu().sum()
        print("Test loss: {:.4f}, correct: {}".format(test_loss / len(test_loader.dataset), correct))


    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test()
"""


def _script(reading: str, volatile: str, marker: str) -> str:
    header = """
    import torch
    import torch.nn.functional as F
    from torch.autograd import Variable

    import torch.optim as optim
    from torchvision import datasets, transforms

    from options import args
    from models import Net

    kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}
    train_loader = torch.utils.data.DataLoader(
        datasets.MNIST("../data", train=True, download=True, transform=transforms.ToTensor()),
        batch_size=args.batch_size, shuffle=True, **kwargs)
    test_loader = torch.utils.data.DataLoader(
        datasets.MNIST("../data", train=False, transform=transforms.ToTensor()),
        batch_size=args.test_batch_size, shuffle=True, **kwargs)

    model = Net()
    if args.cuda:
        model.cuda()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    """
    return (
        header
        + _TRAIN_2017.replace("{reading}", reading)
        + _TEST.replace("{volatile}", volatile).replace("{marker}", marker)
    )


def test_volatile_inputs_in_a_file_reading_loss_data_0_are_silent(lint):
    # `loss.data[0]` after `loss.backward()`: written for PyTorch < 1.0, where `volatile=True` held.
    check(lint, _script("loss.data[0]", ", volatile=True", ""), CODE)


def test_volatile_inputs_without_evidence_of_an_old_release_are_reported(lint):
    # `loss.item()` runs on any release since 0.4, where `volatile` is ignored: a graph is recorded.
    check(lint, _script("loss.item()", ", volatile=True", "# expect: TL006"), CODE)


def test_plain_variable_inputs_in_an_old_file_are_reported(lint):
    # Old code, but the evaluation's input is not volatile: even on 0.3 it records a graph.
    check(lint, _script("loss.data[0]", "", "# expect: TL006"), CODE)


def test_volatile_input_moved_to_the_gpu_in_an_old_detector_script_is_silent(lint):
    check(
        lint,
        """
        import torch
        from torch.autograd import Variable


        def train(net, criterion, optimizer, loader):
            net.train()
            for images, targets in loader:
                images = Variable(images.cuda())
                targets = [Variable(t.cuda(), volatile=True) for t in targets]
                loss_l, loss_c = criterion(net(images), targets)
                loss = loss_l + loss_c
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                print("loc %.4f conf %.4f" % (loss_l.data[0], loss_c.data[0]), loss.data[0])


        def test_net(net, dataset, cuda):
            net.eval()
            all_boxes = []
            for i in range(len(dataset)):
                im, _ = dataset[i]
                x = Variable(im.unsqueeze(0), volatile=True)
                if cuda:
                    x = x.cuda()
                detections = net(x).data
                all_boxes.append(detections.cpu().numpy())
            return all_boxes


        def main(net, criterion, optimizer, train_loader, testset):
            net.load_state_dict(torch.load("weights/ssd300.pth"))
            for epoch in range(100):
                train(net, criterion, optimizer, train_loader)
                test_net(net, testset, cuda=True)
        """,
        CODE,
    )


def test_volatile_inputs_in_a_project_pinned_before_1_0_are_silent(tmp_path):
    # No `.data[0]` in the file, but the project's requirements pin PyTorch 0.3.
    script = textwrap.dedent(_script("loss.item()", ", volatile=True", ""))
    files = {"main.py": script, "requirements.txt": "torch==0.3.1\ntorchvision==0.2.0\n"}
    assert lint_in_project(tmp_path, files, "main.py", CODE) == []


def test_volatile_inputs_in_a_project_pinned_to_a_current_release_are_reported(tmp_path):
    script = textwrap.dedent(_script("loss.item()", ", volatile=True", ""))
    files = {"main.py": script, "requirements.txt": "torch>=1.8\n"}
    assert len(lint_in_project(tmp_path, files, "main.py", CODE)) == 1
