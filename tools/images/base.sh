#!/usr/bin/env bash
# Build the root filesystem every Modelplane function image shares, as root:
#
#   tools/images/base.sh ROOTFS
#
# Debian bookworm (debootstrap --variant=minbase, python3 3.11 from the Debian
# archive, upgraded from bookworm-updates and bookworm-security), a virtual
# environment at /venv holding exactly the wheels of requirements.lock
# (--require-hashes; pip runs from its own wheel and is not installed), and
# a non-root user nonroot (65532). Then what an image should not carry goes:
# apt's package lists and downloaded .debs, logs, documentation other than
# copyright notices, man pages, translations, device nodes, the host's
# resolv.conf and hostname. Every Python module is byte-compiled with
# unchecked-hash pycs: they do not depend on file times (the layer's times are
# clamped) and the non-root process could not write a fresher one anyway.
#
# tools/images.sh calls this on a cache miss; this script is one of the inputs
# of the cache key, so changing it rebuilds the base.
#
# Environment: DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR (default: the mirrors apt
# on this machine uses, else deb.debian.org), SOURCE_DATE_EPOCH (set by
# tools/images.sh: the time tools that honour it, such as the shadow suite,
# record instead of now).
set -euo pipefail

readonly suite=bookworm
readonly python=python3.11

here="$(cd "$(dirname "$0")" && pwd)"
root="$1"

# The first URIs of the host's deb822 sources that is (or is not) the security archive.
host_mirror() { # host_mirror security|main
  local f want="$1"
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r "${f}" ]] || continue
    sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' "${f}"
  done | if [[ "${want}" == security ]]; then grep -m1 -- '-security' || true; else grep -m1 -v -- '-security' || true; fi
}
mirror="${DEBIAN_MIRROR:-$(host_mirror main)}"
mirror="${mirror:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY_MIRROR:-$(host_mirror security)}"
security="${security:-http://deb.debian.org/debian-security}"

# Run a command inside the root filesystem with /proc and /dev of its own
# (private mount and PID namespaces: nothing outlives the command).
in_root() {
  unshare --mount --pid --fork --mount-proc="${root}/proc" \
    sh -c 'mount --rbind /dev "$0/dev" && exec chroot "$0" "$@"' "${root}" \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH}" "$@"
}

# The tools' own output goes to a log beside the root filesystem, shown when a step fails.
log="${root}.log"
: >"${log}"
quiet() {
  "$@" >>"${log}" 2>&1 || { tail -n 40 "${log}" >&2; echo "base.sh: failed: $* (log: ${log})" >&2; return 1; }
}

echo "base.sh: debootstrap ${suite} from ${mirror}" >&2
# In a private mount namespace: what debootstrap mounts in the target (/proc, /sys) cannot outlive it.
quiet unshare --mount --propagation private debootstrap --variant=minbase --include=python3 "${suite}" "${root}" "${mirror}"

cat >"${root}/etc/apt/sources.list" <<EOF
deb ${mirror} ${suite} main
deb ${mirror} ${suite}-updates main
deb ${security} ${suite}-security main
EOF
quiet in_root apt-get -q update
quiet in_root apt-get -q -y -o Dpkg::Options::=--force-confold upgrade
quiet in_root apt-get -q clean

echo "base.sh: installing requirements.lock into /venv" >&2
wheels="${root}/tmp/wheels"
mkdir -p "${wheels}"
cp "${here}/requirements.lock" "${here}/pip.lock" "${wheels}/"
# The host's pip only downloads, for the image's interpreter (the flags
# lock.py resolved with); the image's own python installs.
"${PYTHON:-python3}" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
  --dest "${wheels}" $("${PYTHON:-python3}" -c 'import sys; sys.path.insert(0, sys.argv[1]); import lock; print(*lock.target_flags())' "${here}") \
  -r "${wheels}/requirements.lock" -r "${wheels}/pip.lock" >&2
pip_wheel="$(cd "${wheels}" && ls pip-*.whl)"
in_root "/usr/bin/${python}" -m venv --without-pip /venv
quiet in_root /venv/bin/python "/tmp/wheels/${pip_wheel}/pip" install --disable-pip-version-check \
  --no-cache-dir --no-index --find-links /tmp/wheels --require-hashes --no-compile \
  -r /tmp/wheels/requirements.lock
rm -rf "${wheels}"

# The user the functions run as (distroless's nonroot): no home, no shell, no password.
echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin' >>"${root}/etc/passwd"
echo 'nonroot:x:65532:' >>"${root}/etc/group"
echo 'nonroot:*::0:99999:7:::' >>"${root}/etc/shadow"

echo "base.sh: trimming and byte-compiling" >&2
find "${root}" -depth -name __pycache__ -type d -exec rm -rf {} +
in_root /venv/bin/python -m compileall -q --invalidation-mode unchecked-hash \
  "/usr/lib/${python}" /venv/lib >&2
rm -rf "${root}"/var/lib/apt/lists/* "${root}"/var/cache/apt/* "${root}"/var/cache/debconf/*-old \
  "${root}"/var/cache/ldconfig/aux-cache "${root}"/var/lib/dpkg/*-old "${root}"/var/log/* \
  "${root}"/usr/share/man "${root}"/usr/share/info "${root}"/usr/share/lintian "${root}"/usr/share/locale/* \
  "${root}"/dev/* "${root}"/tmp/* "${root}"/root/.cache \
  "${root}"/etc/resolv.conf "${root}"/etc/hostname "${root}"/etc/machine-id
find "${root}/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "${root}/usr/share/doc" -mindepth 1 -type d -empty -delete
# The shadow suite records the day a password last changed; pin it to SOURCE_DATE_EPOCH's day.
day=$((SOURCE_DATE_EPOCH / 86400))
sed -i -E "s/^([^:]*:[^:]*:)[0-9]+:/\1${day}:/" "${root}/etc/shadow" "${root}/etc/shadow-" 2>/dev/null || true
