#!/usr/bin/env bash
# Build, once, the tools the end-to-end tier runs, into a cache outside the
# repository, and say where they are:
#
#   tools/e2e/tools.sh              build what is missing; print NAME=PATH lines
#   tools/e2e/tools.sh path NAME    build NAME if missing; print its path
#
# NAME is one of: kube-apiserver kube-controller-manager kube-scheduler kubectl
# etcd core core-crds provider-kubernetes provider-kubernetes-crds registry kwok
# kueue kueue-src keda-operator keda-adapter keda-crds prometheus.
# `core` is the Crossplane core binary (also what `crossplane render
# --crossplane-binary` takes); `core-crds` is the directory of Crossplane's own
# CRDs (CRDS_PATH of `crossplane core init`); `kubectl` is the client of the same
# release as the API server (a distribution's kubectl may be more than one minor
# version off).
# kube-scheduler is built apart from the other Kubernetes commands (its own
# marker) so a cache holding those is not rebuilt; kwok simulates nodes and pod
# lifecycle (the kubelet of the tier's GPU nodes); kueue is Kueue's manager and
# `kueue-src` its module source (the webhook manifests the tier registers);
# keda-operator and keda-adapter are KEDA's operator and metrics API server
# (built with the prometheus, cpu and memory scalers only: keda-overlay.sh),
# keda-crds the CRDs of the same release; prometheus is Debian's package unpacked
# into the cache (apt-get download + dpkg-deb -x: nothing installed system-wide).
#
# Versions are pinned in tools/e2e/versions.env. Idempotent: a tool whose
# binary is in place is not rebuilt; binaries are moved into place only once
# built, so an interrupted build leaves nothing a later run would take for an
# installed tool. Concurrent runs on one cache build each tool once: a lock per
# tool, so a run that needs one tool (`make test` needs the core) waits for that
# build only. Go builds use private GOCACHE/GOMODCACHE directories that are
# removed at the end (together they grow to several GB). etcd comes from the
# distribution (apt-get install etcd-server) when it is not on PATH.
#
# Environment:
#   MODELPLANE_TOOLS_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/modelplane/tools)
#   GO                    the go binary (default: go on PATH)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"

tools_dir="${MODELPLANE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/modelplane/tools}"
go_bin="${GO:-go}"

kubernetes_dir="${tools_dir}/kubernetes-${KUBERNETES_VERSION}"
core_dir="${tools_dir}/crossplane-core-${CROSSPLANE_CORE_VERSION}"
provider_dir="${tools_dir}/provider-kubernetes-${PROVIDER_KUBERNETES_VERSION}"
registry_dir="${tools_dir}/registry-${REGISTRY_VERSION}"
kwok_dir="${tools_dir}/kwok-${KWOK_VERSION}"
kueue_dir="${tools_dir}/kueue-${KUEUE_VERSION}"
# KEDA's build is its release trimmed by keda-overlay.sh and its stand-ins: another trim is another build.
keda_dir="${tools_dir}/keda-${KEDA_VERSION}-$(find "${here}/keda-overlay.sh" "${here}/keda" -type f -print0 |
  LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -c1-12)"
prometheus_dir="${tools_dir}/prometheus"

readonly names=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd core core-crds provider-kubernetes provider-kubernetes-crds registry kwok kueue kueue-src keda-operator keda-adapter keda-crds prometheus)
readonly kubernetes_commands=(kube-apiserver kube-controller-manager kubectl)

log() { echo "e2e-tools: $*" >&2; }

path_of() {
  case "$1" in
    kube-apiserver) echo "${kubernetes_dir}/kube-apiserver" ;;
    kube-controller-manager) echo "${kubernetes_dir}/kube-controller-manager" ;;
    kube-scheduler) echo "${kubernetes_dir}/kube-scheduler" ;;
    kubectl) echo "${kubernetes_dir}/kubectl" ;;
    kwok) echo "${kwok_dir}/kwok" ;;
    kueue) echo "${kueue_dir}/kueue" ;;
    kueue-src) echo "${kueue_dir}/config" ;;
    keda-operator) echo "${keda_dir}/keda" ;;
    keda-adapter) echo "${keda_dir}/keda-adapter" ;;
    keda-crds) echo "${keda_dir}/crds" ;;
    prometheus) echo "${prometheus_dir}/usr/bin/prometheus" ;;
    etcd) command -v etcd || echo /usr/bin/etcd ;;
    core) echo "${core_dir}/crossplane" ;;
    core-crds) echo "${core_dir}/crds" ;;
    provider-kubernetes) echo "${provider_dir}/provider" ;;
    provider-kubernetes-crds) echo "${provider_dir}/crds" ;;
    registry) echo "${registry_dir}/registry" ;;
    *) log "unknown tool '$1' (one of: ${names[*]})"; return 2 ;;
  esac
}

# The binary whose presence means the tool (and what comes with it) is installed.
marker_of() {
  case "$1" in
    kube-apiserver | kube-controller-manager) echo "${kubernetes_dir}/kube-controller-manager" ;;
    core | core-crds) echo "${core_dir}/crossplane" ;;
    kueue | kueue-src) echo "${kueue_dir}/kueue" ;;
    keda-operator | keda-adapter | keda-crds) echo "${keda_dir}/keda-adapter" ;;
    provider-kubernetes | provider-kubernetes-crds) echo "${provider_dir}/provider" ;;
    *) path_of "$1" ;;
  esac
}

installed() { [[ -x "$(marker_of "$1")" ]]; }

scratch=""
cleanup() {
  if [[ -n "${scratch}" && -d "${scratch}" ]]; then
    # The module cache is read-only by design; make it removable first.
    chmod -R u+w "${scratch}" 2>/dev/null || true
    rm -rf "${scratch}"
  fi
}
trap cleanup EXIT

# One private Go environment per run, shared by the builds of that run.
go_env() {
  if [[ -z "${scratch}" ]]; then
    if ! command -v "${go_bin}" >/dev/null 2>&1; then
      log "the Go toolchain ('${go_bin}') is not on PATH; install Go >= 1.25 to build the e2e tools"
      exit 127
    fi
    scratch="$(mktemp -d "${tools_dir}/.build.XXXXXX")"
    mkdir -p "${scratch}/cache" "${scratch}/mod" "${scratch}/gopath"
  fi
  export GOCACHE="${scratch}/cache" GOMODCACHE="${scratch}/mod" GOPATH="${scratch}/gopath"
  # Every binary is linked with -s -w (no DWARF): the compiler need not write DWARF either.
  export GOFLAGS="-buildvcs=false -gcflags=all=-dwarf=false" GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0
}

# Print the field (Dir or GoMod) of `go mod download -json module@version`.
module_field() {
  (cd "${scratch}" && "${go_bin}" mod download -json "$1@$2") |
    sed -n "s/^[[:space:]]*\"$3\": \"\(.*\)\",\{0,1\}$/\1/p"
}

go_directive() { sed -n 's/^go \([0-9.]*\).*/\1/p' "$1" | head -n1; }

# build_kubernetes COMMAND...: build k8s.io/kubernetes/cmd/COMMAND for each, in one go build.
build_kubernetes() {
  go_env
  local start=${SECONDS} gomod wrapper staging cmd
  local packages=()
  for cmd in "$@"; do packages+=("k8s.io/kubernetes/cmd/${cmd}"); done
  gomod="$(module_field k8s.io/kubernetes "${KUBERNETES_VERSION}" GoMod)"
  [[ -f "${gomod}" ]] || { log "could not download k8s.io/kubernetes@${KUBERNETES_VERSION}"; exit 1; }
  # k8s.io/kubernetes replaces its staging modules with ./staging/src/...,
  # which a module download does not have: require each of them (they appear
  # as v0.0.0 requirements) at the staging release instead.
  staging="$(awk '/=> \.\/staging\// { print $1 }' "${gomod}" | sort -u |
    while read -r m; do
      if grep -Eq "^[[:space:]]*${m//./\\.} v0\.0\.0" "${gomod}"; then echo "${m}"; fi
    done)"
  if [[ -z "${staging}" ]]; then
    log "found no staging modules to replace in k8s.io/kubernetes@${KUBERNETES_VERSION}'s go.mod"
    exit 1
  fi
  wrapper="${scratch}/kubernetes"
  mkdir -p "${wrapper}"
  {
    echo "module modelplane.local/e2e/kubernetes"
    echo
    echo "go $(go_directive "${gomod}")"
    echo
    echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
    echo
    echo "replace ("
    while read -r m; do echo "	${m} => ${m} ${KUBERNETES_STAGING_VERSION}"; done <<<"${staging}"
    echo ")"
  } >"${wrapper}/go.mod"
  local minor="${KUBERNETES_VERSION#v1.}"
  minor="${minor%%.*}"
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean"
  done
  log "building $* ${KUBERNETES_VERSION} (the API server alone takes ~8 min on 2 cores)"
  mkdir -p "${wrapper}/bin"
  (cd "${wrapper}" && GOFLAGS="${GOFLAGS} -mod=mod" "${go_bin}" build -trimpath -ldflags "${ldflags}" \
    -o bin/ "${packages[@]}") >&2
  mkdir -p "${kubernetes_dir}"
  # The controller-manager last: its presence marks the server binaries as installed.
  for cmd in kube-scheduler kube-apiserver kubectl kube-controller-manager; do
    if [[ -f "${wrapper}/bin/${cmd}" ]]; then mv "${wrapper}/bin/${cmd}" "${kubernetes_dir}/${cmd}"; fi
  done
  echo $((SECONDS - start)) >"${kubernetes_dir}/build-seconds-$(IFS=-; echo "$*")"
  log "built $* ${KUBERNETES_VERSION} in $((SECONDS - start))s"
}

build_core() {
  go_env
  local start=${SECONDS} src wrapper
  src="$(module_field github.com/crossplane/crossplane/v2 "${CROSSPLANE_CORE_VERSION}" Dir)"
  [[ -d "${src}/cluster/crds" ]] || { log "could not download crossplane/v2@${CROSSPLANE_CORE_VERSION}"; exit 1; }
  # The core module replaces its apis/v2 module with ./apis; take the
  # published apis/v2 module at the same version instead.
  wrapper="${scratch}/crossplane"
  mkdir -p "${wrapper}"
  cat >"${wrapper}/go.mod" <<EOF
module modelplane.local/e2e/crossplane

go $(go_directive "${src}/go.mod")

require github.com/crossplane/crossplane/v2 ${CROSSPLANE_CORE_VERSION}

replace github.com/crossplane/crossplane/apis/v2 => github.com/crossplane/crossplane/apis/v2 ${CROSSPLANE_CORE_VERSION}
EOF
  local ldflags="-s -w"
  ldflags+=" -X github.com/crossplane/crossplane/v2/internal/version.version=${CROSSPLANE_CORE_VERSION}"
  ldflags+=" -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${CROSSPLANE_CORE_VERSION}"
  log "building Crossplane core ${CROSSPLANE_CORE_VERSION} (~3 min on 2 cores)"
  (cd "${wrapper}" && GOFLAGS="${GOFLAGS} -mod=mod" "${go_bin}" build -trimpath -ldflags "${ldflags}" \
    -o crossplane github.com/crossplane/crossplane/v2/cmd/crossplane) >&2
  mkdir -p "${core_dir}"
  rm -rf "${core_dir}/crds"
  cp -r "${src}/cluster/crds" "${core_dir}/crds"
  chmod -R u+w "${core_dir}/crds"
  mv "${wrapper}/crossplane" "${core_dir}/crossplane"
  echo $((SECONDS - start)) >"${core_dir}/build-seconds"
  log "built Crossplane core ${CROSSPLANE_CORE_VERSION} in $((SECONDS - start))s"
}

build_provider() {
  go_env
  local start=${SECONDS} module=github.com/crossplane-contrib/provider-kubernetes src
  src="$(module_field "${module}" "${PROVIDER_KUBERNETES_VERSION}" Dir)"
  [[ -d "${src}/package/crds" ]] || { log "could not download ${module}@${PROVIDER_KUBERNETES_VERSION}"; exit 1; }
  log "building provider-kubernetes ${PROVIDER_KUBERNETES_VERSION} (~2 min on 2 cores)"
  GOBIN="${scratch}/bin" "${go_bin}" install -trimpath -ldflags "-s -w" \
    "${module}/cmd/provider@${PROVIDER_KUBERNETES_VERSION}" >&2
  mkdir -p "${provider_dir}"
  rm -rf "${provider_dir}/crds"
  cp -r "${src}/package/crds" "${provider_dir}/crds"
  chmod -R u+w "${provider_dir}/crds"
  mv "${scratch}/bin/provider" "${provider_dir}/provider"
  echo $((SECONDS - start)) >"${provider_dir}/build-seconds"
  log "built provider-kubernetes ${PROVIDER_KUBERNETES_VERSION} in $((SECONDS - start))s"
}

build_registry() {
  go_env
  local start=${SECONDS} src="${here}/registry" pinned
  # Our own main (tools/e2e/registry) around go-containerregistry's in-memory
  # registry: upstream's cmd/registry listens on every interface.
  pinned="$(sed -n 's|^require github.com/google/go-containerregistry \(v[^ ]*\)$|\1|p' "${src}/go.mod")"
  if [[ "${pinned}" != "${REGISTRY_VERSION}" ]]; then
    log "tools/e2e/registry/go.mod requires go-containerregistry ${pinned}, versions.env says ${REGISTRY_VERSION}"
    exit 1
  fi
  log "building the in-memory OCI registry (go-containerregistry ${REGISTRY_VERSION})"
  (cd "${src}" && GOFLAGS="${GOFLAGS} -mod=readonly" "${go_bin}" build -trimpath -ldflags "-s -w" \
    -o "${scratch}/registry" .) >&2
  mkdir -p "${registry_dir}"
  mv "${scratch}/registry" "${registry_dir}/registry"
  echo $((SECONDS - start)) >"${registry_dir}/build-seconds"
  log "built the registry in $((SECONDS - start))s"
}

# build_go_command MODULE VERSION PACKAGE DIR NAME: `go install` PACKAGE of
# MODULE@VERSION (a module without replace directives) into DIR/NAME.
build_go_command() {
  go_env
  local start=${SECONDS} module="$1" version="$2" package="$3" dir="$4" name="$5" src
  src="$(module_field "${module}" "${version}" Dir)"
  [[ -d "${src}" ]] || { log "could not download ${module}@${version}"; exit 1; }
  log "building ${name} ${version} (~10 min on 2 shared cores)"
  GOBIN="${scratch}/bin" "${go_bin}" install -trimpath -ldflags "-s -w" "${package}@${version}" >&2
  mkdir -p "${dir}"
  mv "${scratch}/bin/$(basename "${package}")" "${dir}/${name}"
  echo $((SECONDS - start)) >"${dir}/build-seconds"
  log "built ${name} ${version} in $((SECONDS - start))s"
}

build_kueue() {
  go_env
  local src
  src="$(module_field sigs.k8s.io/kueue "${KUEUE_VERSION}" Dir)"
  [[ -f "${src}/config/components/webhook/manifests.yaml" ]] || { log "could not download kueue@${KUEUE_VERSION}"; exit 1; }
  # The webhook manifests (which paths serve which kinds) come with the binary.
  mkdir -p "${kueue_dir}"
  rm -rf "${kueue_dir}/config"
  mkdir -p "${kueue_dir}/config"
  cp "${src}/config/components/webhook/manifests.yaml" "${kueue_dir}/config/webhook-manifests.yaml"
  chmod -R u+w "${kueue_dir}/config"
  build_go_command sigs.k8s.io/kueue "${KUEUE_VERSION}" sigs.k8s.io/kueue/cmd/kueue "${kueue_dir}" kueue
}

# KEDA's operator and metrics API server, with only the scalers the tier uses
# (prometheus, cpu, memory): tools/e2e/keda-overlay.sh writes a `go build
# -overlay` that hides the other scalers, secret providers and event sinks, so
# their cloud and database SDKs are neither downloaded nor compiled (~1,550
# packages instead of ~3,700; a cold build measured 11 CPU-minutes instead of
# 31, peak memory 1.3 GB instead of 2.9). Go takes no overlay of files in the module
# cache, so KEDA builds from a copy of its module, as the main module (its own
# go.mod, go.sum and replace directives), both commands in one go build.
build_keda() {
  go_env
  local start=${SECONDS} module=github.com/kedacore/keda/v2 src work overlay
  src="$(module_field "${module}" "${KEDA_VERSION}" Dir)"
  [[ -d "${src}/config/crd/bases" ]] || { log "could not download ${module}@${KEDA_VERSION}"; exit 1; }
  work="${scratch}/keda"
  rm -rf "${work}"
  cp -r "${src}" "${work}"
  chmod -R u+w "${work}"
  overlay="$("${here}/keda-overlay.sh" "${work}" "${scratch}/keda-overlay")"
  local ldflags="-s -w -X ${module}/version.Version=${KEDA_VERSION#v}"
  log "building KEDA ${KEDA_VERSION} operator and metrics API server, prometheus/cpu/memory scalers only (~6 min on 2 idle cores)"
  mkdir -p "${work}/bin"
  (cd "${work}" && GOFLAGS="${GOFLAGS} -mod=readonly" "${go_bin}" build -overlay "${overlay}" -trimpath \
    -ldflags "${ldflags}" -o bin/ ./cmd/operator ./cmd/adapter) >&2
  mkdir -p "${keda_dir}"
  rm -rf "${keda_dir}/crds"
  cp -r "${src}/config/crd/bases" "${keda_dir}/crds"
  chmod -R u+w "${keda_dir}/crds"
  mv "${work}/bin/operator" "${keda_dir}/keda"
  # The adapter last: its presence marks KEDA as installed.
  mv "${work}/bin/adapter" "${keda_dir}/keda-adapter"
  echo $((SECONDS - start)) >"${keda_dir}/build-seconds"
  log "built KEDA ${KEDA_VERSION} in $((SECONDS - start))s"
}

# Debian's prometheus package, unpacked (not installed) into the cache: the
# tier runs its own server with its own configuration, never a system service.
install_prometheus() {
  local start=${SECONDS} deb version
  if ! command -v apt-get >/dev/null 2>&1; then
    log "there is no apt-get to fetch ${PROMETHEUS_PACKAGE}: unpack Prometheus >= ${PROMETHEUS_MIN_VERSION} into ${prometheus_dir}"
    exit 127
  fi
  mkdir -p "${tools_dir}"
  local download
  download="$(mktemp -d "${tools_dir}/.prometheus.XXXXXX")"
  # apt drops root to _apt for the download when it can reach the directory.
  chmod 755 "${download}"
  # `apt-get download` writes into the working directory and needs no root;
  # its package lists may be missing on a fresh machine: update them only then.
  if ! (cd "${download}" && apt-get download -qq "${PROMETHEUS_PACKAGE}") >&2; then
    log "apt-get download ${PROMETHEUS_PACKAGE} failed; updating the package lists and retrying"
    local sudo=""
    [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
    ${sudo} apt-get update -qq >&2
    (cd "${download}" && apt-get download -qq "${PROMETHEUS_PACKAGE}") >&2
  fi
  deb="$(ls "${download}"/*.deb)"
  rm -rf "${download}/root"
  dpkg-deb -x "${deb}" "${download}/root"
  version="$("${download}/root/usr/bin/prometheus" --version 2>&1 | sed -n 's/^prometheus, version \([0-9]*\.[0-9]*\).*/\1/p')"
  if [[ "$(printf '%s\n%s\n' "${PROMETHEUS_MIN_VERSION}" "${version}" | sort -V | head -n1)" != "${PROMETHEUS_MIN_VERSION}" ]]; then
    log "${PROMETHEUS_PACKAGE} ${version} is older than ${PROMETHEUS_MIN_VERSION}"
    rm -rf "${download}"
    exit 1
  fi
  rm -rf "${prometheus_dir}"
  mv "${download}/root" "${prometheus_dir}"
  rm -rf "${download}"
  echo $((SECONDS - start)) >"${prometheus_dir}/build-seconds"
  log "unpacked ${PROMETHEUS_PACKAGE} ${version} in $((SECONDS - start))s"
}

install_etcd() {
  if ! command -v etcd >/dev/null 2>&1; then
    if ! command -v apt-get >/dev/null 2>&1; then
      log "etcd is not on PATH and there is no apt-get: install etcd >= ${ETCD_MIN_VERSION}"
      exit 127
    fi
    log "installing etcd (${ETCD_PACKAGE}) with apt-get"
    local sudo=""
    [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
    ${sudo} apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive ${sudo} apt-get install -y -qq "${ETCD_PACKAGE}" >&2
    # Debian's package starts a system etcd on the default ports; the e2e
    # tier runs its own on other ports, so leave that one be.
  fi
  local version
  version="$(etcd --version | sed -n 's/^etcd Version: \([0-9]*\.[0-9]*\).*/\1/p')"
  if [[ "$(printf '%s\n%s\n' "${ETCD_MIN_VERSION}" "${version}" | sort -V | head -n1)" != "${ETCD_MIN_VERSION}" ]]; then
    log "etcd ${version} is older than ${ETCD_MIN_VERSION}"
    exit 1
  fi
}

ensure() {
  installed "$1" && return 0
  case "$1" in
    kube-scheduler) build_kubernetes kube-scheduler ;;
    kwok) build_go_command sigs.k8s.io/kwok "${KWOK_VERSION}" sigs.k8s.io/kwok/cmd/kwok "${kwok_dir}" kwok ;;
    kueue | kueue-src) build_kueue ;;
    keda-operator | keda-adapter | keda-crds) build_keda ;;
    prometheus) install_prometheus ;;
    kube-apiserver | kube-controller-manager | kubectl)
      local missing=() cmd
      for cmd in "${kubernetes_commands[@]}"; do installed "${cmd}" || missing+=("${cmd}"); done
      # In one build with the scheduler when that is missing too (they share most packages).
      installed kube-scheduler || missing+=(kube-scheduler)
      build_kubernetes "${missing[@]}"
      ;;
    core | core-crds) build_core ;;
    provider-kubernetes | provider-kubernetes-crds) build_provider ;;
    registry) build_registry ;;
    etcd) install_etcd ;;
  esac
}

# ensure NAME under a lock of NAME's directory: concurrent runs on one cache (two test
# sessions, or CI's background build and `make test`) build each tool once, and a run
# that needs one tool waits for that build only, not for every build another run queued.
locked_ensure() {
  local marker group
  marker="$(marker_of "$1")"
  group="${marker#"${tools_dir}/"}"
  [[ "${group}" != "${marker}" ]] || group="$1"
  mkdir -p "${tools_dir}"
  exec 9>"${tools_dir}/.e2e-tools-${group%%/*}.lock"
  flock 9
  ensure "$1"
  exec 9>&-
}

case "${1:-install}" in
  path)
    [[ $# -eq 2 ]] || { log "usage: $0 path NAME"; exit 2; }
    path_of "$2" >/dev/null
    installed "$2" || locked_ensure "$2"
    path_of "$2"
    ;;
  install)
    missing=()
    # Quick ones first, and core before the long Kubernetes build (others wait on it).
    for name in etcd prometheus core provider-kubernetes registry kube-apiserver kubectl kwok kube-scheduler kueue keda-adapter; do
      installed "${name}" || missing+=("${name}")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
      start=${SECONDS}
      for name in "${missing[@]}"; do locked_ensure "${name}"; done
      log "cold build of ${missing[*]}: $((SECONDS - start))s"
    fi
    for name in "${names[@]}"; do echo "${name}=$(path_of "${name}")"; done
    ;;
  *)
    log "usage: $0 [install] | $0 path NAME"
    exit 2
    ;;
esac
