# Where the SMTP password goes (the unit loads it as a credential).
mkdir -p -m 0700 /etc/kubelet-sentinel/credentials
# The group a collector's journal files belong to (SupplementaryGroups=).
systemd-sysusers kubelet-sentinel.conf >/dev/null 2>&1 || getent group systemd-journal-remote >/dev/null || groupadd --system systemd-journal-remote || :
# The journal events' catalog (`journalctl -x` explains them).
journalctl --update-catalog >/dev/null 2>&1 || :
# %systemd_post kubelet-sentinel.service
if [ $1 -eq 1 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload preset kubelet-sentinel.service >/dev/null 2>&1 || :
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
fi
