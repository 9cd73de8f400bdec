# %systemd_postun_with_restart kubelet-sentinel.service
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
    if [ $1 -ge 1 ]; then
        systemctl try-restart kubelet-sentinel.service >/dev/null 2>&1 || :
    fi
fi
# The journal events' catalog, without this package's.
journalctl --update-catalog >/dev/null 2>&1 || :
