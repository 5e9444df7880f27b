//! Sending one request and reading its answer with deadlines: a watch is read for a moment
//! and then hung up on (the server must cope with that too), anything else is read to its
//! end unless it takes longer than [`HANG_LIMIT`], which is itself a finding.

use std::time::Duration;

use reqwest::Client;
use serde_json::Value;
use tokio::time::Instant;

use crate::generate::FuzzRequest;

/// How long an answer may take before the request counts as hung.
pub(crate) const HANG_LIMIT: Duration = Duration::from_secs(30);
/// How long a watch is read before the fuzzer hangs up.
pub(crate) const WATCH_WINDOW: Duration = Duration::from_millis(25);
/// Most of an answer's body kept (the rest is read and dropped).
const MAX_KEPT_BODY: usize = 8 * 1024 * 1024;

/// What came back.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The status, if a response head arrived.
    pub(crate) status: Option<u16>,
    /// Its `Content-Type`.
    pub(crate) content_type: String,
    /// The body read (up to [`MAX_KEPT_BODY`]).
    pub(crate) body: Vec<u8>,
    /// Time to the end of the body (or of the watch window).
    pub(crate) elapsed: Duration,
    /// A transport failure or a hang, in words.
    pub(crate) error: Option<String>,
    /// A 5xx `Status` sent as a watch `ERROR` event, its message.
    pub(crate) watch_error: Option<String>,
}

impl Outcome {
    /// The `message` of a `Status` body, or the start of the body.
    pub(crate) fn message(&self) -> String {
        status_message(&self.body)
    }
}

/// The `message` of a `Status` body, or the start of the body as text.
pub(crate) fn status_message(body: &[u8]) -> String {
    let value = serde_json::from_slice::<Value>(body)
        .ok()
        .or_else(|| serde_yaml_ng::from_slice::<Value>(body).ok());
    if let Some(message) = value.as_ref().and_then(|v| v["message"].as_str()) {
        return message.chars().take(400).collect();
    }
    // Protobuf or other binary: the printable part.
    String::from_utf8_lossy(&body[..body.len().min(400)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The client every request goes through.
pub(crate) fn client() -> anyhow::Result<Client> {
    Ok(Client::builder()
        .user_agent("kubemock-httpfuzz")
        .pool_max_idle_per_host(4)
        .build()?)
}

/// Sends `request` to `base` and reads the answer.
pub(crate) async fn send(client: &Client, base: &str, request: &FuzzRequest) -> Outcome {
    let start = Instant::now();
    let mut outcome = Outcome::default();
    let url = format!("{base}{}", request.path_and_query);
    let mut builder = client.request(request.method.clone(), &url);
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    if let Some(body) = &request.body {
        builder = builder.body(body.clone());
    }
    let response = match tokio::time::timeout(HANG_LIMIT, builder.send()).await {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => {
            outcome.error = Some(format!("transport: {}", error_chain(&err)));
            outcome.elapsed = start.elapsed();
            return outcome;
        }
        Err(_) => {
            outcome.error = Some(format!("no response head within {HANG_LIMIT:?}"));
            outcome.elapsed = start.elapsed();
            return outcome;
        }
    };
    outcome.status = Some(response.status().as_u16());
    outcome.content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let deadline = if request.watch {
        Instant::now() + WATCH_WINDOW
    } else {
        start + HANG_LIMIT
    };
    let mut response = response;
    loop {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = MAX_KEPT_BODY.saturating_sub(outcome.body.len());
                outcome
                    .body
                    .extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(Ok(None)) => break,
            Ok(Err(err)) => {
                if !request.watch {
                    outcome.error = Some(format!("reading the body: {}", error_chain(&err)));
                }
                break;
            }
            Err(_) => {
                if !request.watch {
                    outcome.error = Some(format!("body not complete within {HANG_LIMIT:?}"));
                }
                break;
            }
        }
    }
    outcome.elapsed = start.elapsed();
    if request.watch && outcome.content_type.starts_with("application/json") {
        outcome.watch_error = watch_server_error(&outcome.body);
    }
    outcome
}

/// A 5xx `Status` among the `ERROR` events of a JSON watch stream.
fn watch_server_error(body: &[u8]) -> Option<String> {
    body.split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .find(|event| {
            event["type"] == "ERROR" && event["object"]["code"].as_u64().is_some_and(|c| c >= 500)
        })
        .map(|event| {
            format!(
                "{} {}",
                event["object"]["code"],
                event["object"]["message"].as_str().unwrap_or("")
            )
        })
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_in_watch_streams_are_found() {
        let stream = b"{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"message\":\"gone\"}}\n";
        assert_eq!(watch_server_error(stream), None);
        let stream = b"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,\"message\":\"boom\"}}\n";
        assert_eq!(watch_server_error(stream).as_deref(), Some("500 boom"));
    }

    #[test]
    fn status_messages_are_read_from_status_bodies() {
        assert_eq!(status_message(br#"{"kind":"Status","message":"no"}"#), "no");
        assert_eq!(status_message(b"plain"), "plain");
    }
}
