"""Whether a cache's size fits its storage class on a cluster, as a table: which class, and what is not known."""

from __future__ import annotations

import pytest

from modelplane.modelcache.storage import StorageClass, size_exceeds
from modelplane.modelcache.work import CacheWork, Source, SourceKind, StorageType

_CLASSES = (
    StorageClass("standard", "1Ti", default=True),
    StorageClass("fast-ssd", "2Ti"),
    StorageClass("filestore", "1.5T"),
)


def _work(size: str, storage_class: str = "", storage: StorageType = StorageType.PVC) -> CacheWork:
    source = Source(SourceKind.HUGGING_FACE, "org/model")
    return CacheWork("llama", "ml", source, size, 0, storage=storage, storage_class=storage_class)


@pytest.mark.parametrize(
    ("work", "classes", "want"),
    [
        pytest.param(_work("2Ti", "fast-ssd"), _CLASSES, None, id="fits-exactly-the-named-class"),
        pytest.param(_work("1536Gi"), _CLASSES[1:], None, id="no-default-listed-unknown"),
        pytest.param(_work("900Gi"), _CLASSES, None, id="fits-the-default"),
        pytest.param(_work("3Ti", "premium"), _CLASSES, None, id="class-not-listed-unknown"),
        pytest.param(_work("3Ti", "fast-ssd"), (), None, id="nothing-listed-unknown"),
        pytest.param(
            _work("3Ti", "fast-ssd"),
            _CLASSES,
            "spec.size: 3Ti exceeds the 2Ti that storage class fast-ssd on InferenceCluster lab can provision "
            "(spec.storageClasses[fast-ssd].maxSize)",
            id="exceeds-the-named-class",
        ),
        pytest.param(
            _work("1025Gi"),
            _CLASSES,
            "spec.size: 1025Gi exceeds the 1Ti that storage class standard (the default: "
            "spec.storage.pvc.storageClassName is unset) on InferenceCluster lab can provision "
            "(spec.storageClasses[standard].maxSize)",
            id="exceeds-the-default-class",
        ),
        pytest.param(
            _work("1.4Ti", "filestore"),
            _CLASSES,
            "spec.size: 1.4Ti exceeds the 1.5T",
            id="binary-against-decimal-exceeds",
        ),
        pytest.param(_work("1.3Ti", "filestore"), _CLASSES, None, id="binary-against-decimal-fits"),
        pytest.param(_work("3Ti", storage=StorageType.NODE_LOCAL), _CLASSES, None, id="node-local-not-checked"),
        pytest.param(
            _work("3Ti"),
            (StorageClass("a", "1Ti", default=True), StorageClass("b", "1Ti", default=True)),
            None,
            id="two-defaults-past-admission-unknown",
        ),
        pytest.param(_work("3Ti"), (StorageClass("a", "lots", default=True),), None, id="limit-not-a-quantity"),
        pytest.param(_work("3Ti"), (StorageClass("a", "0", default=True),), None, id="limit-zero-past-admission"),
        pytest.param(_work("huge"), _CLASSES, None, id="size-not-a-quantity"),
    ],
)
def test_size_exceeds(work: CacheWork, classes: tuple[StorageClass, ...], want: str | None) -> None:
    got = size_exceeds(work, "lab", classes)
    if want is None or got is None:
        assert got == want
    else:
        assert got.startswith(want)
