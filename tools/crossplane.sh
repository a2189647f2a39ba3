#!/usr/bin/env bash
# Install the pinned Crossplane CLI with the Go toolchain, into a cache
# directory outside the repository, and print the binary's path as the last
# line on stdout:
#
#   CROSSPLANE=$(tools/crossplane.sh)
#
# Idempotent: when the binary is already there it only prints the path.
#
# Which module: since Crossplane v2.3 the CLI lives in its own repository
# (module github.com/crossplane/cli/v2, main package cmd/crossplane), but the
# Go module proxy this project can reach refuses that module ("403 This module
# version is not available") for every version. The newest CLI that the
# proxy serves is the one still inside the core module,
# github.com/crossplane/crossplane/v2/cmd/crank, last shipped there in
# v2.2.1. It renders Crossplane v2 (namespaced and cluster) XRs; our
# renderer follows the v2.3 CLI where the two differ (see
# lib/modelplane/render/engine.py). Override with CROSSPLANE_CLI_MODULE,
# CROSSPLANE_CLI_PACKAGE and CROSSPLANE_CLI_VERSION once cli/v2 is reachable.
#
# Environment:
#   MODELPLANE_TOOLS_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/modelplane/tools)
#   GO                    the go binary (default: go on PATH)
set -euo pipefail

readonly module="${CROSSPLANE_CLI_MODULE:-github.com/crossplane/crossplane/v2}"
readonly package="${CROSSPLANE_CLI_PACKAGE:-cmd/crank}"
readonly version="${CROSSPLANE_CLI_VERSION:-v2.2.1}"

tools_dir="${MODELPLANE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/modelplane/tools}"
install_dir="${tools_dir}/crossplane-${version}"
binary="${install_dir}/crossplane"

if [[ -x "${binary}" ]]; then
  echo "${binary}"
  exit 0
fi

go_bin="${GO:-go}"
if ! command -v "${go_bin}" >/dev/null 2>&1; then
  echo "crossplane.sh: the Go toolchain ('${go_bin}') is not on PATH; install Go >= 1.25 to build the Crossplane CLI ${version}" >&2
  exit 127
fi

mkdir -p "${install_dir}"
# Build into a scratch directory and move the binary into place at the end,
# so an interrupted build never leaves a half-written binary that a later run
# would take for an installed one.
scratch="$(mktemp -d "${install_dir}/.build.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT

echo "crossplane.sh: building ${module}/${package}@${version} (a few minutes on 2 cores)" >&2
start=${SECONDS}
# The version string is normally stamped by Crossplane's release build; stamp
# it here too so `crossplane version` reports what was pinned. The variable
# lives in the core module; the separate CLI module has its own.
ldflags="-s -w"
if [[ "${module}" == "github.com/crossplane/crossplane/v2" ]]; then
  ldflags+=" -X github.com/crossplane/crossplane/v2/internal/version.version=${version}"
fi
# Not `go install module/pkg@version`: that command also asks the proxy for the
# module's version list (to report deprecations), and the proxy this project
# reaches refuses list queries for these modules (403), which go install
# treats as fatal. Downloading the pinned version and building its main
# package as the main module resolves exactly the same dependency graph (the
# release's own go.mod and go.sum, no replace directives) without that query.
# GOFLAGS is reset so a caller's -mod=vendor or similar cannot interfere.
src="$(cd "${scratch}" && GOFLAGS= GOWORK=off "${go_bin}" mod download -json "${module}@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [[ -z "${src}" || ! -d "${src}/${package}" ]]; then
  echo "crossplane.sh: could not download ${module}@${version} from the Go module proxy" >&2
  exit 1
fi
built="${scratch}/crossplane"
(cd "${src}" && GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=0 \
  "${go_bin}" build -trimpath -ldflags "${ldflags}" -o "${built}" "./${package}") >&2
mv "${built}" "${binary}"
echo "crossplane.sh: built ${binary} in $((SECONDS - start))s" >&2
echo "${binary}"
