"""The Kubernetes DRA device-selector CEL environment, for matching InferenceClass devices.

``compile_selector(expression).matches(device)`` answers as a workload cluster would for the same
expression in a ResourceClaim: the same functions and types (quantities, semantic versions, the
strings, lists, regex, sets and optional libraries), the same errors, and the same cost limits.
"""

from modelplane.cel.device import Device, SemVer
from modelplane.cel.errors import CELCompileError, CELError, CELEvaluationError
from modelplane.cel.selector import Selector, compile_selector

__all__ = [
    "CELCompileError",
    "CELError",
    "CELEvaluationError",
    "Device",
    "Selector",
    "SemVer",
    "compile_selector",
]
