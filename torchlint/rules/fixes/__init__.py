"""The fixes of the rules, one module per rule (or group of rules sharing a fix), kept apart from
detection so that a rule's check and its fix can change independently. Importing this package
(the rules package does) registers every fix."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
