//! One JSON reader for everything the browser decodes.
//!
//! serde_json monomorphizes its parser, and every type it decodes, once per kind of input:
//! `from_str` (`StrRead`) and `from_slice` (`SliceRead`) are two copies in the bundle. Server
//! functions decode their answers with `from_slice`; Leptos's default resource codec
//! (`JsonSerdeCodec`) and a plain `from_str` would add the `&str` copy. So resources use
//! [`Json`] and the browser's own parsing goes through [`from_str`], both reading bytes. The
//! JSON is the same: only how the bundle reads it changes.

use std::future::Future;
use std::sync::Arc;

use leptos::prelude::Resource;
use leptos::server::codee::{Decoder, Encoder};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ui::reach::{Unreached, until_reached_send};

/// JSON, as Leptos's default resource codec writes it, decoded from the string's bytes.
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(val: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(val)
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(val: &str) -> Result<T, serde_json::Error> {
        from_str(val)
    }
}

/// `serde_json::from_str`, by way of the byte reader server functions already use.
pub fn from_str<T: DeserializeOwned>(s: &str) -> serde_json::Result<T> {
    serde_json::from_slice(s.as_bytes())
}

/// `Resource::new` with the [`Json`] codec. A fetch that never reached the server is tried
/// again until it does (`reach::until_reached`): a page opened during an outage loads by
/// itself once the server is back.
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T, Json>
where
    T: Serialize + DeserializeOwned + Unreached + Send + Sync + 'static,
    S: PartialEq + Clone + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    let fetcher = Arc::new(fetcher);
    Resource::new_with_options(
        source,
        move |source: S| {
            let fetcher = fetcher.clone();
            until_reached_send(move || fetcher(source.clone()))
        },
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ErrorBody, ErrorCode, Session};

    #[test]
    fn reads_what_the_default_codec_writes() {
        let value: Result<Vec<Session>, ErrorBody> =
            Err(ErrorBody::new(ErrorCode::Gone, "no such session"));
        let encoded = <Json as Encoder<_>>::encode(&value).unwrap();
        assert_eq!(encoded, serde_json::to_string(&value).unwrap());
        let back: Result<Vec<Session>, ErrorBody> = <Json as Decoder<_>>::decode(&encoded).unwrap();
        assert_eq!(back, value);
    }
}
