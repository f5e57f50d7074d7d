#!/usr/bin/env bash
# The Debian package (cmake/MurmurPackage.cmake), built with cpack from a
# build tree, then checked as an installer would meet it:
#  1. lintian reports no error;
#  2. it holds the programs, the systemd unit, the example config (a
#     conffile), man pages, the copyright and changelog, the alert rules and
#     the dashboard; its Depends name the shared libraries' packages;
#  3. installed into a scratch root (dpkg --instdir), `murmurd --version`
#     and `murmur sim --rounds 5` run from it;
#  4. `systemd-analyze verify` accepts the installed unit without a word, and
#     `systemd-analyze security` rates its sandbox OK (exposure below 2.0).
# The package built here is of the tree under test (the release build, tuned
# for this machine); `./dev deb` builds the portable one the same way.
# usage: deb_package_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(realpath "$1")
WORK=$(mktemp -d /tmp/murmur-deb.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$WORK" >"$WORK/cpack.log" 2>&1 || { tail "$WORK/cpack.log"; fail "cpack"; }
deb=$(ls "$WORK"/murmur_*_*.deb)
version=$(dpkg-deb -f "$deb" Version) arch=$(dpkg-deb -f "$deb" Architecture)
[ "$(basename "$deb")" = "murmur_${version}_${arch}.deb" ] || fail "package file name $(basename "$deb")"
[ "$arch" = "$(dpkg --print-architecture)" ] || fail "architecture $arch"

# 1. lintian.
lintian --tag-display-limit 0 "$deb" >"$WORK/lintian" 2>&1 || true
if grep -q '^E: ' "$WORK/lintian"; then cat "$WORK/lintian"; fail "lintian reports errors"; fi
echo "1. lintian: no errors ($(grep -c '^W: ' "$WORK/lintian" || true) warnings)"

# 2. Contents and control fields.
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$WORK/files"
for f in /usr/bin/murmur /usr/bin/murmurd /lib/systemd/system/murmurd.service /etc/murmur/murmurd.textproto.example \
  /usr/share/man/man1/murmur.1.gz /usr/share/man/man1/murmurd.1.gz /usr/share/doc/murmur/copyright \
  /usr/share/doc/murmur/changelog.gz /usr/share/murmur/murmur-alerts.yml /usr/share/murmur/murmur-dashboard.json; do
  grep -qx "$f" "$WORK/files" || fail "the package lacks $f"
done
! grep -q '^/usr/local' "$WORK/files" || fail "the package installs under /usr/local"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/murmur/murmurd.textproto.example ||
  fail "the example config is not a conffile"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libsodium23 libssl3 libprotobuf32 libstdc++6 libc6; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
echo "2. contents: programs, unit, conffile, man pages, docs; Depends: $depends"

# 3. Installed into a scratch root.
root=$WORK/root
mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info"
: >"$root/var/lib/dpkg/status"
dpkg --instdir="$root" --admindir="$root/var/lib/dpkg" --force-depends --force-script-chrootless \
  --force-not-root -i "$deb" >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log"; fail "dpkg -i into the scratch root"; }
out=$("$root/usr/bin/murmurd" --version | head -n 1) || fail "murmurd --version"
[ "$out" = "murmurd $version" ] || fail "murmurd --version printed '$out', not 'murmurd $version'"
"$root/usr/bin/murmur" sim --rounds 5 --eval-every 5 --quiet >"$WORK/sim" 2>&1 || { cat "$WORK/sim"; fail "murmur sim"; }
grep -q '^final (round 5): averaged-model test accuracy 0\.[1-9]' "$WORK/sim" || { cat "$WORK/sim"; fail "murmur sim's summary"; }
zcat "$root/usr/share/man/man1/murmurd.1.gz" | grep -q 'NodeConfig file' || fail "murmurd's man page lacks --config"
echo "3. installed in a scratch root: $out; murmur sim: $(head -n 1 "$WORK/sim" | cut -c1-60)..."

# 4. The unit.
unit=$root/lib/systemd/system/murmurd.service
grep -qx 'ExecStart=/usr/bin/murmurd --config /etc/murmur/murmurd.textproto' "$unit" || fail "ExecStart: $(grep ExecStart "$unit")"
# The root gets what the unit refers to from this machine's own files: its
# systemd units (targets, sockets), merged /bin, and kill(1).
cp -an /lib/systemd/system/. "$root/lib/systemd/system/"
[ -e "$root/bin" ] || ln -s usr/bin "$root/bin"
cp -aL /bin/kill "$root/usr/bin/kill"
# verify exits 0 on an unknown or misspelt key, and says so: any word is a failure.
systemd-analyze verify --root="$root" /lib/systemd/system/murmurd.service >"$WORK/verify" 2>&1 &&
  [ ! -s "$WORK/verify" ] || { cat "$WORK/verify"; fail "systemd-analyze verify"; }
systemd-analyze security --offline=true --root="$root" murmurd.service >"$WORK/security" 2>&1 ||
  { tail -n 5 "$WORK/security"; fail "systemd-analyze security"; }
exposure=$(sed -n 's/.*Overall exposure level for murmurd.service: \([0-9.]*\).*/\1/p' "$WORK/security")
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e < 2.0) }' || { tail -n 12 "$WORK/security"; fail "exposure $exposure"; }
echo "4. systemd-analyze verify passes; security exposure $exposure"
echo "deb package test passed"
