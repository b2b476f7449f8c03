//! A small SSE reader that keeps ids, event names and comment lines exactly as they came off
//! the wire.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::Value;

use super::{Api, Resp, response};

impl Api {
    /// Opens `GET …/events` (optionally `?after=` and `Last-Event-ID`); panics unless it is a
    /// 200 `text/event-stream`.
    pub async fn sse(&self, sid: &str, after: Option<u64>, last_event_id: Option<u64>) -> Sse {
        let mut path = format!("/api/v1/sessions/{sid}/events");
        if let Some(after) = after {
            path.push_str(&format!("?after={after}"));
        }
        let mut rb = self.req(Method::GET, &path);
        if let Some(id) = last_event_id {
            rb = rb.header("Last-Event-ID", id.to_string());
        }
        let sse = Sse::open(rb)
            .await
            .unwrap_or_else(|r| panic!("SSE refused: {r:?}"));
        let ct = sse
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        assert!(
            ct.starts_with("text/event-stream"),
            "SSE content-type {ct:?}"
        );
        sse
    }
}

#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// The block exactly as received, for failure messages.
    pub raw: String,
}

impl Frame {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("frame data is not JSON ({e}): {:?}", self.raw))
    }

    pub fn seq(&self) -> Option<u64> {
        self.id.as_ref().map(|id| {
            id.parse()
                .unwrap_or_else(|_| panic!("id is not a number: {:?}", self.raw))
        })
    }

    pub fn is(&self, kind: &str) -> bool {
        self.event.as_deref() == Some(kind)
    }

    /// Asserts `id`, `event` and `data` agree: id == data.seq (or both absent), event ==
    /// data.type; `assistant_delta` has no id, every other type has one.
    #[track_caller]
    pub fn check_consistent(&self) {
        let v = self.json();
        assert_eq!(
            self.event.as_deref(),
            v["type"].as_str(),
            "event name vs type: {:?}",
            self.raw
        );
        match self.seq() {
            Some(seq) => {
                assert_eq!(v["seq"].as_u64(), Some(seq), "{:?}", self.raw);
                assert!(
                    !self.is("assistant_delta"),
                    "a delta with an id: {:?}",
                    self.raw
                );
            }
            None => {
                assert!(v.get("seq").is_none(), "{:?}", self.raw);
                assert!(
                    self.is("assistant_delta"),
                    "a durable event without an id: {:?}",
                    self.raw
                );
            }
        }
    }
}

#[derive(Debug, Clone)]
pub enum Item {
    Frame(Frame),
    Comment(String),
}

pub struct Sse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    stream: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: Vec<u8>,
    pending: VecDeque<Item>,
    ended: bool,
}

impl Sse {
    /// Sends the request; a non-200 answer comes back as `Err(Resp)`.
    #[allow(clippy::result_large_err)] // a test helper: the error is the whole response, on purpose
    pub async fn open(rb: RequestBuilder) -> Result<Sse, Resp> {
        let resp = response(rb).await;
        let status = resp.status();
        let headers = resp.headers().clone();
        if status != StatusCode::OK {
            let body = resp.text().await.unwrap_or_default();
            return Err(Resp {
                status,
                headers,
                body,
            });
        }
        Ok(Sse {
            status,
            headers,
            stream: resp.bytes_stream().boxed(),
            buf: Vec::new(),
            pending: VecDeque::new(),
            ended: false,
        })
    }

    fn parse_blocks(&mut self) {
        while let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.buf.drain(..pos + 2).collect();
            let raw = String::from_utf8(block).expect("SSE is UTF-8");
            if let Some(item) = parse_block(raw) {
                self.pending.push_back(item);
            }
        }
    }

    /// The next frame or comment; `Ok(None)` when the stream ended; `Err(())` on timeout.
    pub async fn next_item(&mut self, within: Duration) -> Result<Option<Item>, ()> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Ok(Some(item));
            }
            if self.ended {
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.stream.next()).await {
                Err(_) => return Err(()),
                Ok(None) | Ok(Some(Err(_))) => self.ended = true,
                Ok(Some(Ok(bytes))) => {
                    self.buf.extend_from_slice(&bytes);
                    self.parse_blocks();
                }
            }
        }
    }

    /// The next frame (comments skipped); `None` when the stream ended. Panics on timeout.
    pub async fn next_frame(&mut self, within: Duration) -> Option<Frame> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_item(left).await {
                Ok(Some(Item::Frame(f))) => return Some(f),
                Ok(Some(Item::Comment(_))) => continue,
                Ok(None) => return None,
                Err(()) => panic!("no SSE frame within {within:?}"),
            }
        }
    }

    /// Frames up to and including the first that matches `pred`. Panics on timeout or end.
    pub async fn until(&mut self, within: Duration, pred: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        let deadline = Instant::now() + within;
        let mut frames = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let item = match self.next_item(left).await {
                Ok(item) => item,
                Err(()) => panic!("timed out after {within:?}; frames so far: {frames:#?}"),
            };
            match item {
                Some(Item::Frame(f)) => {
                    let done = pred(&f);
                    frames.push(f);
                    if done {
                        return frames;
                    }
                }
                Some(Item::Comment(_)) => {}
                None => panic!("stream ended early; frames so far: {frames:#?}"),
            }
        }
    }

    pub async fn until_turn_finished(&mut self, within: Duration) -> Vec<Frame> {
        self.until(within, |f| f.is("turn_finished")).await
    }

    pub async fn until_seq(&mut self, within: Duration, seq: u64) -> Vec<Frame> {
        self.until(within, |f| f.seq() == Some(seq)).await
    }

    /// Asserts nothing arrives for `quiet` (neither frame nor end of stream).
    pub async fn assert_quiet(&mut self, quiet: Duration) {
        match self.next_item(quiet).await {
            Err(()) => {}
            Ok(Some(Item::Comment(_))) => {}
            Ok(other) => panic!("expected silence, got {other:?}"),
        }
    }

    /// Reads (and drops) whatever still comes until the stream ends (cleanly or broken);
    /// false if it is still open after `within`.
    pub async fn ends_within(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_item(left).await {
                Ok(None) => return true,
                Ok(Some(_)) => {}
                Err(()) => return false,
            }
        }
    }
}

/// One block (up to a blank line) as a frame, a comment, or nothing.
fn parse_block(raw: String) -> Option<Item> {
    let mut id = None;
    let mut event = None;
    let mut data: Option<String> = None;
    let mut comment = None;
    for line in raw.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix(':') {
            comment = Some(c.trim().to_owned());
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => id = Some(value.to_owned()),
            "event" => event = Some(value.to_owned()),
            "data" => match data.as_mut() {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    if id.is_some() || event.is_some() || data.is_some() {
        Some(Item::Frame(Frame {
            id,
            event,
            data: data.unwrap_or_default(),
            raw,
        }))
    } else {
        comment.map(Item::Comment)
    }
}

/// The seqs of the frames that carry an id, in arrival order.
pub fn frame_seqs(frames: &[Frame]) -> Vec<u64> {
    frames.iter().filter_map(Frame::seq).collect()
}
