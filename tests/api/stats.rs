//! `GET /api/v1/stats/decisions` (issue 40, point 2): the person's answers counted per
//! credential and device, per class and agent, per day and by time to decide; admin only; a
//! window it cannot read is `400 invalid_request`.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

const DESKTOP: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// Logs a browser in with `secret` from the desktop: the `Cookie` header to send back.
async fn desk_login(ts: &TestServer, secret: &str) -> String {
    let login = send(
        ts.anon(Method::GET, &format!("/login?token={secret}"))
            .header("user-agent", DESKTOP),
    )
    .await;
    assert_eq!(login.status.as_u16(), 303, "{login:?}");
    login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned()
}

async fn token(ts: &TestServer, name: &str, scope: &str) -> String {
    let made = ts
        .post("/api/v1/tokens", json!({"name": name, "scope": scope}))
        .await
        .expect(201);
    made["token"].as_str().unwrap().to_owned()
}

/// How a card is answered: with the desk's cookie, or as a bearer.
enum Through<'a> {
    Cookie(&'a str),
    Bearer(&'a str),
}

/// A card waiting in a new session of its own, answered `decision` through `who`.
async fn answer_a_card(ts: &TestServer, who: Through<'_>, decision: &str) {
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo x > x.txt", None).await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let route = format!("/api/v1/sessions/{sid}/approvals/{gate}");
    let body = json!({ "decision": decision });
    match who {
        Through::Cookie(cookie) => send(
            ts.anon(Method::POST, &route)
                .header("cookie", cookie)
                .json(&body),
        )
        .await
        .expect(200),
        Through::Bearer(secret) => Api::new(&ts.base)
            .with_token(secret)
            .post(&route, body)
            .await
            .expect(200),
    };
}

fn sum(rows: &Value, key: &str) -> u64 {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|row| row[key].as_u64().unwrap())
        .sum()
}

/// The figures of a history answered by the desk (approve, approve), the phone's token (deny)
/// and the admin's token (approve), in that order.
fn check_figures(stats: &Value) {
    let total = &stats["total"];
    assert_eq!(total["decisions"], 4, "{stats:#}");
    assert_eq!(total["approved"], 3, "{stats:#}");
    assert_eq!(total["denied"], 1, "{stats:#}");
    assert_eq!(
        (total["edited"].clone(), total["expired"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(
        total["longest_approve_run"], 2,
        "the phone's deny ends the run"
    );
    assert!(total["median_decide_ms"].is_u64(), "{stats:#}");
    assert!(total["fast_approvals"].as_u64().unwrap() <= 3);

    let by_actor = &stats["by_actor"];
    assert_eq!(keys(by_actor), ["browser", "token:admin", "token:phone"]);
    assert_eq!(by_actor["browser"]["approved"], 2);
    assert_eq!(by_actor["browser"]["longest_approve_run"], 2);
    assert_eq!(by_actor["token:phone"]["denied"], 1);
    assert_eq!(by_actor["token:phone"]["longest_approve_run"], 0);
    assert_eq!(by_actor["token:admin"]["approved"], 1);
    assert_eq!(
        stats["by_device"]["browser login · Firefox on Linux"]["decisions"],
        2
    );
    assert_eq!(stats["by_device"]["token phone"]["decisions"], 1);
    assert_eq!(stats["by_class"]["exec"]["decisions"], 4);
    assert_eq!(keys(&stats["by_agent"]), ["countersign"]);

    let days = &stats["per_day"];
    assert_eq!(sum(days, "approved") + sum(days, "denied"), 4, "{days:#}");
    let histogram = &stats["decide_ms_histogram"];
    assert_eq!(histogram.as_array().unwrap().len(), 7, "{histogram:#}");
    assert_eq!(sum(histogram, "count"), 4, "{histogram:#}");
    assert_eq!(stats["truncated"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_figures_count_each_credentials_answers() {
    let ts = TestServer::start().await;
    let empty = ts.get("/api/v1/stats/decisions").await.expect(200);
    assert_eq!(empty["total"]["decisions"], 0, "{empty:#}");
    assert_eq!(empty["total"]["median_decide_ms"], Value::Null, "{empty:#}");
    assert_eq!(empty["per_day"], json!([]));
    assert_rfc3339_utc(empty["since"].as_str().unwrap());
    assert_rfc3339_utc(empty["until"].as_str().unwrap());

    let desk = desk_login(&ts, &ts.token).await;
    let phone = token(&ts, "phone", "approve").await;
    answer_a_card(&ts, Through::Cookie(&desk), "approve").await;
    answer_a_card(&ts, Through::Cookie(&desk), "approve").await;
    answer_a_card(&ts, Through::Bearer(&phone), "deny").await;
    answer_a_card(&ts, Through::Bearer(&ts.token), "approve").await;
    let stats = ts.get("/api/v1/stats/decisions").await.expect(200);
    check_figures(&stats);

    // A window that ends before any of it: nothing.
    let before = ts
        .get("/api/v1/stats/decisions?since=2020-01-01T00:00:00Z&until=2020-02-01T00:00:00Z")
        .await
        .expect(200);
    assert_eq!(before["total"]["decisions"], 0, "{before:#}");
    assert_eq!(before["since"], "2020-01-01T00:00:00.000Z");
}

/// The route and the page's server function alike: an `approve` or `gates` token is refused.
#[tokio::test]
async fn only_an_admin_reads_them() {
    let ts = TestServer::start().await;
    for scope in ["approve", "gates"] {
        let secret = token(&ts, &format!("t-{scope}"), scope).await;
        let other = Api::new(&ts.base).with_token(&secret);
        other
            .get("/api/v1/stats/decisions")
            .await
            .expect_error(403, "forbidden");
        let page = send(
            other
                .req(Method::POST, "/api/ui/your_answers")
                .json(&json!({"days": 7})),
        )
        .await;
        assert_eq!(page.status.as_u16(), 403, "{page:?}");
    }
    let page = send(
        ts.req(Method::POST, "/api/ui/your_answers")
            .json(&json!({"days": 7})),
    )
    .await
    .expect(200);
    assert_eq!(page["total"]["decisions"], 0, "{page:#}");
}

#[tokio::test]
async fn a_window_it_cannot_read_is_a_bad_request() {
    let ts = TestServer::start().await;
    for query in [
        "since=yesterday",
        "until=2026-02-30T00:00:00Z",
        "since=2026-12-06T00:00:00Z&until=2026-12-01T00:00:00Z",
        "since=2020-01-01T00:00:00Z&until=2026-12-01T00:00:00Z",
    ] {
        ts.get(&format!("/api/v1/stats/decisions?{query}"))
            .await
            .expect_error(400, "invalid_request");
    }
}

/// A card left to time out is *expired*, under the `timeout` actor, with no time to decide of
/// its own; it ends the run of approvals before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_left_to_time_out_counts_as_expired() {
    let ts = TestServer::configured("[approvals]\ntimeout_secs = 2\n").await;
    answer_a_card(&ts, Through::Bearer(&ts.token), "approve").await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo late > late.txt", None).await;
    ts.wait_gate(&sid).await;
    let stats = poll_until("the card to expire", Duration::from_secs(15), async || {
        let stats = ts.get("/api/v1/stats/decisions").await.expect(200);
        match stats["total"]["expired"].as_u64() {
            Some(1) => Ok(stats),
            _ => Err(stats),
        }
    })
    .await;
    let total = &stats["total"];
    assert_eq!(
        (total["decisions"].clone(), total["approved"].clone()),
        (json!(2), json!(1)),
        "{stats:#}"
    );
    assert_eq!(total["longest_approve_run"], 1, "{stats:#}");
    let timed_out = &stats["by_actor"]["timeout"];
    assert_eq!(timed_out["expired"], 1, "{stats:#}");
    assert_eq!(timed_out["median_decide_ms"], Value::Null, "{stats:#}");
    assert_eq!(stats["by_actor"]["token:admin"]["approved"], 1, "{stats:#}");
    assert_eq!(
        sum(&stats["decide_ms_histogram"], "count"),
        1,
        "only the answered card"
    );
    assert_eq!(sum(&stats["per_day"], "expired"), 1, "{stats:#}");
}
