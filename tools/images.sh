#!/usr/bin/env bash
# Build every function's runtime image without Docker, as root:
#
#   tools/images.sh [OUTPUT_DIR]     (default: _output/images; `make images`)
#
# writes OUTPUT_DIR/function-compose-<kind>.tar, one image tarball per
# function (the `docker save` layout that `crossplane xpkg build
# --embed-runtime-image-tarball` reads), the same eight images as one OCI
# image layout in OUTPUT_DIR/oci (each blob once; for `crane push`,
# `skopeo copy oci:...` and the like), and OUTPUT_DIR/images.json with each
# image's digest and layers. Each image has two layers:
#
# - base, shared by all eight: Debian bookworm with python3 (3.11) and a
#   virtual environment at /venv holding the runtime dependencies pinned in
#   tools/images/requirements.lock (tools/images/base.sh builds it);
# - the function's own: the project installed from its wheel into /venv,
#   keeping the shared code (modelplane, modelplane_models) and this
#   function's package only.
#
# The config runs `/venv/bin/python -m compose_<kind>` as user 65532 (nonroot),
# which serves gRPC on 0.0.0.0:9443 with the mTLS files of the directory
# Crossplane names in TLS_SERVER_CERTS_DIR.
#
# Reproducible: the same inputs give the same digests. The base's file times
# are clamped to BASE_EPOCH below, the function layer's and the config's to
# SOURCE_DATE_EPOCH (default: the time of the last commit); tarballs are
# sorted and gzip carries no time stamp. The image assembler is
# go-containerregistry (tools/images/ocimage, pinned by its go.sum).
#
# Cached: the base root filesystem and its layer live in
# ${XDG_CACHE_HOME:-~/.cache}/modelplane/images/base-<key>, where the key hashes
# everything the base is made from (base.sh, layer.sh, the locks, the Debian
# mirrors and the debootstrap version); a warm build only makes the function
# layers. A cold build takes a few minutes on 2 cores.
#
# Environment: MODELPLANE_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/modelplane),
# MODELPLANE_TOOLS_DIR (default: MODELPLANE_CACHE_DIR/tools), PYTHON (the
# host interpreter whose pip downloads wheels and builds the project's wheel;
# default: the project's .venv, else python3), GO, SOURCE_DATE_EPOCH,
# MODELPLANE_SOURCE_URL (the org.opencontainers.image.source label),
# DEBIAN_MIRROR and DEBIAN_SECURITY_MIRROR (see tools/images/base.sh).
set -euo pipefail

# The base layer's file times are clamped to this instant (2026-01-01T00:00:00Z),
# not to the commit's: the base is shared by every commit until its inputs change.
readonly BASE_EPOCH=1767225600
readonly ARCH=amd64
readonly USER_ID=65532
readonly PORT=9443

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="${repo}/tools/images"
out="${1:-${repo}/_output/images}"
cache="${MODELPLANE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/modelplane}"
tools_dir="${MODELPLANE_TOOLS_DIR:-${cache}/tools}"
start=${SECONDS}
# shellcheck source=images/layer.sh
source "${here}/layer.sh"

log() { echo "images.sh: $*" >&2; }
die() { log "$*"; exit 1; }

[[ "$(id -u)" == 0 ]] || die "needs root: debootstrap and chroot build the base root filesystem (no Docker is used)"
[[ "$(uname -m)" == x86_64 ]] || die "builds linux/${ARCH} images and runs the image's python while building; this machine is $(uname -m)"
if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap"
  apt-get -qq update >&2 && apt-get -qq install -y debootstrap >&2
fi
if [[ -z "${PYTHON:-}" ]]; then
  PYTHON=python3
  [[ -x "${repo}/.venv/bin/python" ]] && PYTHON="${repo}/.venv/bin/python"
fi
export PYTHON
if [[ -z "${SOURCE_DATE_EPOCH:-}" ]]; then
  SOURCE_DATE_EPOCH="$(git -C "${repo}" log -1 --format=%ct 2>/dev/null)" ||
    die "not a git checkout: set SOURCE_DATE_EPOCH"
fi
export SOURCE_DATE_EPOCH

# What the packages are called and at which version (lib/modelplane/kinds.py).
kinds() { "${PYTHON}" -c 'import runpy, sys; print(runpy.run_path(sys.argv[1])[sys.argv[2]])' "${repo}/lib/modelplane/kinds.py" "$1"; }
registry="$(kinds PACKAGE_REGISTRY)"
org="$(kinds PACKAGE_ORG)"
version="$(kinds PACKAGE_VERSION)"
source_url="${MODELPLANE_SOURCE_URL:-https://github.com/modelplane/modelplane}"
revision="$(git -C "${repo}" rev-parse HEAD 2>/dev/null || echo unknown)"

# --- The image assembler, built once per go.mod/go.sum/main.go. ---------------
ocimage_key="$(cat "${here}"/ocimage/go.mod "${here}"/ocimage/go.sum "${here}"/ocimage/main.go | sha256sum | cut -c1-16)"
ocimage="${tools_dir}/ocimage-${ocimage_key}/ocimage"
if [[ ! -x "${ocimage}" ]]; then
  command -v "${GO:-go}" >/dev/null 2>&1 || die "the Go toolchain ('${GO:-go}') is not on PATH; it builds tools/images/ocimage"
  log "building the image assembler (go-containerregistry) into ${ocimage}"
  mkdir -p "$(dirname "${ocimage}")"
  (cd "${here}/ocimage" && GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=0 \
    "${GO:-go}" build -trimpath -o "${ocimage}.tmp" .) >&2
  mv "${ocimage}.tmp" "${ocimage}"
  find "${tools_dir}" -mindepth 1 -maxdepth 1 -name 'ocimage-*' ! -name "ocimage-${ocimage_key}" -exec rm -rf {} +
fi

# --- The base: root filesystem and layer, cached by the hash of its inputs. ----
base_key="$(
  {
    cat "${here}/base.sh" "${here}/layer.sh" "${here}/lock.py" "${here}/requirements.lock" "${here}/pip.lock"
    echo "epoch=${BASE_EPOCH} arch=${ARCH} mirrors=${DEBIAN_MIRROR:-} ${DEBIAN_SECURITY_MIRROR:-}"
    grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
    dpkg-query -W debootstrap
  } | sha256sum | cut -c1-16
)"
base="${cache}/images/base-${base_key}"
mkdir -p "${cache}/images"
exec 9>"${cache}/images/.lock"
flock 9 # one builder of the cache at a time; a second waits and then finds it built
# A build that died (a .tmp) may have left what debootstrap mounts inside it; unmount before deleting.
discard() {
  local dir
  for dir in "$@"; do
    findmnt -rn -o TARGET | awk -v d="${dir}/" 'index($0, d) == 1' | sort -r | xargs -r -n1 umount -l
    rm -rf "${dir}"
  done
}
shopt -s nullglob
discard "${cache}"/images/base-*.tmp
if [[ ! -f "${base}/base.tar.gz" ]]; then
  log "building the base root filesystem ${base} (debootstrap; a few minutes)"
  discard "${base}"
  mkdir -p "${base}.tmp"
  SOURCE_DATE_EPOCH="${BASE_EPOCH}" "${here}/base.sh" "${base}.tmp/rootfs"
  "${PYTHON}" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
    --dest "${base}.tmp" -r "${here}/pip.lock" >&2
  write_layer "${base}.tmp/rootfs" "${BASE_EPOCH}" "${base}.tmp/base.tar.gz"
  mv "${base}.tmp" "${base}"
fi
touch "${base}"
# A base no build has used for a day belongs to inputs no checkout here has any more. (Not sooner:
# checkouts at other commits, such as CI's fresh clone, may share this cache.)
for stale in "${cache}"/images/base-*; do
  if [[ "${stale}" != "${base}" && -z "$(find "${stale}" -maxdepth 0 -mtime -1)" ]]; then discard "${stale}"; fi
done
shopt -u nullglob
flock -u 9
root="${base}/rootfs"
pip_wheel="$(cd "${base}" && ls pip-*.whl)"

# --- The function layers. -----------------------------------------------------
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/wheel" "${work}/tmp"
log "building the project's wheel"
"${PYTHON}" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "${work}/tmp" "${repo}" >&2
cp "${base}/${pip_wheel}" "${work}/tmp/"

# Run a command in the cached root filesystem, read-only, with WORK/tmp as its
# /tmp; private mount and PID namespaces, so nothing is left mounted.
in_base() {
  unshare --mount --pid --fork sh -c '
    root="$1" tmp="$2"; shift 2
    mount --bind "$root" "$root" && mount -o remount,bind,ro "$root" &&
      mount --bind "$tmp" "$root/tmp" && mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" &&
      exec chroot "$root" "$@"' sh "${root}" "${work}/tmp" \
    env -i PATH=/venv/bin:/usr/bin:/bin HOME=/nonexistent LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
    SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH}" "$@"
}
wheel="$(cd "${work}/tmp" && ls modelplane-*.whl)"
in_base /venv/bin/python "/tmp/${pip_wheel}/pip" install --quiet --disable-pip-version-check --no-cache-dir \
  --no-index --no-deps --no-compile --no-warn-script-location --root /tmp/project "/tmp/${wheel}" >&2
site="venv/lib/python3.11/site-packages"
[[ -d "${work}/tmp/project/${site}/modelplane" ]] || die "the project did not install into /${site}"
# Where the wheel came from is a fact of this machine, not of the image.
rm -f "${work}/tmp/project/${site}"/modelplane-*.dist-info/direct_url.json
sed -i '/\.dist-info\/direct_url\.json,/d' "${work}/tmp/project/${site}"/modelplane-*.dist-info/RECORD
in_base /venv/bin/python -m compileall -q --invalidation-mode unchecked-hash -s /tmp/project -p / /tmp/project/venv >&2

functions=()
for meta in "${repo}"/functions/*/package/crossplane.yaml; do
  functions+=("$(basename "$(dirname "$(dirname "${meta}")")")")
done
for fn in "${functions[@]}"; do
  layer="${work}/${fn}"
  cp -a "${work}/tmp/project" "${layer}"
  # Keep the shared code and this function's package; drop the other functions'.
  for other in "${functions[@]}"; do
    [[ "${other}" == "${fn}" ]] && continue
    rm -rf "${layer:?}/${site}/${other//-/_}"
    sed -i "\#^${other//-/_}/#d" "${layer}/${site}"/modelplane-*.dist-info/RECORD
  done
  chmod -R u+rwX,go+rX,go-w "${layer}"
  write_layer "${layer}" "${SOURCE_DATE_EPOCH}" "${work}/${fn}.tar.gz" --owner=0 --group=0
done

# --- The images: one spec for the assembler, which reads the base once. -------
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
"${PYTHON}" - "${work}/spec.json" "${out}" "${work}" "${base}/base.tar.gz" "${SOURCE_DATE_EPOCH}" "${ARCH}" \
  "${registry}/${org}" "${version}" "${revision}" "${source_url}" "${USER_ID}" "${PORT}" "${functions[@]}" <<'EOF'
import json, sys
spec, out, work, base, created, arch, repository, version, revision, source, uid, port, *functions = sys.argv[1:]
def image(fn):
    module = fn.replace("-", "_")
    return {
        "out": f"{out}/function-{fn}.tar",
        "tag": f"{repository}/function-{fn}:{version}",
        "layers": [
            {"path": base, "history": "Debian bookworm, python3.11, /venv from tools/images/requirements.lock (tools/images/base.sh)"},
            {"path": f"{work}/{fn}.tar.gz", "history": f"modelplane {version} with {module} as its only function (tools/images.sh)"},
        ],
        "config": {
            "Entrypoint": ["/venv/bin/python", "-m", module],
            "Env": [
                "PATH=/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "PYTHONDONTWRITEBYTECODE=1",
                "PYTHONUNBUFFERED=1",
            ],
            "User": f"{uid}:{uid}",
            "WorkingDir": "/",
            "ExposedPorts": {f"{port}/tcp": {}},
            "Labels": {
                "org.opencontainers.image.title": f"function-{fn}",
                "org.opencontainers.image.description": (
                    f"Modelplane composition function {fn}: python -m {module}, gRPC on :{port} "
                    "with mTLS from TLS_SERVER_CERTS_DIR"
                ),
                "org.opencontainers.image.version": version,
                "org.opencontainers.image.revision": revision,
                "org.opencontainers.image.source": source,
                "org.opencontainers.image.licenses": "Apache-2.0",
                "org.opencontainers.image.base.name": "debian:bookworm",
            },
        },
    }
images = [image(fn) for fn in functions]
json.dump({"created": int(created), "architecture": arch, "layout": f"{out}/oci", "images": images}, open(spec, "w"), indent=2)
EOF
rm -rf "${out}/oci"
"${ocimage}" "${work}/spec.json" >"${out}/images.json"

# Sizes as a registry stores them: compressed, the shared base once.
"${PYTHON}" - "${out}/images.json" >&2 <<'EOF'
import json, sys
images = json.load(open(sys.argv[1]))
mb = lambda n: f"{n / 1e6:.1f} MB"
base = images[0]["layers"][0]
print(f"images.sh: base layer {base['digest'][:19]}  {mb(base['size'])}, shared by all {len(images)}")
for i in images:
    print(f"images.sh: {i['tag']:70} {i['digest'][:19]}  own layer {mb(i['layers'][-1]['size'])}")
EOF
log "wrote ${#functions[@]} images to ${out} in $((SECONDS - start))s"
