//! The offline demo agent driven through HTTP (protocol.md "The offline demo agent"), in yolo
//! mode so tool calls run without approval gates.

use serde_json::{Value, json};

use crate::support::*;

#[tokio::test]
async fn demo_writes_a_file_and_reports_it() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let mut live = ts.sse(&sid, None, None).await;
    let turn = ts
        .send_msg(&sid, "write notes.md: hello", Some("yolo"))
        .await;
    let events = ts.wait_turn_events(&sid, &turn).await;

    assert_eq!(
        std::fs::read_to_string(ts.workspace().join("notes.md")).expect("notes.md written"),
        "hello"
    );
    assert_eq!(
        types(&events),
        vec![
            "mode_changed",
            "user_message",
            "tool_call",
            "tool_started",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ]
    );
    assert_eq!(seqs(&events), (1..=7).collect::<Vec<u64>>());
    for e in &events {
        assert_event_shape(e);
        assert_eq!(e["turn_id"], turn.as_str(), "{e}");
    }
    assert_eq!(events[0]["source"], "message");
    assert_eq!(events[0]["next"], "yolo");
    assert_eq!(events[1]["text"], "write notes.md: hello");
    assert_eq!(events[1]["approval_mode"], "yolo");

    let call = &events[2];
    let call_id = call["call_id"].as_str().unwrap();
    assert!(!call_id.is_empty());
    assert_eq!(call["tool"], "write_file");
    assert_eq!(
        call["args"],
        json!({"path": "notes.md", "content": "hello"})
    );
    assert_eq!(call["class"], "edit");
    assert_eq!(call["verdict"], "run");
    assert_eq!(events[3]["call_id"], call_id);

    let result = &events[4];
    assert_eq!(result["call_id"], call_id);
    assert_eq!(result["tool"], "write_file");
    assert_eq!(result["status"], "ok");
    let output = result["output"].as_str().unwrap();
    assert!(output.contains("notes.md"), "{output}");

    let answer = &events[5];
    let text = answer["text"].as_str().unwrap();
    let first_line = output.lines().next().unwrap();
    assert!(
        text.contains(first_line),
        "answer {text:?} does not quote {first_line:?}"
    );
    assert!(answer["html"].as_str().unwrap().contains("notes.md"));
    assert_eq!(events[6]["status"], "completed");
    assert!(events[6].get("error").is_none());

    // The live feed saw the same durable events, plus deltas that spell the answer.
    let frames = live.until_turn_finished(SOON).await;
    frames.iter().for_each(Frame::check_consistent);
    let durable: Vec<Value> = frames
        .iter()
        .filter(|f| f.seq().is_some())
        .map(Frame::json)
        .collect();
    assert_eq!(durable, events);
    let streamed: String = frames
        .iter()
        .filter(|f| f.is("assistant_delta"))
        .map(|f| f.json()["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(streamed, text);
    assert_eq!(ts.snapshot(&sid).await["session"]["approval_mode"], "yolo");
}

#[tokio::test]
async fn demo_runs_several_lines_in_order() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({"approval_mode": "yolo"})).await;
    let turn = ts
        .send_msg(
            &sid,
            "write a.txt: one\\ntwo\nread a.txt\nedit a.txt: two => three\nlist\nrun: cat a.txt",
            Some("yolo"),
        )
        .await;
    let events = ts.wait_turn_events(&sid, &turn).await;
    assert!(of_type(&events, "mode_changed").is_empty());
    let calls: Vec<&str> = of_type(&events, "tool_call")
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        vec![
            "write_file",
            "read_file",
            "edit_file",
            "list_files",
            "shell"
        ]
    );
    let results = of_type(&events, "tool_result");
    assert!(results.iter().all(|r| r["status"] == "ok"), "{results:#?}");
    assert!(results[1]["output"].as_str().unwrap().contains("one\ntwo"));
    assert!(results[3]["output"].as_str().unwrap().contains("a.txt"));
    assert_eq!(results[4]["output"], "one\nthree");
    assert_eq!(
        std::fs::read_to_string(ts.workspace().join("a.txt")).unwrap(),
        "one\nthree"
    );
    assert_eq!(events.last().unwrap()["status"], "completed");
}

#[tokio::test]
async fn demo_without_a_command_answers_with_help() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let turn = ts.send_msg(&sid, "hello there", None).await;
    let events = ts.wait_turn_events(&sid, &turn).await;
    assert_eq!(
        types(&events),
        vec!["user_message", "assistant_message", "turn_finished"]
    );
    let help = events[1]["text"].as_str().unwrap();
    for form in ["read", "write", "edit", "run:", "loop"] {
        assert!(help.contains(form), "help lacks {form:?}: {help}");
    }
}

/// The command would run for 10 minutes: the turn can only end within the wait because the
/// cancel stopped it, and its process must be gone.
#[tokio::test]
async fn cancelling_a_running_command_stops_it_promptly() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let turn = ts
        .send_msg(&sid, "run: exec env CS_MARK=long sleep 600", Some("yolo"))
        .await;
    ts.wait_event(&sid, "tool_started", |e| e["type"] == "tool_started")
        .await;
    let workspace = ts.ws(".");
    wait_marked_group(&workspace, "long").await;
    let v = ts
        .post(&format!("/api/v1/sessions/{sid}/cancel"), json!({}))
        .await
        .expect(200);
    assert_eq!(v, json!({ "turn_id": turn }));
    let events = ts.wait_turn_events(&sid, &turn).await;
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 1, "{events:#?}");
    assert_eq!(results[0]["tool"], "shell");
    assert_eq!(results[0]["status"], "cancelled");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn_finished");
    assert_eq!(last["status"], "cancelled");
    assert_eq!(
        seqs(&events),
        (1..=events.len() as u64).collect::<Vec<u64>>()
    );
    // Killed with its namespace; the kernel may take a moment to reap the last of it.
    poll_until(
        "the cancelled command to be gone",
        SOON,
        async || match marked_group(&workspace, "long") {
            Some(group) => Err(format!("process group {group} still runs")),
            None => Ok(()),
        },
    )
    .await;
}

#[tokio::test]
async fn max_parallel_bounds_how_many_calls_of_a_batch_run_at_once() {
    let srv = TestServer::configured("[tools]\nmax_parallel = 1\n").await;
    let sid = srv.session().await;
    let turn = srv
        .send_msg(
            &sid,
            "parallel:\nrun: echo a1 >> log; sleep 0.4; echo a2 >> log\nrun: echo b1 >> log; sleep 0.4; echo b2 >> log",
            Some("yolo"),
        )
        .await;
    srv.wait_released(&sid, &turn).await;
    let log = std::fs::read_to_string(srv.ws("log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines == ["a1", "a2", "b1", "b2"] || lines == ["b1", "b2", "a1", "a2"],
        "one at a time: {lines:?}"
    );
}

#[tokio::test]
async fn what_the_agent_said_before_a_call_heads_its_card_and_no_other() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    let turn = ts
        .send_msg(
            &sid,
            "say: Cleaning the scratch file first.\nrun: rm -f scratch.txt\nrun: ls",
            Some("ask"),
        )
        .await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["summary"], "shell: rm -f scratch.txt");
    assert_eq!(card["agent_says"], "Cleaning the scratch file first.");
    let aid = card["approval_id"].as_str().unwrap().to_owned();
    ts.decide(&sid, &aid, json!({"decision": "approve"}))
        .await
        .expect(200);
    // The next batch said nothing of its own: its card carries no words from before.
    let next = ts
        .wait_event(&sid, "the second card", |e| {
            e["type"] == "approval_request" && e["approval_id"] != aid.as_str()
        })
        .await;
    assert!(next.get("agent_says").is_none_or(Value::is_null), "{next}");
    ts.decide(
        &sid,
        next["approval_id"].as_str().unwrap(),
        json!({"decision": "approve"}),
    )
    .await
    .expect(200);
    ts.wait_turn(&sid, &turn).await;
}
