//! What an operator does next about an incident, and text from logs made
//! safe for one line: shared by the alert email (the service's `notify`) and the
//! JSON and table views (its `report`). Pure: it imports only the core
//! (incidents, signals, time).

use crate::signals::Cause;
use crate::time::Micros;
use crate::tracker::Incident;

/// A host gone silent: is it up, is its upload running, what is the node.
fn silent_steps(i: &Incident, last_entry_at: Micros) -> Vec<String> {
    let host = shell_word(i.host.as_deref().unwrap_or(&i.node));
    let since = short_utc(last_entry_at);
    vec![
        format!("kubectl get node {} -o wide (Ready? when did it last heartbeat?)", shell_word(&i.node)),
        format!("ping {host}; ssh {host} systemctl status systemd-journal-upload"),
        format!("on the collector: journalctl -D /var/log/journal/remote _HOSTNAME={host} --since \"{since} UTC\" (what it uploaded last)"),
        "on the collector: systemctl status systemd-journal-remote; free space under /var/log/journal/remote".into(),
    ]
}

/// Header-safe: no control characters, bounded length.
#[must_use]
pub fn header_text(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out: String = flat.chars().take(max).collect();
    if flat.chars().count() > max {
        out.push('…');
    }
    out
}

/// The commands an operator runs next, for the cause.
#[must_use]
pub fn next_steps(i: &Incident) -> Vec<String> {
    let mut steps = match i.detail.silent_since() {
        Some(last) => silent_steps(i, last),
        None => cause_steps(i),
    };
    // A cause's steps and its context's may name the same command: once.
    let mut seen = std::collections::BTreeSet::new();
    steps.retain(|s| seen.insert(s.clone()));
    steps
}

/// What to check for the incident's cause, on its node.
fn cause_steps(i: &Incident) -> Vec<String> {
    let node = shell_word(&i.node);
    let since = short_utc(i.opened_at - 60_000_000);
    let mut steps = vec![
        format!("kubectl get node {node} -o wide"),
        format!(
            "journalctl -u kubelet --since \"{since} UTC\" (on {})",
            shell_word(i.host.as_deref().unwrap_or(&i.node))
        ),
    ];
    steps_for_cause(i, &node, &mut steps);
    if i.context
        .iter()
        .any(|l| l.kind == crate::context::ContextKind::ClockStep)
    {
        steps.push("the node's clock: timedatectl; chronyc tracking (or timedatectl timesync-status): a stepped clock makes good certificates look expired or not yet valid".into());
    }
    kernel_context_steps(i, &mut steps);
    if i.lost_link() {
        steps.push("the node's own link: ip link; networkctl status (or nmcli device); the switch port and the cable or virtual NIC".into());
    }
    if i.context.iter().any(|l| l.kind.is_runtime()) {
        // The cause's runtime step, with what the context adds: one step.
        const STATUS: &str = "systemctl status containerd (or crio, docker)";
        let step = format!(
            "{STATUS}; journalctl -u containerd around the stop: who stopped it, and is it running again"
        );
        match steps.iter().position(|s| s.starts_with(STATUS)) {
            Some(k) => {
                let rest = steps[k][STATUS.len()..].trim_start_matches(" on the node");
                steps[k] = format!("{step}{rest}");
            }
            None => steps.push(step),
        }
    }
    steps
}

/// What to do for the kubelet's client certificate (design 5.7).
fn cert_steps(i: &Incident, steps: &mut Vec<String>) {
    let pem = "/var/lib/kubelet/pki/kubelet-client-current.pem";
    steps.push(format!(
        "on the node: openssl x509 -enddate -noout -in {pem} (when the certificate in use expires)"
    ));
    steps.push(
        "kubectl get csr: the node's pending requests (signer kubernetes.io/kube-apiserver-client-kubelet); \
         kubectl certificate approve <csr> if it is the node's own, and check that the controller manager's \
         approver and signer run (kube-controller-manager's --cluster-signing-* flags)"
            .into(),
    );
    steps.push(
        "rotateCertificates: true in /var/lib/kubelet/config.yaml (--rotate-certificates), and the \
         system:certificates.k8s.io:certificatesigningrequests:selfnodeclient binding for system:nodes"
            .into(),
    );
    if i.cause() == Cause::Expired {
        steps.push(
            "an expired certificate: on a kubeadm control plane, kubeadm certs check-expiration; on the \
             node, a fresh bootstrap (kubeadm join phase kubelet-start, or a new bootstrap token in \
             /etc/kubernetes/bootstrap-kubelet.conf) and systemctl restart kubelet"
                .into(),
        );
    } else {
        steps.push("kubeadm certs check-expiration (on a kubeadm control plane)".into());
    }
}

/// What to check on a node whose pods' sandboxes fail (design 5.6), for
/// its cause.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a sandbox's other causes are its network's: cni, and none of the other kinds' ever comes here"
)]
fn sandbox_steps(i: &Incident, node: &str, steps: &mut Vec<String>) {
    steps.push(format!("kubectl get pods -A -o wide --field-selector spec.nodeName={node} (the pods stuck in ContainerCreating, and the CNI's own pods on the node)"));
    steps.push(format!("kubectl get events -A --field-selector reason=FailedCreatePodSandBox (which pods, how often; the node is {node})"));
    match i.cause() {
        Cause::IpExhausted => {
            steps.push("the subnet's free addresses: on EKS, aws ec2 describe-subnets --subnet-ids <the node's subnet> --query 'Subnets[].AvailableIpAddressCount'; elsewhere the IPAM pool's (calicoctl ipam show --show-blocks; host-local: ls /var/lib/cni/networks/<network>/ against its range)".into());
            steps.push("the CNI's IPAM pods and warm pool: kubectl -n kube-system get pods -l k8s-app=aws-node -o wide; kubectl -n kube-system get ds aws-node -o yaml | grep -E 'WARM_IP_TARGET|WARM_ENI_TARGET|MINIMUM_IP_TARGET' (and the instance type's addresses per ENI against its max pods)".into());
        }
        Cause::Runtime => {
            steps.push("systemctl status containerd (or crio, docker) on the node; journalctl -u containerd around the failures".into());
            steps.push("open files: cat /proc/sys/fs/file-nr; systemctl show containerd -p LimitNOFILE; ulimit -n; sysctl fs.inotify.max_user_instances fs.inotify.max_user_watches".into());
            steps.push("cgroups: systemd-cgls; SystemdCgroup in /etc/containerd/config.toml against cgroupDriver in /var/lib/kubelet/config.yaml".into());
        }
        Cause::Image => {
            steps.push("the sandbox (pause) image: grep sandbox_image /etc/containerd/config.toml (or the kubelet's --pod-infra-container-image); crictl pull <that image> on the node".into());
            steps.push("the registry from the node: curl -sI https://registry.k8s.io/v2/ (or the mirror's); a proxy, a private mirror's credentials".into());
        }
        Cause::Timeout => {
            steps.push("the runtime's latency: time crictl pods; systemctl status containerd (or crio); the network plugin's own log (a slow IPAM call holds the sandbox)".into());
        }
        Cause::Unknown => {
            steps
                .push("read the evidence lines below and the kubelet's journal around them".into());
        }
        _ => {
            steps.push("ls -l /etc/cni/net.d /opt/cni/bin on the node: one network config, and the plugin's binaries".into());
            steps.push("the CNI's pods on the node (calico-node, cilium, aws-node, flannel…): kubectl -n kube-system logs <pod>; the plugin's own log on the node (/var/log/aws-routed-eni/, /var/log/calico/cni/)".into());
        }
    }
}

/// What to check for the kernel's trouble (design 5.8).
fn kernel_steps(i: &Incident, steps: &mut Vec<String>) {
    steps.push(
        "on the node: dmesg -T | tail -200 (or journalctl -k -b): the kernel's own lines around it"
            .into(),
    );
    if i.cause() == Cause::ReadonlyFs {
        let devs = i
            .kernel()
            .map(|k| k.readonly_devices.join(" "))
            .unwrap_or_default();
        steps.push(format!(
            "mount | grep 'ro,' on the node: which file systems are read-only now{}",
            if devs.is_empty() {
                String::new()
            } else {
                format!(" ({})", header_text(&devs, 200))
            }
        ));
        steps.push("the disk's health: smartctl -a /dev/<disk> (nvme smart-log /dev/nvme0 for NVMe), or the cloud volume's status".into());
        steps.push("drain the node, then fsck the file system (unmounted) and reboot; the node stays read-only until then".into());
    } else {
        steps.push("cat /proc/sys/kernel/hung_task_timeout_secs (the kernel reports a task blocked this long)".into());
        steps.push("the blocked task's stack in dmesg (the Call Trace after 'INFO: task …'): a disk, NFS or a driver it waits on; echo w > /proc/sysrq-trigger lists every blocked task".into());
        steps.push("the disk's I/O wait and health: iostat -x 1 5; smartctl -a /dev/<disk>".into());
    }
}

/// What the kernel's lines in an incident's context add (design 5.8).
fn kernel_context_steps(i: &Incident, steps: &mut Vec<String>) {
    use crate::context::ContextKind;
    let has = |k: ContextKind| i.context.iter().any(|l| l.kind == k);
    if has(ContextKind::ConntrackFull) {
        steps.push("the node's conntrack table: conntrack -S (drops, insert_failed); sysctl net.netfilter.nf_conntrack_count net.netfilter.nf_conntrack_max (kube-proxy's conntrack.maxPerCore)".into());
    }
    if has(ContextKind::HungTask) {
        steps.push("the hung tasks' stacks in dmesg (the Call Trace after 'INFO: task …'); cat /proc/sys/kernel/hung_task_timeout_secs".into());
    }
    if has(ContextKind::NetdevWait) {
        steps.push("unregister_netdevice waits: a network namespace that cannot be freed (a kernel bug with some CNIs); uname -r against the distribution's fixed kernels".into());
    }
    if i.context.iter().any(|l| l.kind.is_disk()) {
        steps.push("mount | grep 'ro,' and dmesg -T | grep -iE 'I/O error|EXT4-fs|XFS' on the node; the disk's health (smartctl -a)".into());
    }
}

/// What to check for the incident's own cause.
fn steps_for_cause(i: &Incident, node: &str, steps: &mut Vec<String>) {
    if i.sandbox().is_some() {
        sandbox_steps(i, node, steps);
        return;
    }
    match i.cause() {
        Cause::ApiUnreachable => {
            steps.push(match i.api_endpoint() {
                Some(e) => format!("from the node: curl -sk https://{}/healthz", header_text(e, 270)),
                None => "from the node: curl -sk https://<api-server>:6443/healthz (the address is in the error lines)".into(),
            });
            steps.push("kubectl get --raw='/readyz?verbose' from a machine that reaches the API server; check its load balancer and firewall".into());
        }
        Cause::ApiTimeout => {
            if let Some(e) = i.api_endpoint() {
                steps.push(format!(
                    "from the node: time curl -sk https://{}/healthz",
                    header_text(e, 270)
                ));
            }
            steps.push("kubectl get --raw='/readyz?verbose'; API server load and latency (apiserver_request_duration_seconds)".into());
            steps.push("the network path from the node to the API server (MTU, packet loss)".into());
        }
        Cause::NodeMissing => {
            steps.push(format!("kubectl get node {node}: NotFound means the Node was deleted; systemctl restart kubelet on the node re-registers it"));
            steps.push("who deleted it: the API server audit log, cluster-autoscaler, the cloud controller manager".into());
        }
        Cause::Auth => {
            steps.push("openssl x509 -noout -dates -in /var/lib/kubelet/pki/kubelet-client-current.pem (on the node)".into());
            steps.push("kubectl get csr (pending kubelet client certificate requests)".into());
        }
        Cause::Etcd => steps.push("kubectl get --raw='/readyz/etcd'; etcdctl endpoint health".into()),
        Cause::Conflict => steps.push("other writers of the Node's status (controllers, admission webhooks)".into()),
        Cause::ListerLag => steps.push("usually nothing: the kubelet's informer catches up; if it repeats, API server watch latency".into()),
        Cause::Unknown => steps.push("read the evidence lines below and the kubelet's journal around them".into()),
        Cause::Swap => {
            steps.push("swapon --show (on the node): swap is on; swapoff -a and remove it from /etc/fstab".into());
            steps.push("or allow it: failSwapOn: false in /var/lib/kubelet/config.yaml (--fail-swap-on=false)".into());
        }
        Cause::CgroupDriver => {
            steps.push("grep cgroupDriver /var/lib/kubelet/config.yaml against the runtime's: containerd config (SystemdCgroup), docker info | grep -i cgroup".into());
        }
        Cause::Config => {
            steps.push("the config file and flags the fatal line names: /var/lib/kubelet/config.yaml, /var/lib/kubelet/kubeadm-flags.env, /etc/default/kubelet".into());
            steps.push("a missing /var/lib/kubelet/config.yaml before kubeadm init or join has written it is expected: the kubelet crash-loops until then".into());
        }
        Cause::Credentials => {
            steps.push("the paths the fatal line names: ls -l /etc/kubernetes/kubelet.conf /etc/kubernetes/bootstrap-kubelet.conf /var/lib/kubelet/pki/".into());
            steps.push("the join token's age: kubeadm token list (tokens expire after 24h by default)".into());
        }
        Cause::Expired | Cause::RotationFailing | Cause::Expiring => cert_steps(i, steps),
        Cause::IpExhausted | Cause::Image | Cause::Timeout => sandbox_steps(i, node, steps),
        Cause::Runtime => {
            steps.push("systemctl status containerd (or crio, docker) on the node".into());
            steps.push("crictl info: the runtime's socket answers and its CRI API matches the kubelet's".into());
        }
        Cause::PortInUse => steps.push("ss -ltnp | grep -E ':1025[0-9]' on the node: another kubelet or program holds the port".into()),
        Cause::Exec => steps.push("systemctl cat kubelet: the unit's ExecStart names a binary that is missing or not executable".into()),
        Cause::Watchdog => {
            steps.push("systemctl show kubelet -p WatchdogUSec -p NRestarts: the watchdog's limit and how often it killed the kubelet".into());
            steps.push("journalctl -u kubelet before each kill: its last health checks (PLEG, the runtime, the API server) and what it was doing when it stopped answering".into());
        }
        Cause::Killed => steps.push("journalctl -k on the node for the OOM killer (Out of memory: Killed process … kubelet) or who sent the signal".into()),
        Cause::Cni => {
            steps.push("ls -l /etc/cni/net.d /opt/cni/bin on the node: a network config and the plugin's binaries must be there".into());
            steps.push(format!("kubectl get pods -A -o wide --field-selector spec.nodeName={node} (the CNI's pods on the node: calico, cilium, flannel, weave… running and ready?)"));
        }
        Cause::Pleg => {
            steps.push("the runtime's latency: time crictl ps; time crictl pods (PLEG relists every second and needs an answer within 3 minutes)".into());
            steps.push("systemctl status containerd (or crio, docker); the number of containers on the node (crictl ps -a | wc -l) and the disk's I/O wait".into());
        }
        Cause::MemoryPressure => {
            steps.push("free -m on the node against the kubelet's eviction thresholds (evictionHard memory.available in /var/lib/kubelet/config.yaml)".into());
            steps.push(format!("kubectl describe node {node} (MemoryPressure condition, evicted pods)"));
        }
        Cause::DiskPressure => {
            steps.push("df -h and df -i on the node (/, /var/lib/kubelet, /var/lib/containerd) against evictionHard nodefs.available and imagefs.available".into());
            // Design 5.3: images that could not have freed it point
            // elsewhere.
            let gc = i.not_ready().and_then(|n| n.image_gc.as_ref()).map(|g| g.outcome);
            if gc == Some(crate::signals::GcOutcome::NotEnough) {
                steps.push("what fills the disk, since unused images cannot free it: du -xsh /var/lib/containerd /var/lib/kubelet/pods /var/log/pods /var/log/journal | sort -h; crictl stats (containers' writable layers)".into());
            } else {
                steps.push("crictl rmi --prune; journalctl --vacuum-size; the pods' emptyDir and log usage".into());
            }
        }
        Cause::PidPressure => {
            steps.push("ps -e --no-headers | wc -l against cat /proc/sys/kernel/pid_max on the node; evictionHard pid.available".into());
            steps.push("the pods with the most processes: ps -eo pid,comm,cgroup --sort=cgroup".into());
        }
        Cause::ReadonlyFs | Cause::HungTasks => kernel_steps(i, steps),
        Cause::Oom => {
            steps.push("the kubelet's memory against what is kept for it: kubeReserved and systemReserved in /var/lib/kubelet/config.yaml, and systemctl show kubelet -p MemoryCurrent -p MemoryMax".into());
            steps.push("the node's memory and limits: free -m, kubectl describe node (Allocatable against Capacity, pods' requests and limits), evictionHard memory.available".into());
        }
    }
}

/// A word safe to paste into a shell: node names are DNS names, anything
/// else is quoted.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", header_text(s, 253).replace('\'', "'\\''"))
    }
}

fn short_utc(us: Micros) -> String {
    crate::time::short(us)
}
