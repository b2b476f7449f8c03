//! Helpers over the protocol's JSON: a snapshot's events, filters by type, call or gate, and
//! the shape checks for ids, times, sessions and events.

use serde_json::Value;

/// The snapshot's events.
pub fn events(snap: &Value) -> Vec<Value> {
    snap["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events in {snap}"))
        .clone()
}

/// The snapshot's cursor (the last stored seq).
pub fn cursor(snap: &Value) -> u64 {
    snap["cursor"].as_u64().expect("cursor")
}

/// The events of one turn, in log order.
pub fn turn_events(snap: &Value, turn_id: &str) -> Vec<Value> {
    events(snap)
        .into_iter()
        .filter(|e| e["turn_id"] == turn_id)
        .collect()
}

pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            e["type"]
                .as_str()
                .unwrap_or_else(|| panic!("an event without a type: {e}"))
                .to_owned()
        })
        .collect()
}

pub fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

/// The events of one type, in log order.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The single event of this type; panics if there are none or several.
#[track_caller]
pub fn only<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    let found = of_type(events, kind);
    assert_eq!(
        found.len(),
        1,
        "expected exactly one {kind}; events: {events:#?}"
    );
    found[0]
}

/// Events with seq greater than `after`.
pub fn after(events: &[Value], after: u64) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["seq"].as_u64().unwrap_or(0) > after)
        .cloned()
        .collect()
}

/// Events of one type for one call.
pub fn for_call(events: &[Value], kind: &str, call_id: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind && e["call_id"] == call_id)
        .cloned()
        .collect()
}

/// Resolutions of one gate.
pub fn resolutions(events: &[Value], aid: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "approval_resolved" && e["approval_id"] == aid)
        .cloned()
        .collect()
}

/// Asserts the seqs are exactly 1..=n.
#[track_caller]
pub fn assert_contiguous(events: &[Value]) {
    let want: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(seqs(events), want, "seqs are not 1..=n");
}

/// A string field; panics naming the key when it is missing or not a string.
#[track_caller]
pub fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

/// An id field, owned.
#[track_caller]
pub fn id_of(v: &Value, key: &str) -> String {
    str_of(v, key).to_owned()
}

/// A card's approval id.
#[track_caller]
pub fn aid(gate: &Value) -> String {
    id_of(gate, "approval_id")
}

/// Sorted strings of a JSON array.
pub fn sorted_strs(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect();
    out.sort();
    out
}

pub fn sorted(items: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    out.sort();
    out
}

/// The sorted keys of a JSON object.
pub fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort();
    k
}

pub fn parse_time(s: &str) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("{s:?} is not RFC 3339: {e}"))
}

#[track_caller]
pub fn assert_uuid_v4(s: &str) {
    let u = uuid::Uuid::parse_str(s).unwrap_or_else(|e| panic!("{s:?} is not a UUID: {e}"));
    assert_eq!(u.get_version_num(), 4, "{s} is not v4");
    assert_eq!(u.hyphenated().to_string(), s, "not canonical lowercase");
}

#[track_caller]
pub fn assert_rfc3339_utc(s: &str) {
    let t = parse_time(s);
    assert_eq!(t.offset().local_minus_utc(), 0, "{s} is not UTC");
}

/// Checks the shape of a Session object.
#[track_caller]
pub fn assert_session_shape(s: &Value) {
    assert_eq!(
        keys(s),
        vec![
            "approval_mode",
            "created_at",
            "id",
            "pending_approvals",
            "running_turn_id",
            "title"
        ],
        "{s}"
    );
    assert_uuid_v4(s["id"].as_str().unwrap());
    assert_rfc3339_utc(s["created_at"].as_str().unwrap());
    assert!(s["title"].is_string(), "{s}");
    assert!(s["pending_approvals"].is_u64(), "{s}");
    assert!(
        ["plan", "ask", "auto_edit", "yolo"].contains(&s["approval_mode"].as_str().unwrap()),
        "{s}"
    );
}

/// Checks the common shape of a stored event: seq, type, at.
#[track_caller]
pub fn assert_event_shape(e: &Value) {
    assert!(e["seq"].as_u64().is_some_and(|s| s >= 1), "{e}");
    assert!(e["type"].is_string(), "{e}");
    assert_rfc3339_utc(e["at"].as_str().unwrap_or_else(|| panic!("no at: {e}")));
}

/// A random session id that does not exist.
pub fn unknown_sid() -> String {
    uuid::Uuid::new_v4().to_string()
}
