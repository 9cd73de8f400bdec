#!/usr/bin/env bash
# Checks the built packages and the unit. Run by `make test-packages` (part of
# `make test`), as root: it installs and purges the .deb on this machine and
# installs the .rpm into a scratch root.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "FAIL: $*" >&2; exit 1; }
pass=0
ok() { echo "ok - $*"; pass=$((pass + 1)); }
# grep -q stops reading at the first match; with pipefail the writer's SIGPIPE
# would fail the pipeline. has reads its input to the end.
has() { grep "$@" >/dev/null; }

deb=$(ls -t target/debian/kubelet-sentinel_*.deb | head -1)
rpm=$(ls -t target/rpm/kubelet-sentinel-*.rpm | head -1)
unit=systemd/kubelet-sentinel.service

# --- the unit, offline ------------------------------------------------------
# verify checks that ExecStart= and ExecReload= exist: check a copy pointing at /bin/true.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
sed -E 's#^(Exec[A-Za-z]+)=/usr/bin/kubelet-sentinel#\1=/bin/true#' "$unit" > "$tmp/kubelet-sentinel.service"
err=$(systemd-analyze verify --man=no "$tmp/kubelet-sentinel.service" 2>&1 >/dev/null) || fail "systemd-analyze verify: $err"
[ -z "$err" ] || fail "systemd-analyze verify printed: $err"   # it exits 0 on unknown keys
ok "systemd-analyze verify: nothing on stderr"
score_line=$(systemd-analyze security --offline=yes --no-pager "$tmp/kubelet-sentinel.service" 2>&1 | grep 'Overall exposure level')
score=$(echo "$score_line" | grep -oE '[0-9]+\.[0-9]+' | head -1)
echo "   $score_line"
systemd-analyze security --offline=yes --no-pager --threshold=20 "$tmp/kubelet-sentinel.service" >/dev/null 2>&1 \
  || fail "exposure $score is above 2.0"
ok "systemd-analyze security --offline: $score (threshold 2.0)"

# --- the Prometheus rules: valid, and their unit tests pass -----------------
(cd packaging/prometheus && promtool check rules kubelet-sentinel.rules.yml >/dev/null && promtool test rules kubelet-sentinel.rules.test.yml >/dev/null) \
  || fail "promtool check/test rules"
ok "Prometheus rules: promtool check rules and promtool test rules"
amtool check-config packaging/alertmanager/kubelet-sentinel.alertmanager.yml >/dev/null \
  || fail "amtool check-config of the shipped Alertmanager example"
ok "the Alertmanager example: amtool check-config"

# --- .deb contents ----------------------------------------------------------
contents=$(dpkg-deb -c "$deb")
expect_deb() { # mode path
  echo "$contents" | has -E "^$1 .* \./$2\$" || fail "$deb lacks $1 $2"
}
expect_deb '-rwxr-xr-x' 'usr/bin/kubelet-sentinel'
expect_deb '-rw-r--r--' 'etc/kubelet-sentinel/config.toml'
expect_deb '-rw-r--r--' 'usr/lib/systemd/system/kubelet-sentinel.service'
expect_deb '-rw-r--r--' 'usr/share/man/man1/kubelet-sentinel.1.gz'
expect_deb '-rw-r--r--' 'usr/share/bash-completion/completions/kubelet-sentinel'
expect_deb '-rw-r--r--' 'usr/share/zsh/vendor-completions/_kubelet-sentinel'
expect_deb '-rw-r--r--' 'usr/share/fish/vendor_completions.d/kubelet-sentinel.fish'
expect_deb '-rw-r--r--' 'usr/share/kubelet-sentinel/prometheus/kubelet-sentinel.rules.yml'
info=$(dpkg-deb -I "$deb")
echo "$info" | has -E '^ Depends:.*libsystemd0' || fail "Depends lacks libsystemd0"
echo "$info" | has -E '^ Depends:.*\bsystemd\b' || fail "Depends lacks systemd"
dpkg-deb -f "$deb" Depends
mkdir "$tmp/ctl" && dpkg-deb -e "$deb" "$tmp/ctl"
grep -qx '/etc/kubelet-sentinel/config.toml' "$tmp/ctl/conffiles" || fail "config.toml is not a conffile"
grep -q 'deb-systemd-helper' "$tmp/ctl/postinst" || fail "postinst lacks the systemd snippets"
grep -q 'deb-systemd-invoke $_dh_action' "$tmp/ctl/postinst" || fail "postinst does not start (or, on upgrade, restart) the unit"
grep -q 'deb-systemd-invoke stop' "$tmp/ctl/prerm" || fail "prerm does not stop the unit on removal"
grep -q 'deb-systemd-helper purge' "$tmp/ctl/postrm" || fail "postrm does not forget the unit on purge"
grep -q 'rm -rf /var/lib/private/kubelet-sentinel' "$tmp/ctl/postrm" || fail "postrm does not purge the state"
grep -q 'mkdir -p -m 0700 /etc/kubelet-sentinel/credentials' "$tmp/ctl/postinst" || fail "postinst does not create the credentials directory"
grep -q 'systemd-sysusers kubelet-sentinel.conf' "$tmp/ctl/postinst" || fail "postinst does not make the systemd-journal-remote group"
expect_deb '-rw-r--r--' 'usr/lib/sysusers.d/kubelet-sentinel.conf'
synopsis=$(dpkg-deb -f "$deb" Description | head -1)
[ ${#synopsis} -le 72 ] || fail "the synopsis is ${#synopsis} characters (dpkg -l cuts it): $synopsis"
ok ".deb: binary, unit, conffile, man page, completions, modes, dependencies, scripts; synopsis: $synopsis"
lint=$(lintian --tag-display-limit 0 "$deb" 2>/dev/null || true)
bad=$(echo "$lint" | grep -E '^[EW]: ' || true)
[ -z "$bad" ] || fail "lintian: $bad"
ok "lintian: no errors, no warnings$( [ -n "$lint" ] && echo " ($(echo "$lint" | wc -l) notes)")"

# --- .rpm contents ----------------------------------------------------------
list=$(rpm -qlp "$rpm" 2>/dev/null)
for f in /usr/bin/kubelet-sentinel /etc/kubelet-sentinel/config.toml /usr/lib/systemd/system/kubelet-sentinel.service \
         /usr/share/man/man1/kubelet-sentinel.1.gz /usr/share/bash-completion/completions/kubelet-sentinel \
         /usr/share/zsh/site-functions/_kubelet-sentinel /usr/share/fish/vendor_completions.d/kubelet-sentinel.fish; do
  echo "$list" | has -x "$f" || fail "$rpm lacks $f"
done
[ "$(rpm -qcp "$rpm" 2>/dev/null)" = "/etc/kubelet-sentinel/config.toml" ] || fail "rpm config files: $(rpm -qcp "$rpm")"
modes=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" 2>/dev/null)
echo "$modes" | has -E '^cn -rw-r--r-- /etc/kubelet-sentinel/config.toml$' || fail "config is not %config(noreplace) 0644: $modes"
echo "$modes" | has -E ' -rwxr-xr-x /usr/bin/kubelet-sentinel$' || fail "binary mode: $modes"
scripts=$(rpm -qp --scripts "$rpm" 2>/dev/null)
for s in 'postinstall scriptlet' 'preuninstall scriptlet' 'postuninstall scriptlet' 'try-restart kubelet-sentinel.service' 'disable --now kubelet-sentinel.service'; do
  echo "$scripts" | has "$s" || fail "rpm scripts lack: $s"
done
requires=$(rpm -qpR "$rpm" 2>/dev/null)
echo "$requires" | has '^systemd' || fail "rpm requires lack systemd: $requires"
echo "$requires" | has 'libsystemd.so.0' || fail "rpm requires lack libsystemd.so.0: $requires"
ok ".rpm: files, %config(noreplace), modes, scriptlets, requires"

# --- .deb install, reinstall keeps an edited config, purge removes it all ----
dpkg -P kubelet-sentinel >/dev/null 2>&1 || true
dpkg -i "$deb" >/dev/null
kubelet-sentinel --version | has '^kubelet-sentinel ' || fail "--version"
v=$(dpkg --verify kubelet-sentinel 2>&1) && [ -z "$v" ] || fail "dpkg --verify (md5sums): $v"
man -w kubelet-sentinel >/dev/null || fail "man -w kubelet-sentinel"
man -w 5 kubelet-sentinel.toml >/dev/null || fail "man -w 5 kubelet-sentinel.toml"
page=$(man kubelet-sentinel 2>/dev/null | col -b)
for s in COMMANDS FILES CONFIGURATION "EXIT STATUS" EXAMPLES; do
  echo "$page" | has "^$s" || fail "the man page has no $s section"
done
echo "$page" | has -E 'kubelet-sentinel-[a-z]+\(1\)' && fail "the man page refers to per-command pages that do not exist"
# Completion, run in bash as a user's shell would run it.
comp=$(bash -c '
  source /usr/share/bash-completion/bash_completion 2>/dev/null
  source /usr/share/bash-completion/completions/kubelet-sentinel
  fn=$(complete -p kubelet-sentinel | grep -oE -- "-F [^ ]+" | cut -d" " -f2)
  c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
        "$fn" kubelet-sentinel "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"; echo "${COMPREPLY[*]}"; }
  c kubelet-sentinel stat; c kubelet-sentinel incidents --cau; c kubelet-sentinel silence ""; c kubelet-sentinel scan --for')
[ "$(echo "$comp" | sed -n 1p)" = status ] || fail "completion of 'stat': $comp"
echo "$comp" | sed -n 2p | has -x -- '--cause' || fail "completion of 'incidents --cau': $comp"
echo "$comp" | sed -n 3p | has -w add || fail "completion of 'silence ': $comp"
echo "$comp" | sed -n 4p | has -x -- '--format' || fail "completion of 'scan --for': $comp"
kubelet-sentinel --config /etc/kubelet-sentinel/config.toml check-config >/dev/null || fail "check-config on the installed config"
[ "$(stat -c %a /etc/kubelet-sentinel/credentials)" = 700 ] || fail "credentials directory mode"
systemd-analyze verify --man=no /usr/lib/systemd/system/kubelet-sentinel.service 2>&1 | tee "$tmp/verify"
[ ! -s "$tmp/verify" ] || fail "verify of the installed unit printed something"
echo '# edited by the test' >> /etc/kubelet-sentinel/config.toml
dpkg -i --force-confold "$deb" >/dev/null
grep -q '^# edited by the test$' /etc/kubelet-sentinel/config.toml || fail "the edited config did not survive a reinstall"
dpkg -P kubelet-sentinel >/dev/null
[ ! -e /usr/bin/kubelet-sentinel ] && [ ! -e /etc/kubelet-sentinel ] && [ ! -e /usr/lib/systemd/system/kubelet-sentinel.service ] \
  || fail "dpkg -P left files behind"
ok ".deb: installs, --version, man pages (1 with COMMANDS, FILES, CONFIGURATION, EXIT STATUS, EXAMPLES; 5 for the config), bash completion of subcommands and their options, edited config survives reinstall, purge removes it all"

# --- .rpm into a scratch root -------------------------------------------------
root="$tmp/rpmroot"
rpm --root="$root" --initdb
rpm --root="$root" -ivh --nodeps --noscripts "$rpm" >/dev/null 2>&1
[ -x "$root/usr/bin/kubelet-sentinel" ] && [ -f "$root/etc/kubelet-sentinel/config.toml" ] || fail "rpm --root install"
ok ".rpm: installs into a scratch root"

echo "$pass passed, 0 failed"
