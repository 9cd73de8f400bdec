#!/usr/bin/env bash
# Builds target/rpm/kubelet-sentinel-VERSION-1.ARCH.rpm with rpmbuild (from
# Debian's rpm package) out of the files `make release` and `make assets`
# made (packaging/files lists them) and the scriptlets beside this file;
# rpm's own dependency generator adds the shared libraries the binary links
# (libsystemd.so.0, libc). Nothing to install from crates.io. Run from
# `make rpm`.
set -euo pipefail
umask 022
cd "$(dirname "$0")/../.."
name=kubelet-sentinel
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
out=$PWD/target/rpm
top=$out/build
stage=$top/stage
rm -rf "$top" && mkdir -p "$stage" "$top/SPECS"

files=$top/files.list
: > "$files"
while read -r src dest mode which kind; do
  case "$src" in ''|'#'*) continue ;; esac
  [ "$which" = deb ] && continue
  [ -f "$src" ] || { echo "packaging/files names $src, which does not exist (make release assets)" >&2; exit 1; }
  install -D -m "$mode" "$src" "$stage$dest"
  case "$kind" in
    config) echo "%config(noreplace) %attr($mode,root,root) $dest" ;;
    doc) echo "%doc %attr($mode,root,root) $dest" ;;
    *) echo "%attr($mode,root,root) $dest" ;;
  esac >> "$files"
done < packaging/files
# The directories that are the package's own (not /etc/kubelet-sentinel:
# credentials/ in it is made by the scriptlet and stays after an erase).
for d in /usr/share/kubelet-sentinel /usr/share/kubelet-sentinel/prometheus \
         /usr/share/kubelet-sentinel/alertmanager /usr/share/doc/kubelet-sentinel; do
  echo "%dir $d" >> "$files"
done

spec=$top/SPECS/$name.spec
{
  echo "Name: $name"
  echo "Version: $version"
  echo "Release: 1"
  echo "Summary: $(head -1 packaging/description)"
  echo "License: Apache-2.0"
  echo "Requires: systemd"
  echo
  echo "%description"
  tail -n +2 packaging/description
  echo
  echo "%install"
  echo "cp -a $stage/. %{buildroot}/"
  echo
  echo "%post"
  cat packaging/rpm/post_install.sh
  echo
  echo "%preun"
  cat packaging/rpm/pre_uninstall.sh
  echo
  echo "%postun"
  cat packaging/rpm/post_uninstall.sh
  echo
  echo "%files"
  cat "$files"
} > "$spec"

# Prebuilt and already stripped: no debuginfo package, no build-id links,
# none of the brp scripts (they would strip or recompress what is packaged).
rpmbuild -bb --quiet \
  --define "_topdir $top" \
  --define "debug_package %{nil}" \
  --define "_build_id_links none" \
  --define "__os_install_post %{nil}" \
  "$spec" >/dev/null
mkdir -p "$out"
rm -f "$out"/$name-*.rpm
mv "$top"/RPMS/*/$name-$version-1.*.rpm "$out/"
rm -rf "$top"
ls "$out"/$name-$version-1.*.rpm
