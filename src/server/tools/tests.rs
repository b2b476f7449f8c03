//! Tests of the public surface: specs, validation, subjects, and confinement end to end.

use super::testing::{ctx, run};
use super::*;
use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;

#[test]
fn specs_are_strict_objects_and_agree_with_class_of() {
    let specs = specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "search",
            "write_file",
            "edit_file",
            "shell"
        ]
    );
    for spec in &specs {
        let p = &spec.parameters;
        assert_eq!(p["type"], "object", "{}", spec.name);
        assert_eq!(p["additionalProperties"], false, "{}", spec.name);
        for required in p["required"].as_array().unwrap() {
            assert!(p["properties"].get(required.as_str().unwrap()).is_some());
        }
        assert_eq!(class_of(spec.name), Some(spec.class));
        assert!(spec.description.ends_with('.'));
    }
    assert_eq!(class_of("read_file"), Some(ToolClass::Read));
    assert_eq!(class_of("edit_file"), Some(ToolClass::Edit));
    assert_eq!(class_of("shell"), Some(ToolClass::Exec));
    assert_eq!(class_of("rm"), None);
}

#[test]
fn every_registered_tool_has_a_strict_spec_of_its_own_name_and_class() {
    let names = registry::names();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "search",
            "write_file",
            "edit_file",
            "shell",
            "config_set",
            "request_approval",
            "exit_plan"
        ]
    );
    for tool in all() {
        let spec = tool.spec();
        assert_eq!(spec.name, tool.name());
        assert_eq!(spec.class, tool.class(), "{}", spec.name);
        assert_eq!(
            spec.parameters["additionalProperties"], false,
            "{}",
            spec.name
        );
        assert!(get(tool.name()).is_some());
    }
    // Decisions are put to the person; only plan mode offers a plan, yolo no checkpoint.
    assert_eq!(get("exit_plan").unwrap().gate(), GateStyle::Plan);
    assert!(!get("exit_plan").unwrap().offered_in(Mode::Ask));
    assert!(!get("request_approval").unwrap().offered_in(Mode::Yolo));
    assert_eq!(class_of("config_set"), Some(ToolClass::Config));
}

#[test]
fn validate_checks_the_schema() {
    let ws = tempfile::tempdir().unwrap();
    let v = |tool: &str, args: Value| validate(tool, &args, ws.path());

    assert!(v("read_file", json!({"path": "a.txt"})).is_ok());
    assert!(v("list_files", json!({})).is_ok());
    assert!(v("search", json!({"pattern": "x"})).is_ok());
    assert!(v("shell", json!({"command": "ls"})).is_ok());

    let err = v("write_file", json!({"path": "a.txt"})).unwrap_err();
    assert!(matches!(err, ToolError::InvalidArgs(_)));
    assert_eq!(
        err.to_string(),
        "invalid arguments: missing field `content`"
    );

    let err = v("read_file", json!({"path": 7})).unwrap_err();
    assert!(matches!(err, ToolError::InvalidArgs(_)));
    assert!(
        err.to_string().contains("invalid type: integer `7`"),
        "{err}"
    );

    let err = v("read_file", json!({"path": "a", "mode": "r"})).unwrap_err();
    assert!(matches!(err, ToolError::InvalidArgs(_)));
    assert!(err.to_string().contains("unknown field `mode`"), "{err}");

    let err = v("delete_everything", json!({})).unwrap_err();
    assert!(matches!(err, ToolError::UnknownTool { .. }));
    assert!(
        err.to_string()
            .starts_with("unknown tool `delete_everything`")
    );

    let err = v("shell", json!("{not json")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments: the arguments must be a JSON object"
    );

    let err = v("shell", json!({"command": "  "})).unwrap_err();
    assert_eq!(err.to_string(), "invalid arguments: `command` is empty");

    let err = v("write_file", json!({"path": "../x", "content": ""})).unwrap_err();
    assert_eq!(err.to_string(), "path `../x` is outside the workspace");
}

#[test]
fn subject_names_the_path_or_command() {
    assert_eq!(
        subject("read_file", &json!({"path": "./src/../a.txt"})),
        Some("a.txt".into())
    );
    assert_eq!(subject("list_files", &json!({})), Some(".".into()));
    assert_eq!(
        subject("search", &json!({"pattern": "x", "path": "src/"})),
        Some("src".into())
    );
    assert_eq!(
        subject("shell", &json!({"command": "ls -la"})),
        Some("ls -la".into())
    );
    assert_eq!(
        subject("write_file", &json!({"path": "../x"})),
        Some("../x".into())
    );
    assert_eq!(subject("read_file", &json!({"path": 3})), None);
    assert_eq!(subject("nope", &json!({"path": "a"})), None);
}

#[test]
fn execute_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let ws = tempfile::tempdir().unwrap();
    let c = ctx(ws.path(), 10);
    let args = json!({});
    let fut = execute("shell", &args, &c);
    assert_send(&fut);
}

#[tokio::test]
async fn file_tools_refuse_paths_outside_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let c = ctx(ws.path(), 10_000);
    for (tool, args) in [
        ("read_file", json!({"path": ".."})),
        ("read_file", json!({"path": "a/../../x"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("list_files", json!({"path": "../"})),
        ("search", json!({"pattern": "root", "path": "/etc"})),
        (
            "write_file",
            json!({"path": "../escaped.txt", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "/etc/hostname", "old": "a", "new": "b"}),
        ),
        ("read_file", json!({"path": ""})),
    ] {
        let out = run(&c, tool, args.clone()).await;
        assert_eq!(
            out.status,
            ToolStatus::Error,
            "{tool} {args}: {}",
            out.output
        );
        assert!(
            out.output.contains("outside the workspace")
                || out.output.contains("is absolute")
                || out.output.contains("is empty"),
            "{tool} {args}: {}",
            out.output
        );
    }
    assert!(!ws.path().parent().unwrap().join("escaped.txt").exists());
}

#[tokio::test]
async fn symlinks_cannot_lead_reads_or_writes_outside() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    fs::write(&secret, "top secret").unwrap();
    symlink(outside.path(), ws.path().join("linkdir")).unwrap();
    symlink(&secret, ws.path().join("linkfile")).unwrap();
    symlink(
        outside.path().join("created.txt"),
        ws.path().join("dangling"),
    )
    .unwrap();
    let c = ctx(ws.path(), 10_000);

    for (tool, args) in [
        ("read_file", json!({"path": "linkdir/secret.txt"})),
        ("read_file", json!({"path": "linkfile"})),
        ("list_files", json!({"path": "linkdir"})),
        ("search", json!({"pattern": "secret", "path": "linkdir"})),
        (
            "write_file",
            json!({"path": "linkdir/new/file.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "linkfile", "content": "overwritten"}),
        ),
        (
            "edit_file",
            json!({"path": "linkfile", "old": "top", "new": "no"}),
        ),
        ("write_file", json!({"path": "dangling", "content": "x"})),
    ] {
        let out = run(&c, tool, args.clone()).await;
        assert_eq!(
            out.status,
            ToolStatus::Error,
            "{tool} {args}: {}",
            out.output
        );
        assert!(!out.output.contains("top secret"));
    }
    assert_eq!(fs::read_to_string(&secret).unwrap(), "top secret");
    assert!(!outside.path().join("new").exists());
    assert!(!outside.path().join("created.txt").exists());

    // A search of the whole workspace doesn't follow the links either.
    let out = run(&c, "search", json!({"pattern": "secret"})).await;
    assert_eq!(out.output, "no matches");
}

#[tokio::test]
async fn nested_paths_and_inward_symlinks_are_allowed() {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir(ws.path().join("real")).unwrap();
    symlink(ws.path().join("real"), ws.path().join("alias")).unwrap();
    let c = ctx(ws.path(), 10_000);

    let out = run(
        &c,
        "write_file",
        json!({"path": "x/y/z/deep.txt", "content": "deep"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.output);
    let out = run(&c, "read_file", json!({"path": "x/./y/../y/z/deep.txt"})).await;
    assert_eq!((out.status, out.output.as_str()), (ToolStatus::Ok, "deep"));

    let out = run(
        &c,
        "write_file",
        json!({"path": "alias/via-link.txt", "content": "ok"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.output);
    assert_eq!(
        fs::read_to_string(ws.path().join("real/via-link.txt")).unwrap(),
        "ok"
    );
}

/// What the model is told stays what it was told when the schemas were written by hand: the
/// schemas are now derived from the argument structs, and this pins the result.
#[test]
fn derived_specs_tell_the_model_exactly_the_arguments() {
    let s = |doc: &str| json!({"type": "string", "description": doc});
    let object = |properties: Value, required: Value| {
        json!({"type": "object", "properties": properties, "required": required,
               "additionalProperties": false})
    };
    let path = s(files::PATH_DOC);
    let kinds = [
        "target_column",
        "prep_plan",
        "model_shortlist",
        "expensive_run",
        "other",
    ];
    let expected = [
        ("read_file", object(json!({"path": path}), json!(["path"]))),
        (
            "list_files",
            object(json!({"path": s(files::DIR_DOC)}), json!([])),
        ),
        (
            "search",
            object(
                json!({"pattern": s("Exact text to look for."),
                       "path": s("File or directory to search, relative to the workspace; defaults to `.`.")}),
                json!(["pattern"]),
            ),
        ),
        (
            "write_file",
            object(
                json!({"path": path, "content": s("The file's complete new content.")}),
                json!(["path", "content"]),
            ),
        ),
        (
            "edit_file",
            object(
                json!({"path": path,
                       "old": s("Exact text to replace; must occur exactly once in the file."),
                       "new": s("Replacement text.")}),
                json!(["path", "old", "new"]),
            ),
        ),
        (
            "shell",
            object(
                json!({"command": s("The shell command line.")}),
                json!(["command"]),
            ),
        ),
        (
            "config_set",
            object(
                json!({"key": {"type": "string"},
                       "value": {"description": "the new value: a string, number, boolean or list"}}),
                json!(["key", "value"]),
            ),
        ),
        (
            "request_approval",
            object(
                json!({"kind": {"type": "string", "enum": kinds},
                       "title": s("one line"),
                       "proposal": s("the proposal, in markdown"),
                       "context": s("optional background")}),
                json!(["kind", "title", "proposal"]),
            ),
        ),
        (
            "exit_plan",
            object(json!({"plan": s("the plan, in markdown")}), json!(["plan"])),
        ),
    ];
    for (name, want) in expected {
        let spec = get(name).unwrap().spec();
        let mut got = spec.parameters.clone();
        // The order of `required` is the struct's; compare it as a set.
        let sorted = |v: &mut Value| {
            if let Some(list) = v.get_mut("required").and_then(Value::as_array_mut) {
                list.sort_by_key(|x| x.as_str().unwrap_or_default().to_owned());
            }
        };
        let mut want = want;
        sorted(&mut got);
        sorted(&mut want);
        assert_eq!(got, want, "{name}");
    }
}

/// The lenient `Option<String>` fields read `null` exactly as a missing field (what the old
/// `#[serde(default)] String` fields made of a missing one), so a `null` never reaches what
/// runs as something else; a required string field still refuses `null`.
#[test]
fn null_reads_as_missing_in_lenient_fields_and_is_refused_in_required_ones() {
    let ws = tempfile::tempdir().unwrap();
    for (tool, args) in [
        ("shell", json!({"command": null})),
        ("write_file", json!({"path": null, "content": "x"})),
        ("write_file", json!({"path": "a", "content": null})),
        ("edit_file", json!({"path": "a", "old": null, "new": "x"})),
        ("edit_file", json!({"path": "a", "old": "x", "new": null})),
        ("read_file", json!({"path": null})),
        ("search", json!({"pattern": null})),
    ] {
        let err = validate(tool, &args, ws.path()).unwrap_err();
        assert!(matches!(err, ToolError::InvalidArgs(_)), "{tool} {args}");
    }
    // `search`'s optional path: null is the default (`.`), as a missing one.
    assert!(validate("search", &json!({"pattern": "x", "path": null}), ws.path()).is_ok());

    let missing_or_null = |with_null: Value, without: Value| {
        let read = |v: &Value| Checkpoint::parse(v).map_err(|e| e.to_string());
        assert_eq!(read(&with_null), read(&without), "{with_null}");
    };
    missing_or_null(
        json!({"kind": null, "title": "t", "proposal": null, "context": null}),
        json!({"title": "t"}),
    );
    missing_or_null(
        json!({"kind": "prep_plan", "title": null}),
        json!({"kind": "prep_plan"}),
    );
    assert_eq!(
        plan_of(&json!({"plan": null})).map_err(|e| e.to_string()),
        plan_of(&json!({})).map_err(|e| e.to_string())
    );
    assert!(plan_of(&json!({"plan": null})).is_err());
    for args in [
        json!({"key": null, "value": 5}),
        json!({"key": "provider.max_retries", "value": null}),
    ] {
        assert!(config_key_and_value(&args).is_err(), "{args}");
    }
}

/// A checkpoint never becomes a plan card (approving one leaves plan mode): no spelling of
/// `plan`, padded or in another case, and no null, reads as anything but `other`.
#[test]
fn no_spelling_of_plan_makes_a_checkpoint_a_plan_card() {
    for kind in [
        json!("plan"),
        json!(" plan\n"),
        json!("Plan"),
        json!("PLAN"),
        json!("plan "),
        json!(null),
        json!(""),
    ] {
        let checkpoint = Checkpoint::parse(&json!({"kind": kind, "title": "t", "proposal": "p"}));
        assert_eq!(
            checkpoint.map(|c| c.kind).ok(),
            Some(crate::protocol::DecisionKind::Other),
            "{kind}"
        );
    }
    assert!(Checkpoint::parse(&json!({"kind": 3, "title": "t"})).is_err());
}
