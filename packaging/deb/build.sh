#!/usr/bin/env bash
# Builds target/debian/kubelet-sentinel_VERSION-1_ARCH.deb with dpkg-deb from
# the files `make release` and `make assets` made (packaging/files lists
# them), the maintainer scripts beside this file, and the dependencies
# dpkg-shlibdeps finds in the binary. Debian's own tools only: nothing to
# install from crates.io. Run from `make deb`.
set -euo pipefail
umask 022
cd "$(dirname "$0")/../.."
name=kubelet-sentinel
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
revision=1
arch=$(dpkg --print-architecture)
maintainer="kubelet-sentinel maintainers <kubelet-sentinel@example.com>"
out=target/debian
stage=$out/stage
rm -rf "$stage" && mkdir -p "$stage/DEBIAN"

while read -r src dest mode which kind; do
  case "$src" in ''|'#'*) continue ;; esac
  [ "$which" = rpm ] && continue
  [ -f "$src" ] || { echo "packaging/files names $src, which does not exist (make release assets)" >&2; exit 1; }
  install -D -m "$mode" "$src" "$stage$dest"
  [ "$kind" = config ] && echo "$dest" >> "$stage/DEBIAN/conffiles"
done < packaging/files

doc=$stage/usr/share/doc/$name
install -d "$doc"
gzip -9n < packaging/deb/changelog > "$doc/changelog.Debian.gz"
chmod 644 "$doc/changelog.Debian.gz"
cat > "$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: $name

Files: *
Copyright: 2026 $maintainer
License: Apache-2.0
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in /usr/share/common-licenses/Apache-2.0.
COPYRIGHT
chmod 644 "$doc/copyright"

for s in postinst prerm postrm; do
  install -m 755 "packaging/deb/$s" "$stage/DEBIAN/$s"
done

# The shared libraries the binary links, as Debian names them (libc6,
# libgcc-s1, libsystemd0 with their minimum versions). dpkg-shlibdeps wants
# a debian/control to exist where it runs.
shlib=$(mktemp -d); trap 'rm -rf "$shlib"' EXIT
mkdir "$shlib/debian" && touch "$shlib/debian/control"
bin=$(readlink -f "$stage/usr/bin/$name")
depends=$(cd "$shlib" && dpkg-shlibdeps -O "$bin" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "dpkg-shlibdeps found no dependencies of $bin" >&2; exit 1; }

(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/md5sums" "$stage/DEBIAN/conffiles"
installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
{
  echo "Package: $name"
  echo "Version: $version-$revision"
  echo "Architecture: $arch"
  echo "Maintainer: $maintainer"
  echo "Installed-Size: $installed_size"
  echo "Depends: $depends, systemd"
  echo "Section: admin"
  echo "Priority: optional"
  echo "Description: $(head -1 packaging/description)"
  tail -n +2 packaging/description | sed -e 's/^$/./' -e 's/^/ /'
} > "$stage/DEBIAN/control"
chmod 644 "$stage/DEBIAN/control"

deb=$out/${name}_${version}-${revision}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
rm -rf "$stage"
echo "$deb"
