//! The kubelet's `--logging-format=json` (component-base/logs/json): `ts` in
//! float milliseconds, `caller`, `msg`, `v` on info entries only, `err` on
//! errors, then the call's key/values. There is no level field: an entry
//! without `v` is an error (`klog-format.md` section 4).

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{Body, Line, Severity};

/// `KObj` values are `{"name":"x","namespace":"y"}` in JSON; the text format
/// writes them as `y/x` or `x`, and so do we.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "not an incident kind: the variants not named all take one path"
)]
fn flatten(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) if o.contains_key("name") && o.len() <= 2 => {
            let name = o.get("name").and_then(Value::as_str).unwrap_or_default();
            match o.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
                _ => name.to_string(),
            }
        }
        other => other.to_string(),
    }
}

/// `None` when the text is not a JSON-format kubelet entry.
#[must_use]
pub fn parse(text: &str) -> Option<Line<'_>> {
    let map: Map<String, Value> = serde_json::from_str(text.trim_end()).ok()?;
    let msg = map.get("msg")?.as_str()?.to_string();
    if !(map.contains_key("ts") || map.contains_key("caller")) {
        return None;
    }
    let ts = map
        .get("ts")
        .and_then(Value::as_f64)
        .map(|ms| (ms * 1_000.0).round() as i64);
    let severity = if map.contains_key("v") {
        Severity::Info
    } else {
        Severity::Error
    };
    let source = map
        .get("caller")
        .and_then(Value::as_str)
        .map(|c| Cow::Owned(c.to_string()));
    let kv = map
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "ts" | "caller" | "msg" | "v"))
        .map(|(k, v)| (Cow::Owned(k.clone()), Cow::Owned(flatten(v))))
        .collect();
    Some(Line {
        severity: Some(severity),
        wall: None,
        ts,
        pid: None,
        source,
        body: Body::Structured {
            msg: Cow::Owned(msg),
            kv: crate::parse::Pairs::parsed(kv),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_and_error_entries() {
        let l = parse(r#"{"ts":1753121331919.7622,"caller":"app/server.go:520","msg":"Kubelet version","v":0,"kubeletVersion":"v1.32.4"}"#).unwrap();
        assert_eq!(l.severity, Some(Severity::Info));
        assert_eq!(l.ts, Some(1_753_121_331_919_762));
        assert_eq!(l.value("kubeletVersion"), Some("v1.32.4"));
        let l = parse(r#"{"ts":1.5,"caller":"kubelet/kubelet_node_status.go:540","msg":"Successfully registered node","v":0,"node":{"name":"w1"}}"#).unwrap();
        assert_eq!(l.value("node"), Some("w1"));
        let l = parse(r#"{"ts":2,"caller":"x.go:1","msg":"Error updating node status, will retry","err":"error getting node \"w1\": node \"w1\" not found"}"#).unwrap();
        assert_eq!(l.severity, Some(Severity::Error));
        assert_eq!(
            l.value("err"),
            Some(r#"error getting node "w1": node "w1" not found"#)
        );
        assert!(parse(r#"{"MESSAGE":"x"}"#).is_none());
        assert!(parse("{").is_none());
    }
}
