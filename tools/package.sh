#!/usr/bin/env bash
# Build the Crossplane packages with `crossplane xpkg build`:
#
#   tools/package.sh [OUTPUT_DIR]     (default: _output/packages; `make package`)
#
# - modelplane.xpkg: the Configuration. Its package root is a scratch directory
#   holding only crossplane.yaml and the apis/ tree (the repository root holds
#   far more YAML than belongs in the package); examples/ goes in the
#   package's examples layer (--examples-root).
# - function-compose-<kind>.xpkg, one per function: functions/<fn>/package/
#   (the meta.pkg.crossplane.io Function and any input CRDs, none today).
#   Without --embed-runtime-image these packages carry the metadata only: a
#   runtime image (see the Dockerfile) cannot be built here, as there is no
#   Docker. To ship a function, build its image and pass it:
#     crossplane xpkg build --package-root functions/<fn>/package \
#       --examples-root functions/<fn>/package/examples \
#       --embed-runtime-image <image> -o function-<fn>.xpkg
#
# Environment: CROSSPLANE, the CLI (default: what tools/crossplane.sh installs).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${repo}/_output/packages}"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
crossplane="${CROSSPLANE:-$("${repo}/tools/crossplane.sh")}"

scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT

build() { # build NAME PACKAGE_ROOT EXAMPLES_ROOT
  "${crossplane}" xpkg build --package-root "$2" --examples-root "$3" -o "${out}/$1.xpkg"
  echo "package.sh: built ${out}/$1.xpkg" >&2
}

root="${scratch}/configuration"
mkdir -p "${root}"
cp "${repo}/crossplane.yaml" "${root}/"
cp -R "${repo}/apis" "${root}/apis"
build modelplane "${root}" "${repo}/examples"

for meta in "${repo}"/functions/*/package/crossplane.yaml; do
  fn="$(basename "$(dirname "$(dirname "${meta}")")")"
  root="${scratch}/${fn}"
  cp -R "$(dirname "${meta}")" "${root}"
  # No examples: point --examples-root at a directory that does not exist.
  build "function-${fn}" "${root}" "${scratch}/${fn}-no-examples"
done
