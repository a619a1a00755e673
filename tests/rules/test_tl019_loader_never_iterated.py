"""TL019 and a loader that is built but never iterated: building a `DataLoader` starts no worker, so one
whose name is rebound before any iteration reaches it (a tutorial showing the options of one loader, then
building the next) cannot re-run the script in a spawned worker. The use must be reached by that binding
(data flow), not just follow it in the file."""

from expect_markers import check

CODE = "TL019"


def test_loader_rebound_before_any_iteration_is_silent(lint):
    check(
        lint,
        """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        dataset = TensorDataset(torch.randn(100, 4), torch.arange(100))

        def seed_worker(worker_id):
            torch.manual_seed(torch.initial_seed() % 2**32)

        # Reproducible data loading
        loader = DataLoader(
            dataset,
            batch_size=16,
            num_workers=2,
            worker_init_fn=seed_worker,
        )

        batches = [batch[1].tolist() for batch in DataLoader(dataset, batch_size=16)]
        print(len(batches))

        loader = DataLoader(dataset, batch_size=32)
        for features, labels in loader:
            print(features.shape)
        """,
        CODE,
    )


def test_loader_iterated_before_rebinding_or_on_one_branch_is_reported(lint):
    check(
        lint,
        """
        import sys
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        dataset = TensorDataset(torch.randn(100, 4), torch.arange(100))

        loader = DataLoader(dataset, batch_size=32, num_workers=2)  # expect: TL019
        for features, labels in loader:
            print(features.shape)

        loader = DataLoader(dataset, batch_size=32, num_workers=4)  # expect: TL019
        if len(sys.argv) > 1:
            loader = DataLoader(dataset, batch_size=8)
        for features, labels in loader:
            print(features.shape)
        """,
        CODE,
    )
