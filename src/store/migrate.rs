//! Stored incidents from before schema 3, moved to the current layout.
//!
//! Schema 2 (kubelet-sentinel 0.1.0 up to 502b51b) kept one flat incident
//! for every kind: the node-status counters on every incident, and each
//! kind's own data in an optional field (`down`, `last_entry_at`, `nodes`,
//! `covered_by`), with `kind` saying which. Schema 3 keeps what every kind
//! has in the incident and the kind's own data in `detail`, one variant per
//! kind. The move reads `kind` (never which fields are set), so it is the
//! same for every record, and it is idempotent: a record that already has
//! its `detail` is left as it is, so a move cut short by a crash is simply
//! done again at the next open.

use serde_json::{Map, Value};

/// The node-status counters of schema 2, every incident's.
const COUNTERS: [&str; 6] = [
    "retries",
    "exhausted",
    "lister_misses",
    "register_failures",
    "lease_failures",
    "watch_failures",
];

/// Why a stored incident could not be moved.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(super) enum Unmovable {
    #[error("it is not a JSON object")]
    NotAnObject,
    #[error("its kind {0:?} is none this version knows")]
    Kind(String),
}

/// Moves one schema-2 incident (a JSON object) to schema 3, in place.
pub(super) fn incident_to_3(v: &mut Value) -> Result<(), Unmovable> {
    let Value::Object(o) = v else {
        return Err(Unmovable::NotAnObject);
    };
    if o.contains_key("detail") {
        return Ok(());
    }
    // Incidents stored before kinds existed are node-status ones.
    let kind = match o.remove("kind") {
        Some(Value::String(k)) => k,
        None | Some(Value::Null) => "node-status".to_string(),
        Some(other) => return Err(Unmovable::Kind(other.to_string())),
    };
    let mut counters = Map::new();
    for c in COUNTERS {
        counters.insert(c.into(), o.remove(c).unwrap_or(Value::from(0)));
    }
    let caches_synced_at = o.remove("caches_synced_at");
    let non_lister_trouble = o.remove("non_lister_trouble");
    let api_endpoint = o.remove("api_endpoint");
    let covered_by = o.remove("covered_by");
    let down = o.remove("down");
    let last_entry_at = o.remove("last_entry_at");
    let nodes = o.remove("nodes");
    let present = |v: Option<Value>| v.filter(|v| !v.is_null());
    let detail = match kind.as_str() {
        "node-status" => {
            let mut n = counters;
            if let Some(c) = present(caches_synced_at) {
                n.insert("caches_synced_at".into(), c);
            }
            n.insert(
                "non_lister_trouble".into(),
                present(non_lister_trouble).unwrap_or(Value::from(0)),
            );
            if let Some(e) = present(api_endpoint) {
                n.insert("api_endpoint".into(), e);
            }
            if let Some(c) = present(covered_by) {
                n.insert("covered_by".into(), c);
            }
            Value::Object(n)
        }
        "kubelet-down" => present(down).unwrap_or_else(|| Value::Object(Map::new())),
        "host-silent" => {
            let at = present(last_entry_at)
                .or_else(|| o.get("opened_at").cloned())
                .unwrap_or(Value::from(0));
            Value::Object(Map::from_iter([("last_entry_at".to_string(), at)]))
        }
        "endpoint" => {
            let endpoint = present(api_endpoint)
                .or_else(|| o.get("node").cloned())
                .unwrap_or_else(|| Value::from(""));
            let nodes = present(nodes).unwrap_or_else(|| Value::Array(Vec::new()));
            Value::Object(Map::from_iter([
                ("endpoint".to_string(), endpoint),
                ("nodes".to_string(), nodes),
            ]))
        }
        other => return Err(Unmovable::Kind(other.to_string())),
    };
    o.insert(
        "detail".into(),
        Value::Object(Map::from_iter([(kind, detail)])),
    );
    Ok(())
}

/// Moves the incidents a schema-1 or schema-2 pipeline state holds (the
/// endpoint incidents with their groups; schema 1's open incidents too).
pub(super) fn state_to_3(state: &mut Value) -> Result<(), Unmovable> {
    let Some(tracker) = state.get_mut("tracker").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if let Some(Value::Object(open)) = tracker.get_mut("open") {
        for i in open.values_mut() {
            incident_to_3(i)?;
        }
    }
    if let Some(Value::Object(groups)) = tracker.get_mut("fleet_groups") {
        for g in groups.values_mut() {
            if let Some(Value::Array(outages)) = g.get_mut("outages") {
                for i in outages {
                    incident_to_3(i)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sentinel_core::tracker::{Detail, Incident, IncidentKind};

    fn legacy(kind: Option<&str>, extra: &[(&str, Value)]) -> Value {
        let mut v = serde_json::json!({
            "id": "0123456789ab", "node": "w1", "host": "w1",
            "opened_at": 1, "last_signal_at": 2, "last_trouble_at": 2,
            "resolved_at": null, "resolution": null,
            "retries": 7, "exhausted": 1, "lister_misses": 0, "register_failures": 2,
            "lease_failures": 0, "watch_failures": 0,
            "over_threshold_at": null, "last_alert_at": null, "alerted_at": null,
            "announced": false, "anchor": null, "caches_synced_at": null,
            "first_trouble": "status-retry", "causes": {"auth": 7},
            "non_lister_trouble": 7, "recent": [], "evidence_head": [],
            "evidence_tail": [], "evidence_dropped": 0
        });
        if let Some(k) = kind {
            v["kind"] = Value::from(k);
        }
        for (k, x) in extra {
            v[*k] = x.clone();
        }
        v
    }

    fn moved(mut v: Value) -> Incident {
        incident_to_3(&mut v).unwrap();
        // Twice changes nothing.
        let once = v.clone();
        incident_to_3(&mut v).unwrap();
        assert_eq!(v, once);
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn every_kind_moves_by_its_kind() {
        let i = moved(legacy(None, &[("api_endpoint", "10.0.0.1:6443".into())]));
        assert_eq!(i.kind(), IncidentKind::NodeStatus);
        assert_eq!(i.counters().retries, 7);
        assert_eq!(i.counted_retries(), 9);
        assert_eq!(i.api_endpoint(), Some("10.0.0.1:6443"));
        let i = moved(legacy(
            Some("kubelet-down"),
            &[(
                "down",
                serde_json::json!({"restarts": 3, "exits": 3, "fatals": 3, "last_exit": null,
                    "last_fatal": null, "pending": null, "crash_loop_at": null,
                    "gave_up_at": null, "exit_cause": null, "last_cause": null,
                    "first_restart_at": null}),
            )],
        ));
        assert_eq!(i.restarts(), 3);
        // Its node-status zeros are not kept.
        assert_eq!(i.counted_retries(), 0);
        let i = moved(legacy(Some("host-silent"), &[("last_entry_at", 5.into())]));
        assert!(matches!(&i.detail, Detail::HostSilent(h) if h.last_entry_at == 5));
        let i = moved(legacy(
            Some("endpoint"),
            &[
                ("api_endpoint", "10.0.0.1:6443".into()),
                ("nodes", serde_json::json!(["a", "b", "c"])),
            ],
        ));
        assert_eq!(i.nodes(), ["a", "b", "c"]);
        assert_eq!(i.api_endpoint(), Some("10.0.0.1:6443"));
    }

    #[test]
    fn an_unknown_kind_is_an_error_that_names_it() {
        let mut v = legacy(Some("not-a-kind"), &[]);
        assert_eq!(
            incident_to_3(&mut v),
            Err(Unmovable::Kind("not-a-kind".into()))
        );
    }
}
