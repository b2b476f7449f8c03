//! The benchmark's event feed reader: the response body through `eventsource-stream` (the
//! same SSE parser the OpenAI provider uses).

use std::pin::Pin;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use super::error::{BenchError, Result};

type Events = Pin<
    Box<
        dyn Stream<
                Item = std::result::Result<
                    eventsource_stream::Event,
                    EventStreamError<reqwest::Error>,
                >,
            > + Send,
    >,
>;

/// One event as received.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// An open event stream.
pub struct Sse {
    events: Events,
}

impl Sse {
    pub fn new(resp: reqwest::Response) -> Self {
        Sse {
            events: Box::pin(resp.bytes_stream().eventsource()),
        }
    }

    /// The next complete event; `None` when the stream ends.
    pub async fn next(&mut self) -> Result<Option<SseEvent>> {
        match self.events.next().await {
            Some(Ok(event)) => Ok(Some(SseEvent {
                event: event.event,
                data: event.data,
            })),
            Some(Err(err)) => Err(BenchError::Protocol(format!("event stream: {err}"))),
            None => Ok(None),
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
