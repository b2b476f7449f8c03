//! The hub's eviction rule and wake-ups, on a real SQLite store.

use std::sync::Arc;

use super::*;
use crate::protocol::{AnsweredBy, Decision, EventBody, Mode, Resolution, Timestamp};
use crate::server::config::Synchronous;
use crate::server::conversation::ChatMessage;
use crate::server::store::NewEvent;
use crate::server::store::sqlite::SqliteStore;

async fn hub_with_session(id: &str) -> (tempfile::TempDir, Hub) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = SqliteStore::open(&url, Synchronous::Normal).await.unwrap();
    store
        .create_session(&crate::server::store::conformance::session(id))
        .await
        .unwrap();
    (dir, Hub::new(Arc::new(store), None))
}

fn resolution(id: &str, decision: Decision) -> Resolution {
    Resolution::plain(
        &id.into(),
        decision,
        AnsweredBy::User,
        "browser",
        Timestamp::default(),
    )
}

fn said(text: &str) -> NewEvent {
    NewEvent::new(
        Some(&"turn".into()),
        EventBody::UserMessage {
            text: text.into(),
            approval_mode: Mode::Ask,
        },
    )
}

#[tokio::test]
async fn a_session_lives_exactly_while_something_holds_it() {
    let (_dir, hub) = hub_with_session("s").await;
    assert_eq!(hub.live_sessions(), 0);
    hub.append(&"s".into(), vec![said("a")], None)
        .await
        .unwrap();
    assert_eq!(
        hub.live_sessions(),
        0,
        "an append alone leaves nothing behind"
    );

    let feed = hub.subscribe(&"s".into());
    assert_eq!(hub.live_sessions(), 1, "a subscriber holds it");
    drop(feed);
    assert_eq!(hub.live_sessions(), 0);

    let lease = hub.try_start(&"s".into(), &"t1".into()).unwrap();
    assert!(
        hub.try_start(&"s".into(), &"t2".into()).is_none(),
        "one turn at a time"
    );
    assert_eq!(hub.running_turn_id(&"s".into()), Some("t1".into()));
    drop(lease);
    assert_eq!(hub.live_sessions(), 0, "a finished turn lets go");
    assert_eq!(hub.running_turn_id(&"s".into()), None);

    let (guard, _rx) = hub.park(&"s".into(), &"g".into());
    assert!(hub.is_parked(&"s".into(), &"g".into()));
    assert_eq!(hub.live_sessions(), 1, "a parked gate holds it");
    drop(guard);
    assert_eq!(hub.live_sessions(), 0);
    assert!(!hub.is_parked(&"s".into(), &"g".into()));
}

#[tokio::test]
async fn a_rebuilt_history_equals_the_one_kept_alive() {
    let (_dir, hub) = hub_with_session("s").await;
    let lease = hub.try_start(&"s".into(), &"t".into()).unwrap();
    hub.append(&"s".into(), vec![said("one")], None)
        .await
        .unwrap();
    let kept = hub
        .history(&"s".into(), |h| h.messages().to_vec())
        .await
        .unwrap();
    hub.append(&"s".into(), vec![said("two")], None)
        .await
        .unwrap();
    let kept_more = hub
        .history(&"s".into(), |h| h.messages().to_vec())
        .await
        .unwrap();
    drop(lease);
    assert_eq!(hub.live_sessions(), 0);
    let rebuilt = hub
        .history(&"s".into(), |h| h.messages().to_vec())
        .await
        .unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(rebuilt, kept_more);
    assert_eq!(*rebuilt[1], ChatMessage::User("two".into()));
}

#[tokio::test]
async fn live_events_reach_subscribers_in_order_and_not_after_forget() {
    let (_dir, hub) = hub_with_session("s").await;
    let mut feed = hub.subscribe(&"s".into());
    hub.append(&"s".into(), vec![said("a"), said("b")], None)
        .await
        .unwrap();
    for want in [1, 2] {
        match &*feed.receiver.recv().await.unwrap() {
            FeedItem::Durable { event, .. } => assert_eq!(event.seq, Some(want)),
            other => panic!("{other:?}"),
        }
    }
    hub.forget(&"s".into());
    assert!(feed.receiver.recv().await.is_err(), "the stream ends");
}

#[tokio::test]
async fn exactly_one_of_fifty_concurrent_wakers_reaches_the_waiter() {
    let (_dir, hub) = hub_with_session("s").await;
    let (guard, rx) = hub.park(&"s".into(), &"g".into());
    let mut tasks = Vec::new();
    for i in 0..50 {
        let hub = hub.clone();
        tasks.push(tokio::spawn(async move {
            let decision = if i % 2 == 0 {
                Decision::Approve
            } else {
                Decision::Deny
            };
            hub.wake(&"s".into(), resolution("g", decision))
        }));
    }
    let mut woke = 0;
    for t in tasks {
        if t.await.unwrap() {
            woke += 1;
        }
    }
    assert_eq!(woke, 1);
    assert!(rx.await.is_ok());
    drop(guard);
    assert_eq!(hub.live_sessions(), 0);
}

#[tokio::test]
async fn an_aborted_waiter_leaves_no_entry() {
    let (_dir, hub) = hub_with_session("s").await;
    let waiting = hub.clone();
    let task = tokio::spawn(async move {
        let (_guard, rx) = waiting.park(&"s".into(), &"b".into());
        let _ = rx.await;
    });
    while !hub.is_parked(&"s".into(), &"b".into()) {
        tokio::task::yield_now().await;
    }
    task.abort();
    let _ = task.await;
    assert!(!hub.is_parked(&"s".into(), &"b".into()));
    assert_eq!(hub.live_sessions(), 0);
    assert!(!hub.wake(&"s".into(), resolution("b", Decision::Approve)));
}

/// Two hubs on one PostgreSQL database are two instances. With every notification lost (no
/// `follow` at all), the sweep alone still brings the other instance's events to this one's
/// subscriber, in order, and wakes the turn parked here on the gate the other resolved.
#[tokio::test]
async fn the_sweep_alone_catches_up_with_another_instance() {
    use crate::server::store::postgres::{PgStore, tests as pg};
    use crate::server::store::{Commit, GateChange};
    let Some(cluster) = pg::test_cluster() else {
        return;
    };
    let url = pg::fresh_database(&cluster).await;
    let instance = || async {
        let store = Arc::new(PgStore::open(&url).await.unwrap());
        Hub::new(store.clone(), Some(store))
    };
    let (here, there) = (instance().await, instance().await);
    here.create_session(&crate::server::store::conformance::session("S"))
        .await
        .unwrap();
    let mut feed = here.subscribe(&"S".into());
    let gate: crate::protocol::ApprovalRequest = serde_json::from_value(serde_json::json!({
        "turn_id": "turn", "approval_id": "g", "session_id": "S", "call_id": "c",
        "kind": "tool", "tool": "shell", "class": "exec", "args": {"command": "ls"},
        "title": "Shell", "summary": "shell: ls", "proposal_md": "", "proposal_html": "",
        "reason": "mode", "reason_detail": "", "allowed_decisions": ["approve", "deny"],
        "digest": "d", "created_at": Timestamp::now(), "expires_at": Timestamp::now(),
        "timeout_outcome": "deny"
    }))
    .unwrap();
    let (_guard, woken) = here.park(&"S".into(), &"g".into());
    let open = Commit {
        gate: Some(GateChange::Open(Box::new(gate))),
        ..Commit::default()
    };
    here.commit(&"S".into(), vec![said("asks")], open, || ())
        .await
        .unwrap();
    // The other instance says something and answers the gate; nobody tells this one.
    there
        .append(&"S".into(), vec![said("elsewhere")], None)
        .await
        .unwrap();
    let answer = resolution("g", Decision::Approve);
    let resolve = Commit {
        gate: Some(GateChange::Resolve {
            resolution: answer.clone(),
            new_rule: None,
        }),
        ..Commit::default()
    };
    let event = NewEvent::new(
        Some(&"turn".into()),
        EventBody::ApprovalResolved(answer.clone()),
    );
    there
        .commit(&"S".into(), vec![event], resolve, || ())
        .await
        .unwrap();
    assert!(
        here.is_parked(&"S".into(), &"g".into()),
        "nothing arrived by itself: still parked"
    );

    here.sweep().await.unwrap();
    let mut seqs = Vec::new();
    while let Ok(item) = feed.receiver.try_recv() {
        if let FeedItem::Durable { event, .. } = item.as_ref() {
            seqs.push(event.seq.unwrap());
        }
    }
    assert_eq!(
        seqs,
        vec![1, 2, 3],
        "this instance's event, then the other's two, in order"
    );
    assert_eq!(
        woken.await.unwrap().resolution,
        answer,
        "the parked turn got the other's answer"
    );
}

/// Four holders letting go on four threads at once, round after round: the old rule (the
/// last holder counted the references in its own drop, while its own was still there) could
/// see the others still there on every side and leave the entry, with its memo, in the map for
/// good. The same harness run against that rule leaked within a few thousand rounds.
#[tokio::test]
async fn handles_dropped_at_the_same_moment_leave_no_entry() {
    const HOLDERS: usize = 4;
    let (_dir, hub) = hub_with_session("s").await;
    let start = Arc::new(std::sync::Barrier::new(HOLDERS + 1));
    let done = Arc::new(std::sync::Barrier::new(HOLDERS + 1));
    let holders: Vec<_> = (0..HOLDERS)
        .map(|_| {
            let (give, take) = std::sync::mpsc::channel::<Handle>();
            let (start, done) = (Arc::clone(&start), Arc::clone(&done));
            std::thread::spawn(move || {
                while let Ok(handle) = take.recv() {
                    start.wait();
                    drop(handle);
                    done.wait();
                }
            });
            give
        })
        .collect();
    for round in 0..20_000 {
        for holder in &holders {
            holder.send(hub.enter(&"s".into())).unwrap();
        }
        start.wait();
        done.wait();
        assert_eq!(
            hub.live_sessions(),
            0,
            "an entry outlived its holders in round {round}"
        );
    }
}

/// A holder letting go while another use enters: the newcomer always finds a live entry, and
/// the old session's drop never takes the newcomer's entry with it.
#[tokio::test]
async fn an_enter_racing_the_last_drop_keeps_its_own_entry() {
    let (_dir, hub) = hub_with_session("s").await;
    for round in 0..2_000 {
        let leaving = hub.enter(&"s".into());
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let dropper = {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                drop(leaving);
            })
        };
        let entering = {
            let (barrier, hub) = (Arc::clone(&barrier), hub.clone());
            std::thread::spawn(move || {
                barrier.wait();
                hub.enter(&"s".into())
            })
        };
        dropper.join().unwrap();
        let kept = entering.join().unwrap();
        assert!(
            hub.get(&"s".into()).is_some(),
            "round {round}: the newcomer's entry was taken out under it"
        );
        assert_eq!(hub.live_sessions(), 1);
        drop(kept);
        assert_eq!(hub.live_sessions(), 0, "round {round}");
    }
}

/// One session, two spellings of its id (a page's URL in upper case, say): one live entry,
/// so one serial lock and one turn slot.
#[tokio::test]
async fn two_spellings_of_one_session_are_one_live_entry() {
    let id = "550e8400-e29b-41d4-a716-446655440000";
    let (_dir, hub) = hub_with_session(id).await;
    let _lower = hub.subscribe(&SessionId::from(id));
    let _upper = hub.subscribe(&SessionId::from("550E8400-E29B-41D4-A716-446655440000"));
    let _braced = hub.subscribe(&SessionId::from("{550e8400-e29b-41d4-a716-446655440000}"));
    assert_eq!(hub.live_sessions(), 1);
    let lease = hub.try_start(&SessionId::from(id), &"t1".into());
    assert!(lease.is_some());
    assert!(
        hub.try_start(&"550E8400E29B41D4A716446655440000".into(), &"t2".into())
            .is_none(),
        "a second spelling must not start a second turn"
    );
}
