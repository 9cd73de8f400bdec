//! Delivery to an Alertmanager cluster (its HTTP API v2, design section 6).
//!
//! Alerts go to every configured instance, as Prometheus sends them: the
//! instances share what they notified (their gossip), so one accepting an
//! alert is enough for it to be delivered. An outbox entry (written with the
//! incident change that raised it, like an email's) goes once one instance
//! accepted it; until then it is retried with its own backoff, apart from
//! email. While an incident is firing, its alert is also posted again every
//! `resend_interval` and says it ends four intervals later: an Alertmanager
//! that restarted (it keeps no alerts on disk) has it back within one
//! interval, and one that stops hearing of it lets it end by itself. The
//! resolved alert carries `endsAt`, the time the incident resolved.
//!
//! An alert's labels say what it is about and stay the same for the whole
//! incident (`alertname`, `node`, `host`, `cause`, `verdict`, `severity`,
//! and `[alert.alertmanager] labels`): per-node instances and a collector
//! reporting the same trouble post the same alert, which the Alertmanager
//! deduplicates; its routes group and silence them. When an incident's
//! cause changes, the alert under the old labels is ended.
//!
//! `alerts.rs` makes the JSON (pure); `task.rs` posts it.

mod alerts;
mod task;

pub use alerts::{ALERTNAME, ALERTNAME_DOWN, HEARTBEAT, alert, heartbeat, labels};
pub use task::AlertmanagerTask;

/// One Alertmanager instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// A route prefix (`--web.route-prefix`), without the trailing slash.
    pub prefix: String,
}

impl Endpoint {
    fn shown(&self) -> String {
        format!(
            "{}://{}:{}{}",
            if self.tls { "https" } else { "http" },
            self.host,
            self.port,
            self.prefix
        )
    }
}

/// `http://am-0:9093` or `https://am.example.com/alertmanager`.
pub fn parse_url(u: &str) -> Result<Endpoint, String> {
    let bad = |why: &str| format!("{u:?} {why}");
    let (tls, rest) = if let Some(r) = u.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = u.strip_prefix("https://") {
        (true, r)
    } else {
        return Err(bad("is not an http:// or https:// URL"));
    };
    if rest.contains(['?', '#', '@']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("has a query, a fragment, credentials or spaces"));
    }
    let (authority, path) = match rest.find('/') {
        Some(n) => (&rest[..n], rest[n..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("has an unclosed [IPv6]"))?;
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("names no host"));
    }
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| bad("has a bad port"))?,
        None if tls => 443,
        None => 80,
    };
    Ok(Endpoint {
        tls,
        host,
        port,
        prefix: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("http://am-0:9093").unwrap(),
            Endpoint {
                tls: false,
                host: "am-0".into(),
                port: 9093,
                prefix: String::new()
            }
        );
        let e = parse_url("https://am.example.com/alertmanager/").unwrap();
        assert_eq!(
            (e.tls, e.port, e.prefix.as_str()),
            (true, 443, "/alertmanager")
        );
        assert_eq!(parse_url("http://[::1]:9093").unwrap().host, "::1");
        for bad in [
            "am:9093",
            "ftp://x",
            "http://",
            "http://x:99999",
            "http://u:p@x",
            "http://x/?a",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
