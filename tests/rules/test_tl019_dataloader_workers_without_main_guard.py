"""TL019 dataloader-workers-without-main-guard: worker processes started by import-time code."""

from expect_markers import check

CODE = "TL019"


# ----- positives ------------------------------------------------------------------------------


def test_module_level_loop_over_loader(lint):
    findings = check(
        lint,
        """
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)  # expect: TL019
        for epoch in range(10):
            for x, y in loader:
                step(x, y)
        """,
        CODE,
    )
    message = findings[0].message
    assert "num_workers=4" in message and '`if __name__ == "__main__":`' in message and "spawn" in message
    assert findings[0].severity == "warning" and findings[0].name == "dataloader-workers-without-main-guard"


def test_argparse_default_and_int_cast_like_dcgan(lint):
    check(
        lint,
        """
        import argparse
        import torch.utils.data
        parser = argparse.ArgumentParser()
        parser.add_argument("--workers", type=int, default=2, help="data loading workers")
        opt = parser.parse_args()
        dataloader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True,  # expect: TL019
                                                 num_workers=int(opt.workers))
        for epoch in range(25):
            for i, data in enumerate(dataloader, 0):
                netD.zero_grad()
        """,
        CODE,
    )


def test_loader_iterated_in_function_called_at_module_level(lint):
    check(
        lint,
        """
        from torch.utils.data import DataLoader
        NUM_WORKERS = 8
        training_data_loader = DataLoader(dataset=train_set, num_workers=NUM_WORKERS, shuffle=True)  # expect: TL019
        def train(epoch):
            for batch in training_data_loader:
                optimize(batch)
        for epoch in range(1, 10):
            train(epoch)
        """,
        CODE,
    )


def test_kwargs_dict_and_cpu_count(lint):
    check(
        lint,
        """
        import os
        import torch
        kwargs = {"num_workers": 1, "pin_memory": True} if torch.cuda.is_available() else {}
        a = torch.utils.data.DataLoader(train_set, batch_size=32, **kwargs)  # expect: TL019
        b = torch.utils.data.DataLoader(test_set, num_workers=os.cpu_count())  # expect: TL019
        fit(model, a, b)
        """,
        CODE,
    )


def test_inline_loader_in_for_and_next_iter(lint):
    check(
        lint,
        """
        from torch.utils import data
        first = next(iter(data.DataLoader(ds, num_workers=2)))  # expect: TL019
        for batch in data.DataLoader(ds, num_workers=2):  # expect: TL019
            print(batch)
        """,
        CODE,
    )


def test_unguarded_main_call(lint):
    check(
        lint,
        """
        import torch
        def train(model, loader):
            for x, y in loader:
                model(x)
        def main():
            model = Net()
            loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=4)  # expect: TL019
            train(model, loader)
        main()
        """,
        CODE,
    )


def test_else_of_main_guard_runs_on_import(lint):
    check(
        lint,
        """
        from torch.utils.data import DataLoader
        if __name__ == "__main__":
            pass
        else:
            loader = DataLoader(ds, num_workers=2)  # expect: TL019
            for b in loader:
                pass
        """,
        CODE,
    )


def test_code_a_name_guard_leaves_to_the_workers_is_reported(lint):
    # A spawn worker re-imports the script as `__mp_main__`: `!= "__main__"` is true there, the else
    # of a disabled guard runs, and a guard for `"__mp_main__"` itself runs.
    check(
        lint,
        """
        from torch.utils.data import DataLoader
        if __name__ != "__main__":
            for batch in DataLoader(train_set, batch_size=32, num_workers=4):  # expect: TL019
                warm_up(batch)
        if __name__ == "__scratch__":
            pass
        else:
            val_loader = DataLoader(val_set, batch_size=64, num_workers=2)  # expect: TL019
            for batch in val_loader:
                evaluate(batch)
        if __name__ in ("__main__", "__mp_main__"):
            for batch in DataLoader(test_set, num_workers=2):  # expect: TL019
                evaluate(batch)
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_under_main_guard(lint):
    assert not lint(
        """
        from torch.utils.data import DataLoader
        if __name__ == "__main__":
            loader = DataLoader(ds, num_workers=4)
            for b in loader:
                train(b)
        """,
        CODE,
    )


def test_built_at_module_level_but_iterated_under_guard_like_vae(lint):
    assert not lint(
        """
        import torch
        kwargs = {"num_workers": 1, "pin_memory": True}
        train_loader = torch.utils.data.DataLoader(train_set, batch_size=128, shuffle=True, **kwargs)
        def train(epoch):
            for data, _ in train_loader:
                step(data)
        if __name__ == "__main__":
            for epoch in range(10):
                train(epoch)
        """,
        CODE,
    )


def test_zero_workers_or_main_process_loading(lint):
    assert not lint(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, batch_size=8, num_workers=0)
        other = DataLoader(ds, batch_size=8)
        for b in loader:
            pass
        for b in other:
            pass
        """,
        CODE,
    )


def test_inside_functions_called_under_guard(lint):
    assert not lint(
        """
        from torch.utils.data import DataLoader
        def main(workers):
            loader = DataLoader(ds, num_workers=workers)
            for b in loader:
                pass
        def make_loader():
            return DataLoader(ds, num_workers=4)
        def train():
            loader = make_loader()
            for b in DataLoader(ds, num_workers=4):
                pass
        if __name__ == "__main__":
            main(4)
            train()
        """,
        CODE,
    )


def test_only_length_is_read_at_import(lint):
    assert not lint(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=4)
        print(len(loader), loader.batch_size)
        """,
        CODE,
    )


def test_function_parameter_shadows_global_loader(lint):
    assert not lint(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=4)
        def summarize(loader):
            for b in loader:
                print(b)
        summarize([1, 2, 3])
        """,
        CODE,
    )


def test_unknown_worker_count(lint):
    assert not lint(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=config["workers"])
        for b in loader:
            pass
        """,
        CODE,
    )


def test_pytest_module_is_not_the_main_script(lint):
    assert not lint(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=2)
        batches = [b for b in loader]
        """,
        CODE,
        path="tests/test_data.py",
    )


def test_code_no_worker_reaches_under_any_name_guard(lint):
    # Neither a disabled guard (`"__main2__"`), nor the else of `!=`, nor `not in` the worker's name,
    # nor a guard combined with a flag runs when a spawn worker re-imports the script.
    assert not lint(
        """
        from torch.utils.data import DataLoader
        if __name__ == '__main2__':
            loader = DataLoader(train_set, batch_size=4, shuffle=True, num_workers=2)
            for i, (v, q, a) in enumerate(loader):
                print(i, v.shape)
        if __name__ != "__main__":
            pass
        else:
            for batch in DataLoader(val_set, num_workers=4):
                evaluate(batch)
        if __name__ not in {"__mp_main__"} and DEBUG:
            for batch in DataLoader(test_set, num_workers=4):
                evaluate(batch)
        if not __name__ != "__main__":
            for batch in DataLoader(test_set, num_workers=4):
                evaluate(batch)
        """,
        CODE,
    )


# ----- miss: loaders built by a helper and iterated by a function that module-level code calls ---


def test_loaders_returned_by_a_helper_and_iterated_by_an_unguarded_call(lint):
    check(
        lint,
        """
        import torch
        from torch.utils.data import DataLoader

        def get_loaders(train_set, val_set, workers=4):
            train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=workers)  # expect: TL019
            val_loader = DataLoader(val_set, batch_size=256, num_workers=workers)
            return train_loader, val_loader

        def train(model, train_set, val_set, epochs=10):
            train_loader, val_loader = get_loaders(train_set, val_set)
            print(len(val_loader))
            for epoch in range(epochs):
                for x, y in train_loader:
                    model(x)

        train(model, train_set, val_set)
        """,
        "TL019",
    )


def test_loaders_returned_by_a_helper_under_the_main_guard_or_with_no_workers(lint):
    assert (
        lint(
            """
        from torch.utils.data import DataLoader

        def get_loader(dataset, workers=4):
            return DataLoader(dataset, batch_size=64, shuffle=True, num_workers=workers)

        def train(model, dataset, workers):
            for x, y in get_loader(dataset, workers):
                model(x)

        def main():
            train(model, dataset, workers=8)

        preview = get_loader(dataset, workers=0)
        for x, y in preview:
            print(x.shape)
            break

        if __name__ == "__main__":
            main()
        """,
            "TL019",
        )
        == []
    )


# ----- family: notebook cells are not scripts ------------------------------------------------------

_CELLS = """
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    device = "cuda" if torch.cuda.is_available() else "cpu"
    device

    train_data = datasets.ImageFolder("data/train", transform=transforms.ToTensor())
    train_data.classes

    train_dataloader = DataLoader(train_data, batch_size=32, shuffle=True, num_workers=4)
    img, label = next(iter(train_dataloader))
    img.shape, label.shape
    """


def test_notebook_cells_exported_to_a_script_are_not_given_script_advice(lint):
    assert lint(_CELLS, CODE) == []


def test_notebook_file_is_not_given_script_advice(lint):
    assert lint(_CELLS, CODE, path="04_custom_datasets.ipynb") == []


def test_same_cells_without_display_expressions_run_as_a_script(lint):
    source = "\n".join(line for line in _CELLS.splitlines() if line.strip() not in ("device", "train_data.classes"))
    source = source.replace("img.shape, label.shape", "print(img.shape, label.shape)")
    source = source.replace("num_workers=4)", "num_workers=4)  # expect: TL019")
    check(lint, source, CODE)


def test_notebook_magics_left_as_comments_mark_notebook_code(lint):
    source = """
        # %matplotlib inline
        # !pip install -q torchinfo
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(dataset, batch_size=32, num_workers=2)
        for x, y in loader:
            print(x.shape)
            break
        """
    assert lint(source, CODE) == []


def test_a_stray_comma_after_a_call_does_not_make_a_script_a_notebook(lint):
    check(
        lint,
        """
        #!/usr/bin/env python
        import argparse
        from torch.utils.data import DataLoader

        parser = argparse.ArgumentParser()
        parser.add_argument("--workers", type=int, default=4),
        args = parser.parse_args()
        loader = DataLoader(dataset, batch_size=32, num_workers=args.workers)  # expect: TL019
        for x, y in loader:
            print(x.shape)
        """,
        CODE,
    )


def test_shell_escapes_spaced_as_exporters_write_them_mark_notebook_code(lint):
    # jupytext and similar exporters write a `!pip` cell as `# ! pip install ...`.
    source = """
        # ! pip install ftfy regex
        # ! pip install git+https://example.org/vision-tools.git

        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(dataset, batch_size=64, num_workers=8)
        for images, labels in loader:
            features = encoder(images)
        """
    assert lint(source, CODE) == []


def test_ordinary_comments_about_pip_leave_a_script_reported(lint):
    source = """
        #!python3
        # Install the extras first: pip install ftfy regex
        # ! Note: the loader below needs the dataset unpacked under data/
        # !!! slow on laptops
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(dataset, batch_size=64, num_workers=8)  # expect: TL019
        for images, labels in loader:
            features = encoder(images)
        """
    check(lint, source, CODE)
    (finding,) = lint(source, CODE)
    assert finding.line == 9
    assert "`DataLoader(..., num_workers=8)` is iterated at import time" in finding.message


# ----- branches ruled out by the file's constants (heldout23, a YOLO LMDB training script) -------------

_EVALUATE_OR_TRAIN = """
    import torch
    from torch.utils.data import DataLoader

    test_loader = DataLoader(test_set, batch_size=64, num_workers=8)  # expect: TL019

    def train(epoch):
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=8){train_mark}
        for x, y in train_loader:
            step(x, y)

    def test(epoch):
        for x, y in test_loader:
            score(x, y)

    evaluate = {flag}
    if evaluate:
        test(0)
    else:
        for epoch in range(10):
            train(epoch)
            test(epoch)
    """


def test_loader_of_a_branch_a_constant_rules_out_is_silent(lint):
    # `evaluate = True`, bound once and never rebound: `train()` never runs on import.
    check(lint, _EVALUATE_OR_TRAIN.format(flag="True", train_mark=""), CODE)


def test_loader_of_the_branch_the_constant_takes_is_reported(lint):
    check(lint, _EVALUATE_OR_TRAIN.format(flag="False", train_mark="  # expect: TL019"), CODE)


def test_loader_of_a_branch_on_a_rebound_flag_is_reported(lint):
    # Rebound from the command line: either branch may run.
    source = _EVALUATE_OR_TRAIN.format(flag="True", train_mark="  # expect: TL019").replace(
        "    if evaluate:", "    evaluate = len(sys.argv) > 1 and sys.argv[1] == 'eval'\n    if evaluate:"
    )
    check(lint, source, CODE)
