//! The agents' published hook-input schemas (JSON Schema, draft 07, as Codex ships them and as
//! `tests/fixtures/external/README.md` says the others were written from their bundles), made
//! into payloads: every value each field may take, one field at a time, around a payload with
//! every field and one with only the required ones. A small checker of the same schemas makes
//! sure every payload made is one the agent may send.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::common::fixture;

/// A field the schemas do not name, which the agents may add in a later version.
const FUTURE_FIELD: &str = "added_in_a_later_version";

pub struct Schema {
    pub path: String,
    root: Value,
}

impl Schema {
    /// A schema under `tests/fixtures/external/`.
    pub fn load(path: &str) -> Schema {
        Schema {
            path: path.to_owned(),
            root: fixture(path),
        }
    }

    /// Every payload made from the schema, each checked against it.
    pub fn instances(&self) -> Vec<Value> {
        let root = self.resolve(&self.root);
        let mut made = self.object_instances(root, true);
        let mut seen = BTreeSet::new();
        made.retain(|v| seen.insert(v.to_string()));
        for v in &made {
            if let Err(e) = self.check(v) {
                panic!(
                    "{}: made a payload the schema refuses ({e}): {v}",
                    self.path
                );
            }
        }
        made
    }

    /// Whether `value` is one the schema allows, or the first reason it is not.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        self.check_at(&self.root, value, "$")
    }

    fn resolve<'a>(&'a self, mut schema: &'a Value) -> &'a Value {
        while let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference
                .strip_prefix("#/definitions/")
                .unwrap_or_else(|| panic!("{}: unsupported $ref {reference}", self.path));
            schema = &self.root["definitions"][name];
            assert!(!schema.is_null(), "{}: no definition {name}", self.path);
        }
        schema
    }

    /// An object's payloads: every property at its first value, only the required ones, then
    /// (at the top) every other value of each property in turn, each optional one left out in
    /// turn, and a field the schema does not name where it allows one.
    fn object_instances(&self, schema: &Value, top: bool) -> Vec<Value> {
        let props = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let values: Vec<(String, Vec<Value>)> = props
            .iter()
            .map(|(name, s)| (name.clone(), self.values(s, name)))
            .collect();
        let full: Map<String, Value> = values
            .iter()
            .map(|(name, vs)| (name.clone(), vs[0].clone()))
            .collect();
        let minimal: Map<String, Value> = full
            .iter()
            .filter(|(name, _)| required.contains(name.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut made = vec![Value::Object(full.clone()), Value::Object(minimal)];
        if !top {
            return made;
        }
        for (name, vs) in &values {
            for v in &vs[1..] {
                let mut one = full.clone();
                one.insert(name.clone(), v.clone());
                made.push(Value::Object(one));
            }
            if !required.contains(name.as_str()) {
                let mut without = full.clone();
                without.remove(name);
                made.push(Value::Object(without));
            }
        }
        if schema["additionalProperties"] != json!(false) {
            let mut more = full;
            more.insert(FUTURE_FIELD.into(), json!({"nested": [1, "two", null]}));
            made.push(Value::Object(more));
        }
        made
    }

    /// Every value a sub-schema allows that a payload should be tried with; the first is the
    /// ordinary one.
    fn values(&self, schema: &Value, name: &str) -> Vec<Value> {
        if schema == &json!(true) {
            // Anything: the shapes an agent's tool input takes, and what it might not.
            return vec![
                json!({"command": "echo hello", "description": "say hello"}),
                json!({}),
                json!({"nested": {"deep": [1, 2]}, "flag": true}),
                Value::Null,
                json!("text"),
                json!(7),
                json!([1, "two"]),
            ];
        }
        let schema = self.resolve(schema);
        if let Some(one) = schema.get("const") {
            return vec![one.clone()];
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return values.clone();
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(branches) = schema.get(key).and_then(Value::as_array) {
                let branches = if key == "allOf" {
                    &branches[..1]
                } else {
                    &branches[..]
                };
                return branches.iter().flat_map(|b| self.values(b, name)).collect();
            }
        }
        match &schema["type"] {
            Value::Array(types) => types
                .iter()
                .flat_map(|t| {
                    let mut one = schema.clone();
                    one["type"] = t.clone();
                    self.values(&one, name)
                })
                .collect(),
            Value::String(t) => self.values_of_type(schema, t, name),
            _ if schema.get("properties").is_some() => self.object_instances(schema, false),
            other => panic!("{}: no values for {name}: {other}", self.path),
        }
    }

    fn values_of_type(&self, schema: &Value, kind: &str, name: &str) -> Vec<Value> {
        match kind {
            "null" => vec![Value::Null],
            "string" => match schema.get("examples").and_then(Value::as_array) {
                Some(examples) => examples.clone(),
                None => vec![json!(format!("{name}-1"))],
            },
            "integer" => vec![json!(1_700_000_000_000_u64)],
            "number" => vec![json!(1_700_000_000_000_u64), json!(12.5)],
            "boolean" => vec![json!(true), json!(false)],
            "array" => {
                let item = match schema.get("items") {
                    Some(items) => self.values(items, name),
                    None => vec![json!("item")],
                };
                vec![json!([item[0].clone()]), json!([]), Value::Array(item)]
            }
            "object" if schema.get("properties").is_none() => {
                vec![json!({"command": "ls -la"}), json!({})]
            }
            "object" => self.object_instances(schema, false),
            other => panic!("{}: unknown type {other} for {name}", self.path),
        }
    }

    fn check_at(&self, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
        if let Value::Bool(allowed) = schema {
            return if *allowed {
                Ok(())
            } else {
                Err(format!("{at}: nothing is allowed"))
            };
        }
        let schema = self.resolve(schema);
        if let Some(one) = schema.get("const")
            && one != value
        {
            return Err(format!("{at}: not {one}"));
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array)
            && !values.contains(value)
        {
            return Err(format!("{at}: {value} is not one of {values:?}"));
        }
        self.check_combinations(schema, value, at)?;
        if let Some(kind) = schema.get("type") {
            let kinds: Vec<&str> = match kind {
                Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
                Value::String(one) => vec![one.as_str()],
                _ => vec![],
            };
            if !kinds.iter().any(|k| is_type(value, k)) {
                return Err(format!("{at}: {value} is not {kinds:?}"));
            }
        }
        match value {
            Value::Object(fields) => self.check_object(schema, fields, at),
            Value::Array(items) => match schema.get("items") {
                Some(item) => items
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, v)| self.check_at(item, v, &format!("{at}[{i}]"))),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn check_combinations(&self, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
        let passes = |key: &str| -> Option<usize> {
            let branches = schema.get(key)?.as_array()?;
            Some(
                branches
                    .iter()
                    .filter(|b| self.check_at(b, value, at).is_ok())
                    .count(),
            )
        };
        let count = |key: &str| schema.get(key).and_then(Value::as_array).map(Vec::len);
        if let (Some(ok), Some(all)) = (passes("allOf"), count("allOf"))
            && ok != all
        {
            return Err(format!("{at}: fails allOf"));
        }
        if passes("anyOf") == Some(0) {
            return Err(format!("{at}: fails every anyOf"));
        }
        if let Some(ok) = passes("oneOf")
            && ok != 1
        {
            return Err(format!("{at}: passes {ok} oneOf branches, not 1"));
        }
        Ok(())
    }

    fn check_object(
        &self,
        schema: &Value,
        fields: &Map<String, Value>,
        at: &str,
    ) -> Result<(), String> {
        let props = schema["properties"].as_object();
        for name in schema["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if !fields.contains_key(name) {
                return Err(format!("{at}: `{name}` is required"));
            }
        }
        for (name, v) in fields {
            let here = format!("{at}.{name}");
            let field = props
                .and_then(|p| p.get(name))
                .or_else(|| schema.get("additionalProperties"));
            if let Some(field) = field {
                self.check_at(field, v, &here)?;
            }
        }
        Ok(())
    }
}

fn is_type(value: &Value, kind: &str) -> bool {
    match kind {
        "null" => value.is_null(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// Every schema file in a folder under `tests/fixtures/external/`.
pub fn schemas_in(dir: &str) -> Vec<Schema> {
    crate::common::fixtures_ending(dir, ".schema.json")
        .iter()
        .map(|path| Schema::load(path))
        .collect()
}

#[test]
fn the_checker_refuses_what_the_schemas_refuse() {
    // So a payload it passes is one the agent may send, not one a lax checker let through.
    let codex = Schema::load("codex/schema/0.171.0/permission-request.command.input.schema.json");
    let good = codex.instances().remove(0);
    assert_eq!(codex.check(&good), Ok(()));
    for (field, bad) in [
        ("transcript_path", json!(7)),
        ("permission_mode", json!("yolo")),
        ("hook_event_name", json!("PreToolUse")),
        (FUTURE_FIELD, json!(1)),
    ] {
        let mut wrong = good.clone();
        wrong[field] = bad;
        assert!(codex.check(&wrong).is_err(), "{field}: {wrong}");
    }
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("turn_id");
    assert!(codex.check(&missing).is_err());
    let mut null_path = good;
    null_path["transcript_path"] = Value::Null;
    assert_eq!(codex.check(&null_path), Ok(()), "the schema allows null");
    // The payloads made cover each value a field may take.
    let made = codex.instances();
    assert!(made.iter().any(|v| v["transcript_path"].is_null()));
    assert!(made.iter().any(|v| v["transcript_path"].is_string()));
    assert!(made.iter().any(|v| v["tool_input"].is_null()));
    let modes: BTreeSet<&str> = made
        .iter()
        .filter_map(|v| v["permission_mode"].as_str())
        .collect();
    assert_eq!(modes.len(), 5, "{modes:?}");
    let earlier =
        Schema::load("codex/schema/earlier/permission-request.command.input.04294e0.schema.json");
    assert!(
        earlier
            .instances()
            .iter()
            .any(|v| v["tool_name"] == "NetworkAccess")
    );
}
