"""TL019 and scripts that run only on Linux: module-level code that unconditionally uses the Ascend NPU
stack (``import torch_npu``, ``torch.npu.set_device``), the ``"hccl"`` backend, or the ``"fork"``
start method runs where workers are forked and never re-import the script. A device offered as an
option, or an import that may fail quietly, keeps the finding."""

from expect_markers import check

CODE = "TL019"

_TRAINING = """
        dataset = datasets.ImageFolder(args.data, transform=transforms.ToTensor())
        loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=8)LOADER_MARK
        model = models.resnet18().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(args.epochs):
            for images, labels in loader:
                loss = torch.nn.functional.cross_entropy(model(images.to(device)), labels.to(device))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""

_HEADER = """
        import argparse
        import torch
        from torch.utils.data import DataLoader
        from torchvision import datasets, models, transforms

        parser = argparse.ArgumentParser()
        parser.add_argument("--data", default="/data/imagenet")
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--epochs", type=int, default=90)
        parser.add_argument("--device-id", type=int, default=0)
        args = parser.parse_args()
"""


def _script(setup: str, reported: bool) -> str:
    mark = "  # expect: TL019" if reported else ""
    return _HEADER + setup + _TRAINING.replace("LOADER_MARK", mark)


# ----- positives ------------------------------------------------------------------------------------


def test_an_npu_offered_as_an_option_leaves_the_script_portable(lint):
    setup = """
        if args.device_id >= 0 and hasattr(torch, "npu"):
            import torch_npu
            device = torch.device(f"npu:{args.device_id}")
        else:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""
    findings = check(lint, _script(setup, reported=True), CODE)
    assert 'outside `if __name__ == "__main__":`' in findings[0].message


def test_an_npu_import_that_may_fail_quietly(lint):
    setup = """
        try:
            import torch_npu
        except ImportError:
            torch_npu = None
        device = torch.device("cuda")
"""
    check(lint, _script(setup, reported=True), CODE)


def test_the_spawn_start_method_set_explicitly(lint):
    setup = """
        torch.multiprocessing.set_start_method("spawn", force=True)
        device = torch.device("cuda")
"""
    check(lint, _script(setup, reported=True), CODE)


def test_nccl_backend_is_no_platform_marker(lint):
    setup = """
        torch.distributed.init_process_group("nccl")
        device = torch.device("cuda")
"""
    check(lint, _script(setup, reported=True), CODE)


# ----- hard negatives --------------------------------------------------------------------------------


def test_an_npu_device_set_at_import(lint):
    setup = """
        device = torch.device(f"npu:{args.device_id}")
        torch.npu.set_device(device)
"""
    assert lint(_script(setup, reported=False), CODE) == []


def test_the_npu_plugin_imported_unconditionally(lint):
    setup = """
        import torch_npu
        from torch_npu.contrib import transfer_to_npu
        device = "npu"
"""
    assert lint(_script(setup, reported=False), CODE) == []


def test_an_npu_query_in_a_module_level_test(lint):
    setup = """
        import torch.npu
        if torch.npu.current_device() != args.device_id:
            torch.npu.set_device(f"npu:{args.device_id}")
        device = f"npu:{args.device_id}"
"""
    assert lint(_script(setup, reported=False), CODE) == []


def test_an_hccl_process_group(lint):
    setup = """
        torch.distributed.init_process_group(backend="hccl", world_size=8, rank=args.device_id)
        device = args.device_id
"""
    assert lint(_script(setup, reported=False), CODE) == []


def test_the_fork_start_method(lint):
    setup = """
        import multiprocessing
        multiprocessing.set_start_method("fork")
        device = torch.device("cuda")
"""
    assert lint(_script(setup, reported=False), CODE) == []


def test_a_loader_with_a_fork_context(lint):
    source = _script('\n        device = torch.device("cuda")\n', reported=False).replace(
        "num_workers=8)", 'num_workers=8, multiprocessing_context="fork")'
    )
    assert lint(source, CODE) == []
