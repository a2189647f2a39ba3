"""Where the e2e tier's tools are: what ``tools/e2e/tools.sh`` prints (and builds when missing)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "e2e" / "tools.sh"
CROSSPLANE_CLI_SCRIPT = REPO / "tools" / "crossplane.sh"


@dataclass(frozen=True)
class Tools:
    """The binaries and CRD directories of one pinned tool set."""

    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    etcd: Path
    core: Path
    core_crds: Path
    provider_kubernetes: Path
    provider_kubernetes_crds: Path
    registry: Path
    kwok: Path
    kueue: Path
    kueue_config: Path
    keda_operator: Path
    keda_adapter: Path
    keda_crds: Path
    prometheus: Path
    crossplane_cli: Path

    def build_seconds(self) -> dict[str, int]:
        """How long each cached tool took to build (recorded by tools.sh), by tool directory."""
        out: dict[str, int] = {}
        for binary in (
            self.kube_apiserver,
            self.core,
            self.provider_kubernetes,
            self.registry,
            self.kwok,
            self.kueue,
            self.keda_adapter,
            self.prometheus.parents[1],
        ):
            for record in sorted(binary.parent.glob("build-seconds*")):
                what = record.name.removeprefix("build-seconds").lstrip("-")
                out[f"{binary.parent.name} {what}".strip()] = int(record.read_text().strip())
        return out


def install() -> Tools:
    """Run tools.sh (a no-op when everything is cached) and the CLI's script; return the paths."""
    done = subprocess.run([str(SCRIPT)], capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        msg = f"{SCRIPT} failed ({done.returncode}):\n{done.stderr[-4000:]}"
        raise RuntimeError(msg)
    paths = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    cli = subprocess.run([str(CROSSPLANE_CLI_SCRIPT)], capture_output=True, text=True, check=False, timeout=3600)
    if cli.returncode != 0:
        msg = f"{CROSSPLANE_CLI_SCRIPT} failed ({cli.returncode}):\n{cli.stderr[-4000:]}"
        raise RuntimeError(msg)
    return Tools(
        kube_apiserver=Path(paths["kube-apiserver"]),
        kube_controller_manager=Path(paths["kube-controller-manager"]),
        kube_scheduler=Path(paths["kube-scheduler"]),
        kubectl=Path(paths["kubectl"]),
        etcd=Path(paths["etcd"]),
        core=Path(paths["core"]),
        core_crds=Path(paths["core-crds"]),
        provider_kubernetes=Path(paths["provider-kubernetes"]),
        provider_kubernetes_crds=Path(paths["provider-kubernetes-crds"]),
        registry=Path(paths["registry"]),
        kwok=Path(paths["kwok"]),
        kueue=Path(paths["kueue"]),
        kueue_config=Path(paths["kueue-src"]),
        keda_operator=Path(paths["keda-operator"]),
        keda_adapter=Path(paths["keda-adapter"]),
        keda_crds=Path(paths["keda-crds"]),
        prometheus=Path(paths["prometheus"]),
        crossplane_cli=Path(cli.stdout.strip().splitlines()[-1]),
    )
