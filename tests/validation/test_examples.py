"""Every example manifest is one the API server accepts.

Modelplane kinds are validated against their XRD (schema and CEL), any other
kind against its CRD in the shared CRDs or, for built-in kinds, the Kubernetes
OpenAPI document. A kind with no schema is a failure.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import xrds

from modelplane import kinds

_DOCUMENTS = [
    pytest.param(path, doc, id=f"{path.relative_to(xrds.EXAMPLES_DIR)}#{i}")
    for path, i, doc in xrds.iter_example_documents()
]


def _group(path: Path) -> str:
    """The example set a file belongs to: the first directory under examples/, or a scenario's step directory."""
    parts = path.relative_to(xrds.EXAMPLES_DIR).parts
    step = next((i for i, part in enumerate(parts) if part.startswith("step-")), None)
    return "/".join(parts[: step + 1]) if step is not None else parts[0]


def _of_kind(kind: str) -> list[tuple[Path, dict[str, Any]]]:
    return [
        (path, doc)
        for path, _, doc in xrds.iter_example_documents()
        if doc.get("apiVersion") == kinds.API_VERSION and doc.get("kind") == kind
    ]


def test_there_are_examples() -> None:
    assert _DOCUMENTS, "no YAML documents under examples/"


@pytest.mark.parametrize(("path", "doc"), _DOCUMENTS)
def test_example_validates(path: Path, doc: Any) -> None:
    result = xrds.validate(doc)
    assert result.errors == (), f"{path}: {list(result.errors)}"


@pytest.mark.parametrize(
    "group", [pytest.param(g, id=g) for g in sorted({_group(p) for p, _, _ in xrds.iter_example_documents()})]
)
def test_example_names_are_unique_within_a_set(group: str) -> None:
    keys = Counter(
        (doc.get("apiVersion"), doc.get("kind"), doc.get("metadata", {}).get("namespace"), doc["metadata"]["name"])
        for path, _, doc in xrds.iter_example_documents()
        if _group(path) == group
    )
    assert [k for k, n in keys.items() if n > 1] == []


_POOLS = [
    pytest.param(path, cluster, pool, id=f"{cluster['metadata']['name']}/{pool['name']}")
    for path, cluster in _of_kind("InferenceCluster")
    for pool in cluster["spec"].get("nodePools", [])
]


@pytest.mark.parametrize(("path", "cluster", "pool"), _POOLS)
def test_example_pool_class_exists_and_fits_the_cluster_source(
    path: Path, cluster: dict[str, Any], pool: dict[str, Any]
) -> None:
    classes = {
        doc["metadata"]["name"]: doc
        for class_path, doc in _of_kind("InferenceClass")
        if _group(class_path) == _group(path)
    }
    assert pool["className"] in classes, f"{path}: no InferenceClass {pool['className']} in its example set"
    provisioning = classes[pool["className"]]["spec"].get("provisioning")
    source = cluster["spec"]["cluster"]["source"]
    if source == "Existing":
        assert provisioning is None, f"{path}: a bring-your-own pool uses a class with provisioning"
    else:
        assert provisioning is not None, f"{path}: a {source} pool uses a class without provisioning"
        assert provisioning["provider"] == source
