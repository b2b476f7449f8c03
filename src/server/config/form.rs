//! How the Config page shows and edits each key: one table over the whole schema, with the
//! kind of control a key takes (a switch, a choice of the words its enum accepts, a number in
//! its unit, text, a list). Its tests pin it to the schema: every key of the config appears
//! here once, each control fits its key's type, and every choice is a word the schema takes.

use crate::protocol::ConfigInput;

/// How one key is edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// true or false.
    Switch,
    /// One of these words (the enum's spellings in the file).
    Choice(&'static [&'static str]),
    /// A whole number, in this unit.
    Number(&'static str),
    /// A whole number in this unit, or the word `auto`.
    NumberOrAuto(&'static str),
    /// Free text.
    Text,
    /// A list of strings.
    List,
}

/// Every key of the config file with its control, in the file's order.
pub const FORM: &[(&str, Input)] = &[
    ("provider.kind", Input::Choice(&["demo", "openai"])),
    ("provider.base_url", Input::Text),
    ("provider.model", Input::Text),
    ("provider.api_key_env", Input::Text),
    ("provider.request_timeout_secs", Input::Number("seconds")),
    ("provider.max_retries", Input::Number("retries")),
    ("provider.context_tokens", Input::NumberOrAuto("tokens")),
    ("approvals.timeout_secs", Input::Number("seconds")),
    (
        "approvals.decision_timeout",
        Input::Choice(&["proceed_unapproved", "deny"]),
    ),
    (
        "approvals.default_mode",
        Input::Choice(&["plan", "ask", "auto_edit", "yolo"]),
    ),
    (
        "approvals.require_passkey",
        Input::Choice(&["off", "floor", "all"]),
    ),
    ("safety.paths", Input::List),
    ("safety.commands", Input::List),
    ("budget.max_tool_calls", Input::Number("calls")),
    ("budget.max_turn_secs", Input::Number("seconds")),
    ("budget.max_tokens", Input::Number("tokens")),
    ("storage.database_url", Input::Text),
    ("storage.synchronous", Input::Choice(&["full", "normal"])),
    ("tools.shell_timeout_secs", Input::Number("seconds")),
    ("tools.output_limit_bytes", Input::Number("bytes")),
    ("tools.max_parallel", Input::Number("calls at once")),
    ("tools.env_passthrough", Input::List),
    ("tools.sandbox.mode", Input::Choice(&["landlock", "off"])),
    ("tools.sandbox.network", Input::Choice(&["on", "off"])),
    ("tools.sandbox.extra_read", Input::List),
    ("tools.sandbox.extra_write", Input::List),
    ("server.public_url", Input::Text),
    ("notify.webhook_url", Input::Text),
    ("notify.format", Input::Choice(&["json", "ntfy", "slack"])),
    ("notify.push_test_endpoints", Input::Switch),
    ("review.mode", Input::Choice(&["off", "shadow", "on"])),
    ("review.reviewer", Input::Choice(&["history", "model"])),
    ("review.base_url", Input::Text),
    ("review.model", Input::Text),
    ("review.api_key_env", Input::Text),
    ("review.min_cards", Input::Number("cards")),
    ("review.min_agreement", Input::Number("share, 0.97 to 1")),
];

/// The control for `key`: from [`FORM`]; text for a key it does not name (the startup
/// settings shown beside the file's keys).
pub fn input_of(key: &str) -> Input {
    FORM.iter()
        .find(|(k, _)| *k == key)
        .map_or(Input::Text, |(_, input)| *input)
}

/// `key`'s control as the wire says it: the kind, the words it takes, its unit.
pub fn wire(key: &str) -> (ConfigInput, Vec<String>, Option<String>) {
    let words = |ws: &[&str]| ws.iter().map(|w| (*w).to_owned()).collect();
    match input_of(key) {
        Input::Switch => (ConfigInput::Switch, Vec::new(), None),
        Input::Choice(options) => (ConfigInput::Choice, words(options), None),
        Input::Number(unit) => (ConfigInput::Number, Vec::new(), Some(unit.to_owned())),
        Input::NumberOrAuto(unit) => (ConfigInput::Number, words(&["auto"]), Some(unit.to_owned())),
        Input::Text => (ConfigInput::Text, Vec::new(), None),
        Input::List => (ConfigInput::List, Vec::new(), None),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::server::config::{Config, keys};

    #[test]
    fn every_key_of_the_schema_has_one_control_and_no_other_key_does() {
        let schema: Vec<String> = keys::entries(&Config::default())
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let form: Vec<&str> = FORM.iter().map(|(k, _)| *k).collect();
        for key in &schema {
            assert_eq!(
                form.iter().filter(|k| *k == key).count(),
                1,
                "`{key}` needs one row in config::form::FORM"
            );
        }
        for key in &form {
            assert!(
                schema.iter().any(|k| k == key),
                "`{key}` is not a config key"
            );
        }
    }

    #[test]
    fn each_control_fits_its_keys_type() {
        let defaults = keys::entries(&Config::default());
        for (key, value) in defaults {
            let fits = match (input_of(&key), &value) {
                (Input::Switch, toml::Value::Boolean(_)) => true,
                (Input::Number(_), toml::Value::Integer(_) | toml::Value::Float(_)) => true,
                (Input::NumberOrAuto(_), toml::Value::String(s)) => s == "auto",
                (Input::Choice(_) | Input::Text, toml::Value::String(_)) => true,
                (Input::List, toml::Value::Array(_)) => true,
                _ => false,
            };
            assert!(fits, "`{key}`: {:?} does not fit {value}", input_of(&key));
        }
    }

    #[test]
    fn every_choice_is_a_word_the_schema_takes_and_nothing_else_is() {
        let path = Path::new("config.toml");
        for (key, input) in FORM {
            let Input::Choice(options) = input else {
                continue;
            };
            for word in *options {
                let value = toml::Value::String((*word).to_owned());
                assert!(
                    keys::with_key(&toml::Table::new(), key, value, path).is_ok(),
                    "`{key}` refuses its own choice {word:?}"
                );
            }
            let bogus = toml::Value::String("bogus".into());
            assert!(keys::with_key(&toml::Table::new(), key, bogus, path).is_err());
        }
    }

    #[test]
    fn numbers_say_their_unit_and_auto_is_offered_where_it_is_taken() {
        assert_eq!(
            wire("tools.shell_timeout_secs"),
            (ConfigInput::Number, vec![], Some("seconds".into()))
        );
        assert_eq!(
            wire("provider.context_tokens"),
            (
                ConfigInput::Number,
                vec!["auto".into()],
                Some("tokens".into())
            )
        );
        assert_eq!(wire("server.addr").0, ConfigInput::Text);
        for (key, input) in FORM {
            if let Input::Number(unit) | Input::NumberOrAuto(unit) = input {
                assert!(!unit.is_empty(), "`{key}` has no unit");
            }
        }
    }
}
