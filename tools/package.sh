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
#   (the meta.pkg.crossplane.io Function and any input CRDs, none today),
#   with the function's runtime image embedded
#   (--embed-runtime-image-tarball IMAGES/function-<fn>.tar, built by
#   tools/images.sh without Docker): Crossplane runs the package itself.
#
# Environment: CROSSPLANE, the CLI (default: what tools/crossplane.sh installs);
# IMAGES, the directory tools/images.sh wrote (default: run it into a scratch
# directory; its base layer is cached, so that takes seconds once built).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${repo}/_output/packages}"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
crossplane="${CROSSPLANE:-$("${repo}/tools/crossplane.sh")}"

scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT

images="${IMAGES:-}"
if [[ -z "${images}" ]]; then
  images="${scratch}/images"
  "${repo}/tools/images.sh" "${images}"
fi

build() { # build NAME PACKAGE_ROOT EXAMPLES_ROOT [XPKG_BUILD_FLAG...]
  "${crossplane}" xpkg build --package-root "$2" --examples-root "$3" -o "${out}/$1.xpkg" "${@:4}"
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
  image="${images}/function-${fn}.tar"
  [[ -f "${image}" ]] || { echo "package.sh: ${image} is missing; build it with tools/images.sh (make images)" >&2; exit 1; }
  build "function-${fn}" "${root}" "${scratch}/${fn}-no-examples" --embed-runtime-image-tarball "${image}"
done
