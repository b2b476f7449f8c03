//! A minimal SSE reader over a reqwest body stream: `id:`, `event:` and `data:` lines, events
//! ended by a blank line, comment lines skipped.

use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::Result;
use super::harness::BenchError;

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// One event as received.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// An open event stream.
pub struct Sse {
    body: Body,
    buf: Vec<u8>,
    event: String,
    data: String,
}

impl Sse {
    pub fn new(resp: reqwest::Response) -> Self {
        Sse {
            body: Box::pin(resp.bytes_stream()),
            buf: Vec::with_capacity(8192),
            event: String::new(),
            data: String::new(),
        }
    }

    /// The next complete event; `None` when the stream ends.
    pub async fn next(&mut self) -> Result<Option<SseEvent>> {
        loop {
            while let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                let line = String::from_utf8_lossy(&line[..pos]);
                let line = line.strip_suffix('\r').unwrap_or(&line);
                if line.is_empty() {
                    if self.event.is_empty() && self.data.is_empty() {
                        continue;
                    }
                    let event = if self.event.is_empty() {
                        "message".to_owned()
                    } else {
                        std::mem::take(&mut self.event)
                    };
                    return Ok(Some(SseEvent {
                        event,
                        data: std::mem::take(&mut self.data),
                    }));
                }
                if line.starts_with(':') {
                    continue;
                }
                let (field, value) = match line.split_once(':') {
                    Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                    None => (line, ""),
                };
                match field {
                    "event" => self.event = value.to_owned(),
                    "data" => {
                        if !self.data.is_empty() {
                            self.data.push('\n');
                        }
                        self.data.push_str(value);
                    }
                    _ => {}
                }
            }
            match self.body.next().await {
                Some(chunk) => self.buf.extend_from_slice(&chunk?),
                None => return Ok(None),
            }
        }
    }

    /// Skips events until one of this type arrives.
    pub async fn next_of(&mut self, kind: &str) -> Result<SseEvent> {
        loop {
            match self.next().await? {
                Some(ev) if ev.event == kind => return Ok(ev),
                Some(_) => {}
                None => {
                    return Err(BenchError::Protocol(format!(
                        "event stream ended while waiting for {kind}"
                    )));
                }
            }
        }
    }
}
