#!/bin/sh
# usage: check_deb.sh BUILD_DIR WORK_DIR PROGRAM
# Builds the .deb of BUILD_DIR with cpack, checks that its Depends name the Debian package of every shared
# library the installed memtrack and preload link (ldd + dpkg -S), installs it into a throwaway dpkg root
# (--instdir/--admindir: no container, the host's packages untouched), records PROGRAM with the memtrack in
# that root, removes the package and checks that no file of it is left. Exit 77 (skip) without dpkg tools.
set -eu
build=$1 work=$2 program=$3
for tool in dpkg-deb dpkg dpkg-shlibdeps dpkg-query readelf; do
  command -v "$tool" >/dev/null 2>&1 || { echo "skipped: $tool is missing (Debian's dpkg, dpkg-dev and binutils)"; exit 77; }
done
fail() { echo "check_deb.sh: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/pkg"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
set -- "$work"/pkg/memtrack_*.deb
[ -f "$1" ] || fail "cpack wrote no memtrack_*.deb in $work/pkg"
deb=$1
depends=$(dpkg-deb --field "$deb" Depends)
[ -n "$depends" ] || fail "$deb declares no Depends"

root=$work/root admin=$work/root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates"
: >"$admin/status"
# The root has no packages of its own: its dependencies are the host's (checked below, not by this dpkg).
dpkg --instdir="$root" --admindir="$admin" --log=/dev/null --force-depends --force-script-chrootless -i "$deb" \
  >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "dpkg -i $deb into $root failed"; }
[ "$(dpkg-query --admindir="$admin" -W -f '${Status}' memtrack)" = "install ok installed" ] ||
  fail "memtrack is not installed in $admin"
memtrack=$root/usr/bin/memtrack
preload=$(dpkg-query --admindir="$admin" -L memtrack | grep '/libmemtrack-preload\.so$') ||
  fail "the package has no libmemtrack-preload.so"

# Every shared library memtrack and the preload link directly (DT_NEEDED; ldd says where it resolves) is
# shipped by a package that Depends names.
names=" $(echo "$depends" | sed 's/([^)]*)//g; s/[|,]/ /g') "
for elf in "$memtrack" "$root$preload"; do
  for needed in $(readelf -dW "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    # ldd prints "NAME => PATH (addr)", or "PATH (addr)" for the dynamic loader.
    lib=$(ldd "$elf" | awk -v n="$needed" '$1 == n && $3 ~ /^\// { print $3; exit }
                                           substr($1, length($1) - length(n)) == "/" n { print $1; exit }')
    [ -n "$lib" ] || fail "$needed of $elf does not resolve"
    owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null) ||
      fail "no Debian package ships $lib"
    pkg=$(echo "$owner" | head -n1 | cut -d: -f1)
    case "$names" in *" $pkg "*) ;; *) fail "Depends ($depends) lacks $pkg, which ships $lib ($needed of $elf)" ;; esac
  done
done

env -u MEMTRACK_PRELOAD "$memtrack" record -q -o "$work/tiny.mt" -- "$program" ||
  fail "$memtrack record failed"
"$memtrack" decode "$work/tiny.mt" | grep -q '"type":"Malloc","size":4096' ||
  fail "the recording of $program has no malloc of 4096 B"

files=$(dpkg-query --admindir="$admin" -L memtrack | while read -r f; do [ -f "$root$f" ] && echo "$f"; done)
dpkg --instdir="$root" --admindir="$admin" --log=/dev/null --force-script-chrootless -r memtrack \
  >"$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; fail "dpkg -r memtrack failed"; }
for f in $files; do [ ! -e "$root$f" ] || fail "$f is left after dpkg -r"; done
left=$(find "$root" -type f ! -path "$admin/*")
[ -z "$left" ] || fail "files left in $root after dpkg -r: $left"
echo "$deb: Depends: $depends; installed, recorded $program, removed"
