"""The built-in checks, in the order a session installs them.

Each check module imports only the plug-in interface (:mod:`.check`) and
helpers, never :mod:`.core`, so that the core and its checks form no import
cycle (``tests/sanitizer/test_sanitizer_imports.py`` keeps it so).  A new
built-in check goes into this list; third-party checks use
:func:`torchlint.sanitizer.register_check`.
"""

from __future__ import annotations

from .anomaly import AnomalyCheck
from .check import Check
from .devices import DeviceCheck
from .dtypes import DtypeCheck
from .inplace import InplaceCheck
from .loss_scale import LossScaleCheck
from .nonfinite import NonfiniteCheck
from .notices import CompiledNotice
from .training import TrainingChecks

BUILTIN_CHECKS: tuple[type[Check], ...] = (
    CompiledNotice,
    AnomalyCheck,
    DeviceCheck,
    DtypeCheck,
    NonfiniteCheck,
    InplaceCheck,
    TrainingChecks,
    LossScaleCheck,
)
