"""The production device matcher: the DRA CEL environment of ``modelplane.cel``."""

from __future__ import annotations

from modelplane.cel import CELError, Device, SemVer, compile_selector
from modelplane.scheduling.devices import ClassDevice, DeviceVersion, SelectorError


def cel_device(device: ClassDevice) -> Device:
    """The device kind as the CEL environment sees it (bare keys in the driver's domain)."""
    attributes = {k: SemVer(v.text) if isinstance(v, DeviceVersion) else v for k, v in device.attributes.items()}
    return Device(driver=device.driver, attributes=attributes, capacity=dict(device.capacity))


def match_cel(expression: str, device: ClassDevice) -> bool:
    """Evaluate a DRA device-selector expression against a device kind, as a workload cluster would.

    Compiling is cached per expression by ``modelplane.cel``.

    Raises:
        SelectorError: The expression does not compile, or fails on this device.
    """
    try:
        return compile_selector(expression).matches(cel_device(device))
    except CELError as error:
        raise SelectorError(expression, error.reason) from error
