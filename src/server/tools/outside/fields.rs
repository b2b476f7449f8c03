//! One outside call's input read through its tool's spec: each field's role, the fields the
//! catalog does not know, and what cannot be told from the input alone (two paths, two
//! commands): every string an agent may act on is somewhere here.

use serde_json::Value;

use super::catalog::{self, Role, Spec};
use super::paths;

/// An input, field by field.
pub struct Fields<'a> {
    /// The tool's spec; `None` when the catalog does not know the tool.
    pub spec: Option<&'static Spec>,
    known: Vec<(&'a str, Role, &'a Value)>,
    /// Fields the tool's spec does not list that hold a string (at any depth).
    unknown: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    /// Reads `input` as a call of `tool`. opencode's `metadata` (its permission's details) is
    /// read as if its fields were the call's own, unless the tool itself has a `metadata`.
    pub fn read(tool: &str, input: &'a Value) -> Fields<'a> {
        let spec = catalog::spec(tool);
        let reading = spec.unwrap_or(&catalog::UNKNOWN);
        let mut fields = Fields {
            spec,
            known: Vec::new(),
            unknown: Vec::new(),
        };
        let Some(object) = input.as_object() else {
            return fields;
        };
        let nested = object
            .get("metadata")
            .filter(|_| reading.role("metadata").is_none())
            .and_then(Value::as_object);
        let top = object
            .iter()
            .filter(|(k, _)| nested.is_none() || *k != "metadata");
        for (key, value) in top.chain(nested.into_iter().flatten()) {
            match reading.role(key) {
                Some(role) => fields.known.push((key.as_str(), role, value)),
                None if holds_text(value) => fields.unknown.push(key.as_str()),
                None => {}
            }
        }
        fields
    }

    /// The non-empty strings of the fields with `role` (a list's too), with their field's name.
    pub fn strings(&self, role: Role) -> Vec<(&'a str, &'a str)> {
        self.known
            .iter()
            .filter(|(_, r, _)| *r == role)
            .flat_map(|(key, _, value)| match value {
                Value::String(s) => vec![(*key, s.as_str())],
                Value::Array(items) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| (*key, s))
                    .collect(),
                _ => Vec::new(),
            })
            .filter(|(_, s)| !s.trim().is_empty())
            .collect()
    }

    /// The first string of a field with `role`.
    pub fn first(&self, role: Role) -> Option<&'a str> {
        self.strings(role).first().map(|(_, s)| *s)
    }

    /// The values of the fields with `role`, whatever their type.
    pub fn values(&self, role: Role) -> impl Iterator<Item = &'a Value> + '_ {
        self.known
            .iter()
            .filter(move |(_, r, _)| *r == role)
            .map(|(_, _, value)| *value)
    }

    /// Every string inside the fields with `role`, at any depth.
    pub fn nested_strings(&self, role: Role) -> Vec<&'a str> {
        let mut out = Vec::new();
        for value in self.values(role) {
            strings_in(value, &mut out);
        }
        out.into_iter().filter(|s| !s.trim().is_empty()).collect()
    }

    /// Why the tool cannot be read at all: the catalog does not know it.
    pub fn unknown_tool(&self, tool: &str) -> Option<String> {
        self.spec.is_none().then(|| {
            format!(
                "is `{tool}`, a tool Countersign's catalog does not know: what it reads, writes or runs cannot be told from its input, so it asks in every mode (a standing rule for `{tool}` answers it)"
            )
        })
    }

    /// Why this input cannot be read the way the agent will act on it, if it cannot: a field
    /// is unknown, or two fields say different things the agent acts on one of (two paths,
    /// two commands); `cwd` resolves relative paths. (An unknown tool: [`unknown_tool`].)
    ///
    /// [`unknown_tool`]: Self::unknown_tool
    pub fn unreadable(&self, tool: &str, cwd: Option<&str>) -> Option<String> {
        self.spec?;
        self.two_paths(cwd)
            .or_else(|| self.two_of(&[Role::Command], "commands"))
            .or_else(|| self.two_of(&[Role::ShellInput], "texts to type"))
            .or_else(|| self.two_of(&[Role::Patch], "patches"))
            .or_else(|| self.two_of(&[Role::Target], "targets"))
            .or_else(|| self.two_of(&[Role::Program], "programs"))
            .or_else(|| {
                let names = self.unknown.iter().map(|k| format!("`{k}`"));
                let names: Vec<String> = names.collect();
                (!names.is_empty()).then(|| {
                    format!(
                        "carries {} that `{tool}` does not have in Countersign's catalog: what the agent does with it cannot be read, so it always asks",
                        names.join(", ")
                    )
                })
            })
    }

    /// Two path fields that name different paths: which one the agent acts on cannot be told.
    /// A container (opencode's `parentDir`) may hold the path.
    fn two_paths(&self, cwd: Option<&str>) -> Option<String> {
        let normal = |s: &str| paths::normalize(s, cwd);
        let named: Vec<(&str, String)> = [Role::Path, Role::Root, Role::Tree]
            .iter()
            .flat_map(|role| self.strings(*role))
            .map(|(key, value)| (key, normal(value)))
            .collect();
        let distinct = distinct(named.iter().map(|(k, v)| (*k, v.as_str())));
        if distinct.len() > 1 {
            return Some(two(&distinct, "paths", "acts on"));
        }
        let path: Option<&str> = distinct.first().map(|(_, v)| *v);
        self.strings(Role::Container)
            .into_iter()
            .find(|(_, dir)| {
                let dir = normal(dir);
                path.is_some_and(|p| p != dir && !p.starts_with(&format!("{dir}/")))
            })
            .map(|(key, dir)| {
                format!(
                    "carries the folder `{key}`: {dir}, which does not hold its path {}, and which one the agent acts on cannot be told, so it always asks",
                    path.unwrap_or_default()
                )
            })
    }

    /// Two fields of these roles with different values.
    fn two_of(&self, roles: &[Role], what: &str) -> Option<String> {
        let values = roles
            .iter()
            .flat_map(|role| self.values(*role).zip(self.keys(*role)))
            .filter_map(|(value, key)| match value {
                Value::String(s) if !s.trim().is_empty() => Some((key, s.trim().to_owned())),
                Value::Array(_) | Value::Object(_) => Some((key, value.to_string())),
                _ => None,
            })
            .collect::<Vec<_>>();
        let distinct = distinct(values.iter().map(|(k, v)| (*k, v.as_str())));
        (distinct.len() > 1).then(|| two(&distinct, what, "uses"))
    }

    fn keys(&self, role: Role) -> impl Iterator<Item = &'a str> + '_ {
        self.known
            .iter()
            .filter(move |(_, r, _)| *r == role)
            .map(|(key, _, _)| *key)
    }
}

/// The first field of each different value.
fn distinct<'v>(pairs: impl Iterator<Item = (&'v str, &'v str)>) -> Vec<(&'v str, &'v str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for (key, value) in pairs {
        if !out.iter().any(|(_, v)| *v == value) {
            out.push((key, value));
        }
    }
    out
}

fn two(distinct: &[(&str, &str)], what: &str, verb: &str) -> String {
    let shown: Vec<String> = distinct
        .iter()
        .map(|(k, v)| format!("`{k}`: {}", crate::text::truncate(v, 80)))
        .collect();
    format!(
        "carries two {what} ({}), and which one the agent {verb} cannot be told, so it always asks",
        shown.join("; ")
    )
}

/// Whether a value holds a string anywhere.
fn holds_text(value: &Value) -> bool {
    match value {
        Value::String(_) => true,
        Value::Array(items) => items.iter().any(holds_text),
        Value::Object(map) => map.values().any(holds_text),
        _ => false,
    }
}

/// Every string in `value`, at any depth (an unknown tool's input: any of them may be a path,
/// a command or what it writes).
pub fn every_string(value: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    strings_in(value, &mut out);
    out
}

fn strings_in<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_in(v, out)),
        _ => {}
    }
}
