//! What the two MCP tools answer, as the JSON text their callers parse.

use serde_json::{Value, json};

use crate::external::verdict::Verdict;

/// `approval_prompt`'s text: Claude Code's `--permission-prompt-tool` result. `updatedInput` is
/// always present (older Claude Code versions crash without it): the edit, else the input echoed.
pub fn approval_prompt_text(verdict: &Verdict, input: &Value) -> String {
    match &verdict.for_object_input() {
        Verdict::Allow { updated_input, .. } => json!({
            "behavior": "allow",
            "updatedInput": updated_input.clone().unwrap_or_else(|| input.clone()),
        }),
        Verdict::Deny { message } => json!({ "behavior": "deny", "message": message }),
    }
    .to_string()
}

/// `request_approval`'s text: `{"approved", "reason"?, "revised"?}`.
pub fn request_approval_text(verdict: &Verdict) -> String {
    let mut answer = serde_json::Map::new();
    match verdict {
        Verdict::Allow { updated_input, .. } => {
            answer.insert("approved".into(), Value::Bool(true));
            if let Some(revised) = updated_input.as_ref().and_then(revised_text) {
                answer.insert("revised".into(), Value::String(revised));
            }
        }
        Verdict::Deny { message } => {
            answer.insert("approved".into(), Value::Bool(false));
            answer.insert("reason".into(), Value::String(message.clone()));
        }
    }
    Value::Object(answer).to_string()
}

/// The text of an edit: the person edits the request's input object, so the revision is its
/// `details_markdown` (else its `title`); a bare string edit is taken as is.
fn revised_text(edit: &Value) -> Option<String> {
    match edit {
        Value::String(text) => Some(text.clone()),
        Value::Object(fields) => ["revised", "details_markdown", "title"]
            .iter()
            .find_map(|k| fields.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
            .or_else(|| Some(edit.to_string())),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    /// `approval_prompt` passes on only an object as Claude Code's `updatedInput`: a text edit
    /// is a deny.
    #[test]
    fn a_text_edit_is_no_tool_input() {
        let text = Verdict::Allow {
            updated_input: Some(serde_json::json!("revised")),
            always: false,
        };
        let answer: Value =
            serde_json::from_str(&approval_prompt_text(&text, &serde_json::json!({"a": 1})))
                .unwrap();
        assert_eq!(answer["behavior"], "deny");
    }

    use super::*;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn an_approval_echoes_the_input() {
        let input = json!({"command": "npm test"});
        let allow = Verdict::Allow {
            updated_input: None,
            always: false,
        };
        assert_eq!(
            parsed(&approval_prompt_text(&allow, &input)),
            json!({"behavior": "allow", "updatedInput": {"command": "npm test"}})
        );
    }

    #[test]
    fn an_edit_replaces_the_input() {
        let edit = Verdict::Allow {
            updated_input: Some(json!({"command": "npm run lint"})),
            always: false,
        };
        assert_eq!(
            parsed(&approval_prompt_text(&edit, &json!({"command": "x"})))["updatedInput"],
            json!({"command": "npm run lint"})
        );
    }

    #[test]
    fn request_approval_answers() {
        let deny = Verdict::Deny {
            message: "no".into(),
        };
        assert_eq!(
            parsed(&request_approval_text(&deny)),
            json!({"approved": false, "reason": "no"})
        );
        let edit = Verdict::Allow {
            updated_input: Some(json!({"title": "Deploy", "details_markdown": "v2 only"})),
            always: false,
        };
        assert_eq!(
            parsed(&request_approval_text(&edit)),
            json!({"approved": true, "revised": "v2 only"})
        );
        let plain = Verdict::Allow {
            updated_input: None,
            always: true,
        };
        assert_eq!(
            parsed(&request_approval_text(&plain)),
            json!({"approved": true})
        );
    }
}
