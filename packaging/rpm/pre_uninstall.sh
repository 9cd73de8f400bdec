# %systemd_preun kubelet-sentinel.service
if [ $1 -eq 0 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload disable --now kubelet-sentinel.service >/dev/null 2>&1 || :
fi
