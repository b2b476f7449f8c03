//! protocol.md "Sessions": create, list, snapshot, delete, mode, messages, cancel.

use std::time::Duration;

use countersign::server::provider::scripted::ScriptStep;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

#[tokio::test]
async fn health_is_open_and_reports_status_and_version() {
    let ts = TestServer::start().await;
    for rb in [
        ts.anon(Method::GET, "/api/v1/health"),
        ts.req(Method::GET, "/api/v1/health"),
        ts.anon(Method::GET, "/api/v1/health")
            .bearer_auth("not-the-token"),
    ] {
        let r = send(rb).await;
        let v = r.expect(200);
        assert!(
            r.header("content-type")
                .unwrap()
                .starts_with("application/json")
        );
        assert_eq!(
            v,
            json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})
        );
    }
}

#[tokio::test]
async fn create_session_with_title_and_mode() {
    let ts = TestServer::start().await;
    let r = ts
        .post(
            "/api/v1/sessions",
            json!({"title": "Quarterly report", "approval_mode": "plan"}),
        )
        .await;
    let s = r.expect(201);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_session_shape(&s);
    assert_eq!(s["title"], "Quarterly report");
    assert_eq!(s["approval_mode"], "plan");
    assert_eq!(s["running_turn_id"], Value::Null);
    assert_eq!(s["pending_approvals"], 0);

    // Every mode is accepted.
    for mode in ["plan", "ask", "auto_edit", "yolo"] {
        let made = ts.create(json!({ "approval_mode": mode })).await;
        assert_eq!(made["approval_mode"], mode);
        // The session reads back the same through GET.
        let snap = ts.snapshot(made["id"].as_str().unwrap()).await;
        assert_eq!(snap["session"], made);
    }
}

#[tokio::test]
async fn create_session_defaults() {
    let ts = TestServer::start().await;
    // `{}`, an explicit null and an empty body all take the defaults.
    let a = ts.create(json!({})).await;
    let b = ts
        .create(json!({"title": null, "approval_mode": null}))
        .await;
    let c = send(ts.req(Method::POST, "/api/v1/sessions"))
        .await
        .expect(201);
    for s in [&a, &b, &c] {
        assert_session_shape(s);
        assert_eq!(s["approval_mode"], "ask", "default_mode is ask: {s}");
        assert!(!s["title"].as_str().unwrap().trim().is_empty(), "{s}");
        assert_eq!(s["running_turn_id"], Value::Null);
        assert_eq!(s["pending_approvals"], 0);
    }
    assert_ne!(a["id"], b["id"]);
    assert_ne!(b["id"], c["id"]);
}

#[tokio::test]
async fn create_session_uses_configured_default_mode() {
    let ts =
        TestServer::start_with(None, Some("[approvals]\ndefault_mode = \"auto_edit\"\n")).await;
    let s = ts.create(json!({"title": "t"})).await;
    assert_eq!(s["approval_mode"], "auto_edit");
    // An explicit mode still wins.
    let s = ts.create(json!({"approval_mode": "plan"})).await;
    assert_eq!(s["approval_mode"], "plan");
}

#[tokio::test]
async fn create_session_rejects_invalid_mode_and_changes_nothing() {
    let ts = TestServer::start().await;
    ts.create(json!({"title": "existing"})).await;
    let before = ts.state().await;
    for mode in [
        "YOLO",
        "Ask",
        "",
        " ask",
        "autoedit",
        "auto-edit",
        "sometimes",
    ] {
        ts.post(
            "/api/v1/sessions",
            json!({"title": "x", "approval_mode": mode}),
        )
        .await
        .expect_error(400, "invalid_approval_mode");
    }
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
async fn create_session_title_length_limit() {
    let ts = TestServer::start().await;
    // 200 characters (400 bytes) is fine: the limit counts characters.
    let ok = "é".repeat(200);
    let s = ts.create(json!({ "title": ok })).await;
    assert_eq!(s["title"], ok);
    let before = ts.state().await;
    // The protocol gives no code for this; `invalid_title` is what the server uses.
    ts.post("/api/v1/sessions", json!({ "title": "x".repeat(201) }))
        .await
        .expect_error(400, "invalid_title");
    ts.post("/api/v1/sessions", json!({ "title": "t".repeat(10_000) }))
        .await
        .expect_error(400, "invalid_title");
    assert_eq!(ts.state().await, before);
}

/// One rule for NUL on both stores: kept inside an event (a message), refused with 400 in a
/// column of its own (a title), with nothing written.
#[tokio::test]
async fn a_nul_is_refused_in_a_title_and_kept_in_a_message() {
    let ts = TestServer::start().await;
    let before = ts.state().await;
    let refused = ts
        .post("/api/v1/sessions", json!({ "title": "a\u{0}b" }))
        .await
        .expect_error(400, "invalid_request");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("NUL"),
        "{refused}"
    );
    assert_eq!(ts.state().await, before);
    let sid = ts.session().await;
    let turn = ts.send_msg(&sid, "hello a\u{0}b", None).await;
    let snap = ts.wait_turn(&sid, &turn).await;
    let sent = of_type(&events(&snap), "user_message")[0]["text"].clone();
    assert_eq!(sent, "hello a\u{0}b");
}

#[tokio::test]
async fn list_sessions_newest_first() {
    let ts = TestServer::start().await;
    assert_eq!(ts.list().await, Vec::<Value>::new());
    let mut created = Vec::new();
    // Created back to back (several may share a millisecond): order must still hold.
    for i in 0..6 {
        created.push(ts.create(json!({ "title": format!("s{i}") })).await);
    }
    let list = ts.list().await;
    let ids: Vec<&Value> = list.iter().map(|s| &s["id"]).collect();
    let expected: Vec<&Value> = created.iter().rev().map(|s| &s["id"]).collect();
    assert_eq!(ids, expected);
    // Each listed session is exactly what create returned.
    for (listed, made) in list.iter().zip(created.iter().rev()) {
        assert_eq!(listed, made);
    }
    // A later one goes on top, after a pause too.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let last = ts.create(json!({"title": "latest"})).await;
    assert_eq!(ts.list().await[0]["id"], last["id"]);
}

#[tokio::test]
async fn snapshot_of_a_new_session() {
    let ts = TestServer::start().await;
    let s = ts.create(json!({"title": "fresh"})).await;
    let snap = ts.snapshot(s["id"].as_str().unwrap()).await;
    assert_eq!(keys(&snap), vec!["cursor", "events", "pending", "session"]);
    assert_eq!(snap["session"], s);
    assert_eq!(snap["events"], json!([]));
    assert_eq!(snap["pending"], json!([]));
    assert_eq!(snap["cursor"], 0);
}

#[tokio::test]
async fn snapshot_after_a_turn_has_every_event_and_cursor() {
    let ts = TestServer::scripted([reply("Hi there.")]).await;
    let sid = ts.create_id(json!({})).await;
    let turn = ts.send_msg(&sid, "hello", None).await;
    ts.wait_turn_events(&sid, &turn).await;
    let snap = ts.snapshot(&sid).await;
    let events = snap["events"].as_array().unwrap();
    assert_eq!(
        types(events),
        vec!["user_message", "assistant_message", "turn_finished"]
    );
    assert_eq!(seqs(events), vec![1, 2, 3]);
    assert_eq!(snap["cursor"], 3);
    assert_eq!(snap["pending"], json!([]));
    assert_eq!(snap["session"]["running_turn_id"], Value::Null);
    for e in events {
        assert_event_shape(e);
        assert_eq!(e["turn_id"], turn.as_str());
    }
    assert_eq!(
        keys(&events[0]),
        vec!["approval_mode", "at", "seq", "text", "turn_id", "type"]
    );
    assert_eq!(events[0]["text"], "hello");
    assert_eq!(events[0]["approval_mode"], "ask");
    assert_eq!(
        keys(&events[1]),
        vec!["at", "html", "seq", "text", "turn_id", "type"]
    );
    assert_eq!(events[1]["text"], "Hi there.");
    assert!(events[1]["html"].as_str().unwrap().contains("Hi there."));
    assert_eq!(
        keys(&events[2]),
        vec!["at", "seq", "status", "turn_id", "type"]
    );
    assert_eq!(events[2]["status"], "completed");
}

#[tokio::test]
async fn delete_session_then_404_and_gone_from_list() {
    let ts = TestServer::scripted([reply("kept")]).await;
    let keep = ts.create_id(json!({"title": "keep"})).await;
    let turn = ts.send_msg(&keep, "hi", None).await;
    let keep_events = ts.wait_turn_events(&keep, &turn).await;
    let gone = ts.create_id(json!({"title": "gone"})).await;
    ts.put(
        &format!("/api/v1/sessions/{gone}/mode"),
        json!({"approval_mode": "plan"}),
    )
    .await
    .expect(200);

    let r = ts.delete(&format!("/api/v1/sessions/{gone}")).await;
    assert_eq!(r.status.as_u16(), 204, "{}", r.body);
    assert_eq!(r.body, "", "204 has no body");

    ts.get(&format!("/api/v1/sessions/{gone}"))
        .await
        .expect_error(404, "unknown_session");
    ts.delete(&format!("/api/v1/sessions/{gone}"))
        .await
        .expect_error(404, "unknown_session");
    let r = send(ts.req(
        Method::GET,
        &format!("/api/v1/sessions/{gone}/events?after=0"),
    ))
    .await;
    r.expect_error(404, "unknown_session");
    let list = ts.list().await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], keep.as_str());
    // The other session is untouched.
    assert_eq!(ts.events(&keep).await, keep_events);
}

#[tokio::test]
async fn delete_cancels_a_running_turn_first() {
    let ts = TestServer::scripted([ScriptStep::Stall]).await;
    let sid = ts.create_id(json!({})).await;
    let mut feed = ts.sse(&sid, None, None).await;
    let turn = ts.send_msg(&sid, "think forever", None).await;
    let snap = ts.snapshot(&sid).await;
    assert_eq!(snap["session"]["running_turn_id"], turn.as_str());
    assert_eq!(ts.list().await[0]["running_turn_id"], turn.as_str());
    let first = feed.until_seq(SOON, 1).await;
    assert_eq!(frame_seqs(&first), vec![1]);

    let r = ts.delete(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(r.status.as_u16(), 204, "{}", r.body);
    assert_eq!(r.body, "", "204 has no body");
    // The turn was cancelled (and recorded so) before the session went away ...
    let f = feed
        .next_frame(SOON)
        .await
        .expect("turn_finished before the stream closes");
    f.check_consistent();
    assert!(f.is("turn_finished"), "{f:?}");
    assert_eq!(f.seq(), Some(2));
    let v = f.json();
    assert_eq!(v["status"], "cancelled");
    assert_eq!(v["turn_id"], turn.as_str());
    // ... and the feed of a deleted session ends.
    assert!(
        feed.next_frame(SOON).await.is_none(),
        "stream of a deleted session should end"
    );
    assert_eq!(ts.core().running_turn_id(&sid.as_str().into()), None);
    ts.get(&format!("/api/v1/sessions/{sid}"))
        .await
        .expect_error(404, "unknown_session");
    assert_eq!(ts.list().await, Vec::<Value>::new());
}

#[tokio::test]
async fn set_mode_answers_previous_and_records_mode_changed() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let path = format!("/api/v1/sessions/{sid}/mode");

    let v = ts
        .put(&path, json!({"approval_mode": "plan"}))
        .await
        .expect(200);
    assert_eq!(v, json!({"previous": "ask", "approval_mode": "plan"}));
    let events = ts.events(&sid).await;
    assert_eq!(events.len(), 1);
    assert_event_shape(&events[0]);
    assert_eq!(events[0]["seq"], 1);
    assert_eq!(events[0]["type"], "mode_changed");
    assert_eq!(events[0]["previous"], "ask");
    assert_eq!(events[0]["next"], "plan");
    assert_eq!(events[0]["source"], "user");
    assert!(
        events[0].get("turn_id").is_none_or(Value::is_null),
        "{}",
        events[0]
    );
    assert_eq!(ts.snapshot(&sid).await["session"]["approval_mode"], "plan");
    assert_eq!(ts.list().await[0]["approval_mode"], "plan");

    let v = ts
        .put(&path, json!({"approval_mode": "auto_edit"}))
        .await
        .expect(200);
    assert_eq!(v, json!({"previous": "plan", "approval_mode": "auto_edit"}));

    // Setting the same mode again answers 200 and records nothing.
    let v = ts
        .put(&path, json!({"approval_mode": "auto_edit"}))
        .await
        .expect(200);
    assert_eq!(
        v,
        json!({"previous": "auto_edit", "approval_mode": "auto_edit"})
    );
    let events = ts.events(&sid).await;
    assert_eq!(seqs(&events), vec![1, 2]);
    assert_eq!(events[1]["previous"], "plan");
    assert_eq!(events[1]["next"], "auto_edit");
    assert_eq!(events[1]["source"], "user");

    // Invalid modes change nothing.
    let before = ts.state().await;
    for bad in ["", "YOLO", "auto-edit", "never"] {
        ts.put(&path, json!({ "approval_mode": bad }))
            .await
            .expect_error(400, "invalid_approval_mode");
    }
    // A missing mode is a 400 too (the protocol gives no code; the server says invalid_approval_mode).
    ts.put(&path, json!({}))
        .await
        .expect_error(400, "invalid_approval_mode");
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
async fn message_is_accepted_with_202_turn_id() {
    let ts = TestServer::scripted([reply("ok")]).await;
    let sid = ts.create_id(json!({})).await;
    let r = ts
        .post(
            &format!("/api/v1/sessions/{sid}/messages"),
            json!({"text": "hello"}),
        )
        .await;
    let v = r.expect(202);
    assert_eq!(keys(&v), vec!["turn_id"]);
    let turn = v["turn_id"].as_str().unwrap();
    assert_uuid_v4(turn);
    // The user_message is committed before the 202.
    let snap = ts.snapshot(&sid).await;
    let first = &snap["events"][0];
    assert_eq!(first["type"], "user_message");
    assert_eq!(first["seq"], 1);
    assert_eq!(first["turn_id"], turn);
    assert_eq!(first["text"], "hello");
    assert_eq!(first["approval_mode"], "ask");
    let events = ts.wait_turn_events(&sid, turn).await;
    assert_eq!(events.last().unwrap()["status"], "completed");
}

#[tokio::test]
async fn message_text_must_be_1_to_32768_characters() {
    let ts = TestServer::scripted([reply("a"), reply("b")]).await;
    let sid = ts.create_id(json!({})).await;
    let path = format!("/api/v1/sessions/{sid}/messages");
    let before = ts.state().await;
    ts.post(&path, json!({"text": ""}))
        .await
        .expect_error(400, "invalid_message");
    ts.post(&path, json!({"text": "x".repeat(32_769)}))
        .await
        .expect_error(400, "invalid_message");
    ts.post(&path, json!({"text": "é".repeat(32_769)}))
        .await
        .expect_error(400, "invalid_message");
    // Missing text: the protocol does not name the code; the server says invalid_message.
    ts.post(&path, json!({}))
        .await
        .expect_error(400, "invalid_message");
    assert_eq!(
        ts.state().await,
        before,
        "a refused message changed something"
    );

    // The limits are inclusive and count characters, not bytes.
    let turn = ts.send_msg(&sid, "é".repeat(32_768).as_str(), None).await;
    let events = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(events[0]["text"].as_str().unwrap().chars().count(), 32_768);
    let turn = ts.send_msg(&sid, "1", None).await;
    ts.wait_turn_events(&sid, &turn).await;
}

#[tokio::test]
async fn message_with_invalid_mode_is_refused_and_changes_nothing() {
    let ts = TestServer::scripted([]).await;
    let sid = ts.create_id(json!({})).await;
    let before = ts.state().await;
    for bad in ["", "Yolo", "root"] {
        ts.post(
            &format!("/api/v1/sessions/{sid}/messages"),
            json!({"text": "hi", "approval_mode": bad}),
        )
        .await
        .expect_error(400, "invalid_approval_mode");
    }
    assert_eq!(ts.state().await, before);
    assert_eq!(ts.core().running_turn_id(&sid.as_str().into()), None);
}

#[tokio::test]
async fn message_mode_applies_to_the_turn_and_persists() {
    let ts = TestServer::scripted([reply("1"), reply("2"), reply("3")]).await;
    let sid = ts.create_id(json!({})).await; // ask

    // A different mode: mode_changed (source message) first, then the user_message.
    let t1 = ts.send_msg(&sid, "first", Some("yolo")).await;
    let events = ts.wait_turn_events(&sid, &t1).await;
    assert_eq!(
        types(&events),
        vec![
            "mode_changed",
            "user_message",
            "assistant_message",
            "turn_finished"
        ]
    );
    assert_eq!(seqs(&events), vec![1, 2, 3, 4]);
    assert_eq!(events[0]["previous"], "ask");
    assert_eq!(events[0]["next"], "yolo");
    assert_eq!(events[0]["source"], "message");
    assert_eq!(events[1]["approval_mode"], "yolo");
    assert_eq!(ts.snapshot(&sid).await["session"]["approval_mode"], "yolo");
    assert_eq!(ts.list().await[0]["approval_mode"], "yolo");

    // The same mode again: no mode_changed.
    let t2 = ts.send_msg(&sid, "second", Some("yolo")).await;
    let events = ts.wait_turn_events(&sid, &t2).await;
    assert_eq!(
        types(&events[4..]),
        vec!["user_message", "assistant_message", "turn_finished"]
    );

    // No mode: the session's remembered mode applies.
    let t3 = ts.send_msg(&sid, "third", None).await;
    let events = ts.wait_turn_events(&sid, &t3).await;
    assert_eq!(
        types(&events[7..]),
        vec!["user_message", "assistant_message", "turn_finished"]
    );
    assert_eq!(events[7]["approval_mode"], "yolo");
    assert_eq!(seqs(&events), (1..=10).collect::<Vec<u64>>());
}

#[tokio::test]
async fn second_message_while_running_is_409_and_cancel_finishes_the_turn() {
    let ts = TestServer::scripted([ScriptStep::Stall, reply("after")]).await;
    let sid = ts.create_id(json!({})).await;
    let msgs = format!("/api/v1/sessions/{sid}/messages");
    let turn = ts.send_msg(&sid, "stall", None).await;
    assert_eq!(
        ts.snapshot(&sid).await["session"]["running_turn_id"],
        turn.as_str()
    );

    let before = ts.state().await;
    ts.post(&msgs, json!({"text": "again"}))
        .await
        .expect_error(409, "turn_in_progress");
    // Refused even when it asks for another mode, and the mode does not change.
    ts.post(&msgs, json!({"text": "again", "approval_mode": "yolo"}))
        .await
        .expect_error(409, "turn_in_progress");
    assert_eq!(ts.state().await, before);

    let v = ts
        .post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect(200);
    assert_eq!(v, json!({ "turn_id": turn }));
    let events = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(types(&events), vec!["user_message", "turn_finished"]);
    assert_eq!(events[1]["status"], "cancelled");
    assert_eq!(events[1]["seq"], 2);
    assert_eq!(events[1]["turn_id"], turn.as_str());
    assert_eq!(
        ts.snapshot(&sid).await["session"]["running_turn_id"],
        Value::Null
    );

    // Nothing running any more.
    ts.post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect_error(409, "no_turn_running");
    // And a new message is accepted.
    let t2 = ts.send_msg(&sid, "again", None).await;
    assert_ne!(t2, turn);
    let events = ts.wait_turn_events(&sid, &t2).await;
    assert_eq!(events.last().unwrap()["status"], "completed");
}

#[tokio::test]
async fn cancel_with_nothing_running_is_409() {
    let ts = TestServer::scripted([reply("done")]).await;
    let sid = ts.create_id(json!({})).await;
    let cancel = format!("/api/v1/sessions/{sid}/cancel");
    // With and without a body.
    ts.post(&cancel, json!({}))
        .await
        .expect_error(409, "no_turn_running");
    send(ts.req(Method::POST, &cancel))
        .await
        .expect_error(409, "no_turn_running");
    // After a finished turn, too.
    let turn = ts.send_msg(&sid, "hi", None).await;
    ts.wait_turn_events(&sid, &turn).await;
    let before = ts.state().await;
    ts.post(&cancel, json!({}))
        .await
        .expect_error(409, "no_turn_running");
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
async fn unknown_or_malformed_session_is_404_on_every_route() {
    let ts = TestServer::scripted([]).await;
    ts.create(json!({"title": "real"})).await;
    let before = ts.state().await;
    for sid in [
        unknown_sid(),
        "not-a-uuid".to_owned(),
        "123".to_owned(),
        "00000000-0000-0000-0000-000000000000".to_owned(),
        "%20".to_owned(),
    ] {
        let base = format!("/api/v1/sessions/{sid}");
        ts.get(&base).await.expect_error(404, "unknown_session");
        ts.delete(&base).await.expect_error(404, "unknown_session");
        ts.put(&format!("{base}/mode"), json!({"approval_mode": "plan"}))
            .await
            .expect_error(404, "unknown_session");
        ts.post(&format!("{base}/messages"), json!({"text": "hi"}))
            .await
            .expect_error(404, "unknown_session");
        ts.post(&format!("{base}/cancel"), json!({}))
            .await
            .expect_error(404, "unknown_session");
        send(ts.req(Method::GET, &format!("{base}/events")))
            .await
            .expect_error(404, "unknown_session");
        send(ts.req(Method::GET, &format!("{base}/events?after=3")))
            .await
            .expect_error(404, "unknown_session");
    }
    assert_eq!(ts.state().await, before);
}

/// A session is titled by its first message, a person may rename it, and the made title never
/// overwrites their rename; every bad title is refused with a reason and changes nothing.
#[tokio::test]
async fn the_first_message_titles_a_session_and_a_rename_sticks() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    assert_eq!(ts.snapshot(&sid).await["session"]["title"], "New session");
    let turn = ts
        .send_msg(&sid, "\n  read   notes.md \nand then more", None)
        .await;
    ts.wait_turn(&sid, &turn).await;
    // In words, never the raw command (issue 39.10).
    assert_eq!(ts.snapshot(&sid).await["session"]["title"], "Read notes.md");

    let path = format!("/api/v1/sessions/{sid}");
    let renamed = send(
        ts.req(Method::PATCH, &path)
            .json(&json!({"title": "  Release prep "})),
    )
    .await
    .expect(200);
    assert_eq!(renamed["title"], "Release prep");
    assert_eq!(renamed["id"], sid.as_str());
    for (body, code) in [
        (json!({"title": "   "}), "invalid_title"),
        (json!({}), "invalid_title"),
        (json!({"title": "x".repeat(201)}), "invalid_title"),
        (json!({"title": "evil\u{202E}txt"}), "invalid_title"),
        (json!({"title": "a", "extra": 1}), "invalid_request"),
    ] {
        send(ts.req(Method::PATCH, &path).json(&body))
            .await
            .expect_error(400, code);
    }
    send(
        ts.req(
            Method::PATCH,
            "/api/v1/sessions/00000000-0000-4000-8000-000000000000",
        )
        .json(&json!({"title": "x"})),
    )
    .await
    .expect_error(404, "unknown_session");
    // A phone's approve token answers cards; it does not rename sessions.
    let phone = ts
        .post(
            "/api/v1/tokens",
            json!({"name": "phone", "scope": "approve"}),
        )
        .await
        .expect(201);
    send(
        ts.anon(Method::PATCH, &path)
            .bearer_auth(phone["token"].as_str().unwrap())
            .json(&json!({"title": "phone's"})),
    )
    .await
    .expect_error(403, "forbidden");
    assert_eq!(ts.snapshot(&sid).await["session"]["title"], "Release prep");

    // A session with a title of its own keeps it through its first message.
    let named = ts.create_id(json!({"title": "Quarterly"})).await;
    let turn = ts.send_msg(&named, "read notes.md", None).await;
    ts.wait_turn(&named, &turn).await;
    assert_eq!(ts.snapshot(&named).await["session"]["title"], "Quarterly");
}
