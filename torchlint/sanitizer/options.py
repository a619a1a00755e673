"""Per-session options of the sanitizer (see :func:`torchlint.sanitizer.core.sanitize`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

_ACTIONS = ("warn", "raise", "record")
_INPLACE_MODES = ("auto", "always", "never")
_ANOMALY_MODES = ("auto", "full", False)


# ---------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------
@dataclass
class SanitizerOptions:
    """Per-session options; see :func:`sanitize` for their meaning."""

    anomaly: str | bool = "auto"
    check_nan: bool = True
    devices: bool = True
    dtypes: bool = True
    nonfinite: bool = True
    inplace: str = "auto"
    action: str = "warn"
    summary: bool = True
    report: str | os.PathLike | None = None
    # Training-step checks TS106-TS112 (torchlint/sanitizer/training.py).
    training_checks: bool = True
    update_window: int = 3
    grad_explosion_factor: float = 1e3
    stall_backwards: int = 20
    # Device types treated like CUDA: they switch inplace="auto" on, and their
    # non-finite checks are batched on the device (one host sync per step).
    accelerator_devices: tuple[str, ...] = ("cuda", "xpu", "mps")
    # Distributed runs: how long the gathering rank waits for the others' reports.
    gather_timeout: float = 30.0
    # Options declared by plug-in checks (Check.option_defaults).
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.anomaly is True:  # the old boolean spelling: torch's anomaly mode on every step
            self.anomaly = "full"
        elif self.anomaly is None:
            self.anomaly = False
        if self.anomaly not in _ANOMALY_MODES:
            raise ValueError(f"sanitize(anomaly={self.anomaly!r}): expected 'auto', 'full' or False")
        if self.action not in _ACTIONS:
            raise ValueError(f"sanitize(action={self.action!r}): expected one of {', '.join(_ACTIONS)}")
        if self.inplace not in _INPLACE_MODES:
            raise ValueError(f"sanitize(inplace={self.inplace!r}): expected one of {', '.join(_INPLACE_MODES)}")
        if isinstance(self.accelerator_devices, str):
            self.accelerator_devices = (self.accelerator_devices,)
        self.accelerator_devices = tuple(self.accelerator_devices)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are not dataclass fields: plug-in options.
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(f"no sanitizer option named {name!r}")

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "extra"}
        data.update(self.extra)
        return data
