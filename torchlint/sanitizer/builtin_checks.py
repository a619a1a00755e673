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
from .constant_loss import ConstantLossCheck
from .ddp_gradients import DDPGradientCheck
from .devices import DeviceCheck
from .dtypes import DtypeCheck
from .inplace import InplaceCheck
from .loss_inputs import LossInputCheck
from .loss_scale import LossScaleCheck
from .nonfinite import NonfiniteCheck
from .notices import CompiledNotice
from .sampler_epochs import SamplerEpochCheck
from .training import TrainingChecks
from .validation_mode import ValidationModeCheck

BUILTIN_CHECKS: tuple[type[Check], ...] = (
    CompiledNotice,
    AnomalyCheck,
    DeviceCheck,
    DtypeCheck,
    NonfiniteCheck,
    InplaceCheck,
    TrainingChecks,
    LossScaleCheck,
    # Silent training bugs (TS115-TS118) and distributed runs (TS119-TS120).
    ValidationModeCheck,
    LossInputCheck,
    ConstantLossCheck,
    SamplerEpochCheck,
    DDPGradientCheck,
)
