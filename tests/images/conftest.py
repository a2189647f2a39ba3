"""Session fixtures: the images and packages, built once by the project's own scripts.

``tools/images.sh`` needs root (debootstrap, chroot) and running an image
needs overlayfs and mount namespaces: without them these tests skip, except
in CI, where that is a failure (tests/images/host.py).
"""

from __future__ import annotations

import pytest

from tests.conformance.cli import require_binary
from tests.images import host


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> host.Built:
    host.require()
    binary = require_binary()
    tmp = tmp_path_factory.mktemp("images")
    images, packages = tmp / "images", tmp / "packages"
    host.run_script("tools/images.sh", str(images))
    host.run_script("tools/package.sh", str(packages), env={"IMAGES": str(images), "CROSSPLANE": str(binary)})
    return host.Built(images=images, packages=packages, layers=tmp / "layers")
