//! `[alert.alertmanager] urls`: an Alertmanager instance's URL, parsed when
//! the config is validated (so a bad one is refused at its line) and used
//! as parsed by the Alertmanager task.

use serde::{Serialize, Serializer};

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
    /// As the status shows it: scheme, host, port and prefix.
    #[must_use]
    pub fn shown(&self) -> String {
        format!(
            "{}://{}:{}{}",
            self.scheme(),
            self.host,
            self.port,
            self.prefix
        )
    }

    fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    /// As a config file says it: the scheme's own port left out, an IPv6
    /// host in brackets; [`parse_url`] reads it back the same.
    #[must_use]
    pub fn url(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default_port = if self.tls { 443 } else { 80 };
        let port = if self.port == default_port {
            String::new()
        } else {
            format!(":{}", self.port)
        };
        format!("{}://{host}{port}{}", self.scheme(), self.prefix)
    }
}

impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.url())
    }
}

/// `http://am-0:9093` or `https://am.example.com/alertmanager`.
pub(crate) fn parse_url(u: &str) -> Result<Endpoint, String> {
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

    #[test]
    fn a_url_reads_back_the_same() {
        for u in [
            "http://am-0:9093",
            "http://am-0",
            "https://am.example.com/alertmanager",
            "https://am.example.com:8443",
            "http://[::1]:9093/x",
        ] {
            let e = parse_url(u).unwrap();
            assert_eq!(e.url(), u);
            assert_eq!(parse_url(&e.url()).unwrap(), e);
        }
    }
}
