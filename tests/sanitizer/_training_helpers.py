"""Helpers shared by the training-check tests (TS106-TS112)."""

import pytest
import torch

import torchlint


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: threads only add contention on a loaded 2-core runner."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def sanitized(train, **options):
    """Run ``train()`` under the sanitizer (anomaly off, findings only recorded) and return the report."""
    options = {"anomaly": False, "action": "record", "summary": False, **options}
    with torchlint.sanitize(**options) as report:
        train()
    return report
