"""Review an InferenceClass: what is wrong with it, and what its accelerator is.

The XRD's schema and CEL rules refuse most of these at admission; the review
repeats them because a render, an older API server or a changed XRD can let a
class through, and a scheduler must never trust a class it has not checked.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from modelplane.cel.k8s import SemverError, parse_semver
from modelplane.pricing import class_price
from modelplane.problems import Problem
from modelplane_models.inference_class import Device, Provisioning, Spec

_PROVIDER_BLOCKS = {"GKE": "gke", "EKS": "eks", "AKS": "aks"}


@dataclass(frozen=True)
class Accelerator:
    """The device a class's pools are counted in: its first device with claim DRA."""

    device: str
    driver: str
    count_per_node: int
    memory: str | None
    product_name: str | None


@dataclass(frozen=True)
class ClassReview:
    """The outcome of reviewing one class."""

    problems: tuple[Problem, ...]
    accelerator: Accelerator | None
    summary: str


def _device_problems(index: int, device: Device) -> list[Problem]:
    at = f"spec.devices[{index}]"
    problems = []
    claim = device.claim or "DRA"
    if claim == "DRA" and not device.deviceClassName:
        problems.append(Problem(f"{at}.deviceClassName", "required when claim is DRA"))
    if claim == "Synthetic" and device.deviceClassName:
        problems.append(Problem(f"{at}.deviceClassName", "not allowed when claim is Synthetic"))
    for key, value in sorted((device.attributes or {}).items()):
        set_fields = [f for f in ("string", "int_", "bool_", "version") if getattr(value, f) is not None]
        if len(set_fields) != 1:
            problems.append(Problem(f"{at}.attributes.{key}", "must set exactly one of string, int, bool or version"))
        if value.version is not None:
            try:
                parse_semver(value.version)
            except SemverError:
                problems.append(
                    Problem(f"{at}.attributes.{key}.version", f"{value.version!r} is not a semantic version like 9.0.0")
                )
    return problems


def _provisioning_problems(provisioning: Provisioning, devices: list[Device]) -> list[Problem]:
    problems = []
    for provider, block in _PROVIDER_BLOCKS.items():
        present = getattr(provisioning, block) is not None
        if provider == provisioning.provider and not present:
            problems.append(Problem(f"spec.provisioning.{block}", f"required when provisioning.provider is {provider}"))
        if provider != provisioning.provider and present:
            problems.append(
                Problem(
                    f"spec.provisioning.{block}", f"not allowed when provisioning.provider is {provisioning.provider}"
                )
            )
    gke = provisioning.gke
    if gke is not None and not any((d.claim or "DRA") == "DRA" and d.count == gke.accelerator.count for d in devices):
        problems.append(
            Problem(
                "spec.provisioning.gke.accelerator.count",
                f"{gke.accelerator.count} GPUs per node matches no DRA device's count in spec.devices",
            )
        )
    return problems


def _describe_device(device: Device) -> str:
    details = []
    attributes = device.attributes or {}
    if "productName" in attributes and attributes["productName"].string:
        details.append(attributes["productName"].string)
    memory = (device.capacity or {}).get("memory")
    if memory is not None:
        details.append(str(memory.value.root))
    if (device.claim or "DRA") == "Synthetic":
        details.append("Synthetic")
    suffix = f" ({', '.join(details)})" if details else ""
    return f"{device.count}x {device.driver}{suffix}"


def review_class(spec: Spec) -> ClassReview:
    """Check a class's spec and find its accelerator.

    Args:
        spec: The InferenceClass's spec, as parsed by its generated model.

    Returns:
        The problems found (empty when the class is valid), the accelerator
        and a one-line summary of one node's devices.
    """
    problems: list[Problem] = []
    names = Counter(d.name for d in spec.devices)
    problems += [
        Problem("spec.devices", f"device name {n!r} is used {c} times") for n, c in sorted(names.items()) if c > 1
    ]
    for index, device in enumerate(spec.devices):
        problems += _device_problems(index, device)
    dra = [d for d in spec.devices if (d.claim or "DRA") == "DRA"]
    if not dra:
        problems.append(Problem("spec.devices", "at least one device must have claim DRA (the accelerator)"))
    if spec.provisioning is not None:
        problems += _provisioning_problems(spec.provisioning, spec.devices)
    cost = spec.cost
    price = class_price(cost.perGPUHour if cost else None, cost.currency if cost else None, spec.powerWatts)
    if price.problem is not None:
        problems.append(price.problem)
    accelerator = None
    if dra:
        first = dra[0]
        memory = (first.capacity or {}).get("memory")
        product = (first.attributes or {}).get("productName")
        accelerator = Accelerator(
            device=first.name,
            driver=first.driver,
            count_per_node=first.count,
            memory=str(memory.value.root) if memory is not None else None,
            product_name=product.string if product is not None else None,
        )
    summary = " + ".join(_describe_device(d) for d in spec.devices)
    return ClassReview(problems=tuple(problems), accelerator=accelerator, summary=summary)
