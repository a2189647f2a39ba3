# Sourced by tools/images.sh: write one image layer, reproducibly.
#
#   write_layer DIR EPOCH OUT.tar.gz [TAR_OPTION...]
#
# A gzip-compressed tarball of DIR's contents (member names without a leading
# "./"), the recipe of reproducible-builds.org for GNU tar: entries sorted by
# name, modification times clamped to EPOCH (older times, such as those of
# Debian's files, are kept), numeric owners, POSIX format without access or
# change times, no extended attributes, and gzip without a name or time
# stamp. The same tree gives the same bytes, so the same layer digest.
write_layer() {
  local dir="$1" epoch="$2" out="$3"
  shift 3
  local -a members
  mapfile -t members < <(cd "${dir}" && LC_ALL=C ls -A)
  tar --create --file=- --directory="${dir}" \
    --sort=name --mtime="@${epoch}" --clamp-mtime --numeric-owner \
    --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --no-acls --no-xattrs --no-selinux "$@" -- "${members[@]}" |
    gzip -n -6 >"${out}"
}
