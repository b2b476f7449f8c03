//! The protocol's session, gate and rule routes on [`Api`], and the waits that poll a session's
//! snapshot (or the inbox) until a condition holds.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Api, Resp, SOON, assert_uuid_v4, events, keys, poll_until, turn_events};

impl Api {
    /// `POST /api/v1/sessions`, expecting 201; returns the Session.
    pub async fn create(&self, body: Value) -> Value {
        self.post("/api/v1/sessions", body).await.expect(201)
    }

    /// `POST /api/v1/sessions`, expecting 201; returns the id.
    pub async fn create_id(&self, body: Value) -> String {
        self.create(body).await["id"]
            .as_str()
            .expect("session id")
            .to_owned()
    }

    /// A new session with the defaults; returns its id.
    pub async fn session(&self) -> String {
        self.create_id(json!({})).await
    }

    /// `GET /api/v1/sessions`, expecting 200.
    pub async fn list(&self) -> Vec<Value> {
        self.get("/api/v1/sessions")
            .await
            .expect(200)
            .as_array()
            .expect("list is an array")
            .clone()
    }

    pub async fn snapshot(&self, sid: &str) -> Value {
        self.get(&format!("/api/v1/sessions/{sid}"))
            .await
            .expect(200)
    }

    /// The session's stored events, read once.
    pub async fn events(&self, sid: &str) -> Vec<Value> {
        events(&self.snapshot(sid).await)
    }

    /// Everything a client can observe: the session list and every session's full log.
    /// Used to prove that a refused request changed nothing.
    pub async fn state(&self) -> Value {
        let list = self.list().await;
        let mut logs = serde_json::Map::new();
        for s in &list {
            let id = s["id"].as_str().unwrap();
            logs.insert(id.to_owned(), json!(self.events(id).await));
        }
        json!({ "sessions": list, "events": logs })
    }

    /// `POST …/messages`, expecting 202 `{"turn_id"}` with a v4 id; returns the turn id.
    pub async fn send_msg(&self, sid: &str, text: &str, mode: Option<&str>) -> String {
        let mut body = json!({ "text": text });
        if let Some(mode) = mode {
            body["approval_mode"] = json!(mode);
        }
        let v = self
            .post(&format!("/api/v1/sessions/{sid}/messages"), body)
            .await
            .expect(202);
        assert_eq!(keys(&v), vec!["turn_id"], "{v}");
        let turn = v["turn_id"].as_str().expect("turn_id").to_owned();
        assert_uuid_v4(&turn);
        turn
    }

    /// Polls the snapshot until `pred` holds (within [`SOON`]); returns that snapshot.
    pub async fn wait_snapshot(
        &self,
        sid: &str,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.wait_snapshot_for(sid, what, SOON, pred).await
    }

    /// Polls the snapshot until `pred` holds; panics with the last snapshot after `limit`.
    pub async fn wait_snapshot_for(
        &self,
        sid: &str,
        what: &str,
        limit: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        poll_until(what, limit, async || {
            let snap = self.snapshot(sid).await;
            if pred(&snap) { Ok(snap) } else { Err(snap) }
        })
        .await
    }

    /// Waits for the first stored event that satisfies `pred`; returns it.
    pub async fn wait_event(&self, sid: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let snap = self
            .wait_snapshot(sid, what, |s| events(s).iter().any(&pred))
            .await;
        events(&snap).into_iter().find(|e| pred(e)).unwrap()
    }

    /// Waits until the turn's `turn_finished` is stored; returns that snapshot.
    pub async fn wait_turn(&self, sid: &str, turn: &str) -> Value {
        self.wait_snapshot(sid, &format!("turn {turn} to finish"), |s| {
            events(s)
                .iter()
                .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
        })
        .await
    }

    /// Waits until the turn's `turn_finished` is stored and the session runs no turn any
    /// more (a snapshot is not read atomically, so the two can show up apart); returns it.
    pub async fn wait_released(&self, sid: &str, turn: &str) -> Value {
        self.wait_released_for(sid, turn, SOON).await
    }

    pub async fn wait_released_for(&self, sid: &str, turn: &str, limit: Duration) -> Value {
        self.wait_snapshot_for(sid, &format!("turn {turn} to finish"), limit, |s| {
            events(s)
                .iter()
                .any(|e| e["type"] == "turn_finished" && e["turn_id"] == turn)
                && s["session"]["running_turn_id"].is_null()
        })
        .await
    }

    /// Waits for the turn to finish; returns all the session's events.
    pub async fn wait_turn_events(&self, sid: &str, turn: &str) -> Vec<Value> {
        events(&self.wait_turn(sid, turn).await)
    }

    /// Sends a message and waits for its turn to finish; returns (turn id, the turn's events).
    pub async fn run_turn(
        &self,
        sid: &str,
        text: &str,
        mode: Option<&str>,
    ) -> (String, Vec<Value>) {
        let turn = self.send_msg(sid, text, mode).await;
        let snap = self.wait_turn(sid, &turn).await;
        let evs = turn_events(&snap, &turn);
        (turn, evs)
    }

    /// Waits until exactly `n` gates are pending in the session; returns them.
    pub async fn wait_pending(&self, sid: &str, n: usize) -> Vec<Value> {
        let snap = self
            .wait_snapshot(sid, &format!("{n} pending gate(s)"), |s| {
                s["pending"].as_array().is_some_and(|p| p.len() == n)
            })
            .await;
        snap["pending"].as_array().unwrap().clone()
    }

    /// Waits for the one pending gate of the session; returns its card.
    pub async fn wait_gate(&self, sid: &str) -> Value {
        self.wait_pending(sid, 1).await.remove(0)
    }

    /// Waits until the session's first pending card shows and its `approval_request` is in
    /// the same snapshot's log (a snapshot is not read atomically); returns (snapshot, card).
    pub async fn wait_gate_snapshot(&self, sid: &str) -> (Value, Value) {
        let snap = self
            .wait_snapshot(sid, "a pending gate and its approval_request", |s| {
                s["pending"].as_array().is_some_and(|p| !p.is_empty())
                    && events(s).iter().any(|e| {
                        e["type"] == "approval_request"
                            && e["approval_id"] == s["pending"][0]["approval_id"]
                    })
            })
            .await;
        let card = snap["pending"][0].clone();
        (snap, card)
    }

    /// Waits for the session's first `approval_request` event; returns it. Unlike the pending
    /// list, the event stays in the log after the gate resolves.
    pub async fn wait_request_event(&self, sid: &str) -> Value {
        self.wait_event(sid, "an approval_request event", |e| {
            e["type"] == "approval_request"
        })
        .await
    }

    /// `GET /api/v1/approvals?status=pending`.
    pub async fn inbox(&self) -> Vec<Value> {
        self.get("/api/v1/approvals?status=pending")
            .await
            .expect(200)
            .as_array()
            .expect("inbox is an array")
            .clone()
    }

    pub async fn inbox_ids(&self) -> Vec<String> {
        self.inbox()
            .await
            .iter()
            .map(|g| g["approval_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Polls the inbox until it lists a gate of this session; returns that card.
    pub async fn wait_inbox_gate(&self, sid: &str) -> Value {
        poll_until(&format!("a gate of {sid} in the inbox"), SOON, async || {
            let inbox = self.inbox().await;
            match inbox.iter().find(|g| g["session_id"] == sid) {
                Some(gate) => Ok(gate.clone()),
                None => Err(Value::from(inbox)),
            }
        })
        .await
    }

    pub async fn decide(&self, sid: &str, aid: &str, body: Value) -> Resp {
        self.post(&format!("/api/v1/sessions/{sid}/approvals/{aid}"), body)
            .await
    }

    /// Asserts that the gate is still pending: in the inbox and in its session's snapshot.
    pub async fn assert_still_pending(&self, sid: &str, aid: &str) {
        assert!(
            self.inbox_ids().await.iter().any(|a| a == aid),
            "{aid} should still be in the pending inbox"
        );
        let snap = self.snapshot(sid).await;
        assert!(
            snap["pending"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["approval_id"] == aid),
            "{aid} should still be pending in the snapshot: {snap:#}"
        );
        assert!(
            !events(&snap)
                .iter()
                .any(|e| e["type"] == "approval_resolved" && e["approval_id"] == aid),
            "{aid} must have no approval_resolved yet"
        );
    }

    /// `GET /api/v1/rules`, expecting 200.
    pub async fn rules(&self) -> Vec<Value> {
        self.get("/api/v1/rules")
            .await
            .expect(200)
            .as_array()
            .expect("rules array")
            .clone()
    }
}
