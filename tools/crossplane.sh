#!/usr/bin/env bash
# Build the pinned Crossplane CLI (v2.5.0) with the Go toolchain into a cache
# directory outside the repository, and print the binary's path as the last
# line on stdout:
#
#   CROSSPLANE=$(tools/crossplane.sh)
#   CROSSPLANE_ENGINE=$(tools/crossplane.sh engine)
#
# Idempotent: when the binary is already there it only prints the path.
#
# `engine` prints the render engine instead: `crossplane render` of this CLI
# runs Crossplane's XR reconciler from a Crossplane core binary
# (`crossplane render --crossplane-binary=PATH`, no Docker). That is core
# v2.4.0, built once by tools/e2e/tools.sh (the end-to-end tier runs the same
# binary), which this delegates to.
#
# Where the source comes from: the CLI lives in its own module
# (github.com/crossplane/cli/v2, main package cmd/crossplane), which the Go
# module proxy this project reaches refuses. Its release source is kept next
# to the repository, in ../shared/src/crossplane-cli-v2.5.0.tar.gz (tag v2.5.0,
# commit 1acb525095a4e43c9a765954efa66a47667a432b); its dependencies all come
# from the proxy, pinned by the release's own go.sum.
#
# Environment:
#   MODELPLANE_TOOLS_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/modelplane/tools)
#   MODELPLANE_SHARED_SRC directory holding the source tarball
#                         (default: ../shared/src next to the repository)
#   GO                    the go binary (default: go on PATH)
set -euo pipefail

readonly version="v2.5.0"
readonly tarball_name="crossplane-cli-${version}.tar.gz"
# The SHA-256 of the tarball pins the source as go.sum pins its dependencies.
readonly tarball_sha256="2c5f208e1394d6172432b4a65a82a62943da1e8a376d00af86707d51f106fd39"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

case "${1:-cli}" in
  cli) ;;
  engine) exec "${repo_root}/tools/e2e/tools.sh" path core ;;
  *)
    echo "usage: $0 [cli | engine]" >&2
    exit 2
    ;;
esac
tools_dir="${MODELPLANE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/modelplane/tools}"
install_dir="${tools_dir}/crossplane-cli-${version}"
binary="${install_dir}/crossplane"

if [[ -x "${binary}" ]]; then
  echo "${binary}"
  exit 0
fi

src_dir="${MODELPLANE_SHARED_SRC:-${repo_root}/../shared/src}"
tarball="${src_dir}/${tarball_name}"
if [[ ! -f "${tarball}" ]]; then
  echo "crossplane.sh: ${tarball} is missing; the Crossplane CLI ${version} builds from that source tarball (set MODELPLANE_SHARED_SRC to the directory holding ${tarball_name})" >&2
  exit 1
fi
actual_sha256="$(sha256sum "${tarball}" | cut -d' ' -f1)"
if [[ "${actual_sha256}" != "${tarball_sha256}" ]]; then
  echo "crossplane.sh: ${tarball} has SHA-256 ${actual_sha256}, expected ${tarball_sha256}" >&2
  exit 1
fi

go_bin="${GO:-go}"
if ! command -v "${go_bin}" >/dev/null 2>&1; then
  echo "crossplane.sh: the Go toolchain ('${go_bin}') is not on PATH; install Go >= 1.26 to build the Crossplane CLI ${version}" >&2
  exit 127
fi

mkdir -p "${install_dir}"
# Build in a scratch directory with its own GOCACHE and GOMODCACHE (a build
# must not depend on, or fill, the user's caches) and move the binary into
# place at the end, so an interrupted build never leaves a half-written binary
# that a later run would take for an installed one. The module cache is
# read-only by design, hence the chmod before removing it.
scratch="$(mktemp -d "${install_dir}/.build.XXXXXX")"
cleanup() {
  chmod -R u+w "${scratch}" 2>/dev/null || true
  rm -rf "${scratch}"
}
trap cleanup EXIT

echo "crossplane.sh: building the Crossplane CLI ${version} from ${tarball} (about 5 minutes on 2 cores)" >&2
start=${SECONDS}
tar -xzf "${tarball}" -C "${scratch}"
src="${scratch}/crossplane-cli-${version}"
if [[ ! -d "${src}/cmd/crossplane" ]]; then
  echo "crossplane.sh: ${tarball} does not hold crossplane-cli-${version}/cmd/crossplane" >&2
  exit 1
fi
# The release build stamps the version; stamp it too so that
# `crossplane version --client` reports what was pinned.
ldflags="-s -w -X=github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${version}"
built="${scratch}/crossplane"
# GOFLAGS is reset so a caller's -mod=vendor or similar cannot interfere;
# -mod=readonly keeps the release's go.mod and go.sum authoritative.
(cd "${src}" && GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=0 \
  GOCACHE="${scratch}/gocache" GOMODCACHE="${scratch}/gomodcache" \
  "${go_bin}" build -trimpath -ldflags "${ldflags}" -o "${built}" ./cmd/crossplane) >&2
mv "${built}" "${binary}"
echo "crossplane.sh: built ${binary} in $((SECONDS - start))s" >&2
echo "${binary}"
