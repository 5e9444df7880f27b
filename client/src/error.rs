//! One error type for the whole client, so that callers can tell an answer of the API server
//! (a `metav1.Status`: not found, conflict, gone...) from a failure to reach it or to read its
//! answer, and retry or requeue accordingly.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

/// What went wrong talking to the API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with a `Status` (an HTTP error, or an ERROR event in a watch).
    #[error("api error: {} ({}): {}", .0.code.unwrap_or_default(), .0.reason.as_deref().unwrap_or(""), .0.message.as_deref().unwrap_or(""))]
    Api(Box<Status>),
    /// The request could not be sent or its answer not received (connection refused, reset,
    /// timeout, TLS failure).
    #[error("transport error")]
    Transport(#[source] reqwest::Error),
    /// The answer could not be decoded as the expected type.
    #[error("decode error")]
    Decode(#[source] serde_json::Error),
    /// A request body could not be encoded.
    #[error("encode error")]
    Encode(#[source] serde_json::Error),
    /// The kubeconfig or client configuration is unusable.
    #[error("configuration error: {0}")]
    Config(String),
    /// A request could not be built from the given parameters (for example a namespaced
    /// resource addressed without a namespace, or an object without a name).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A watch stream broke off in the middle of an event.
    #[error("watch stream error: {0}")]
    Stream(String),
    /// A request to a server in this process ([`crate::transport::LocalServer`]) was not
    /// answered within the request timeout (over a socket, that is a `Transport` error).
    #[error("no answer within {0:?}")]
    Timeout(std::time::Duration),
}

/// The client's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An `Error::Api` from a code, reason and message (as the server would send them).
    pub fn api(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Error::Api(Box::new(Status {
            code: Some(i32::from(code)),
            reason: Some(reason.to_owned()),
            message: Some(message.into()),
            status: Some("Failure".to_owned()),
            ..Status::default()
        }))
    }

    /// The server's `Status`, when this is an answer of the server.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(status) => Some(status),
            _ => None,
        }
    }

    /// The HTTP code of the server's answer, if any.
    pub fn code(&self) -> Option<u16> {
        self.status()
            .and_then(|s| s.code)
            .and_then(|c| u16::try_from(c).ok())
    }

    fn reason(&self) -> Option<&str> {
        self.status().and_then(|s| s.reason.as_deref())
    }

    /// 403 Forbidden (a new object in a terminating namespace, or access denied).
    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403) || self.reason() == Some("Forbidden")
    }

    /// 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404) || self.reason() == Some("NotFound")
    }

    /// 409 Conflict (a failed resourceVersion or uid precondition). Not AlreadyExists.
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409) && self.reason() != Some("AlreadyExists")
    }

    /// 409 AlreadyExists (a create found the name taken).
    pub fn is_already_exists(&self) -> bool {
        self.reason() == Some("AlreadyExists")
    }

    /// 410 Gone / Expired (a resourceVersion or continue token too old).
    pub fn is_gone(&self) -> bool {
        self.code() == Some(410) || matches!(self.reason(), Some("Expired" | "Gone"))
    }

    /// 429 TooManyRequests.
    pub fn is_too_many_requests(&self) -> bool {
        self.code() == Some(429)
    }

    /// Whether the server's `Status` has a cause of type `reason` (apimachinery's
    /// `HasStatusCause`, `pkg/api/errors/errors.go`).
    pub fn has_cause(&self, reason: &str) -> bool {
        self.status()
            .and_then(|s| s.details.as_ref())
            .and_then(|d| d.causes.as_ref())
            .is_some_and(|causes| causes.iter().any(|c| c.reason.as_deref() == Some(reason)))
    }

    /// 504 Timeout "Too large resource version" (docs/api-behaviour.md#resourceversion-on-reads).
    pub fn is_resource_version_too_large(&self) -> bool {
        self.has_cause("ResourceVersionTooLarge")
    }

    /// A create refused because its namespace is terminating (403 with the cause
    /// `NamespaceTerminating`, `v1.NamespaceTerminatingCause`): controllers drop such a write
    /// instead of retrying it.
    pub fn is_namespace_terminating(&self) -> bool {
        self.has_cause("NamespaceTerminating")
    }

    /// A failure to connect or a broken connection: worth retrying an idempotent request. A
    /// TLS failure (the server's certificate is not trusted, the handshake is refused) is not:
    /// it fails the same way every time, as client-go does not retry it either.
    pub fn is_connection_error(&self) -> bool {
        match self {
            Error::Transport(err) => {
                (err.is_connect() || err.is_request() || err.is_timeout()) && !is_tls_failure(err)
            }
            Error::Timeout(_) => true,
            _ => false,
        }
    }
}

/// Whether `err` comes from TLS: rustls's errors reach reqwest as `io::Error`s of kind
/// `InvalidData` (perhaps wrapped in another `io::Error`), which a refused or broken TCP
/// connection never is.
fn is_tls_failure(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = cause {
        cause = match current.downcast_ref::<std::io::Error>() {
            Some(io) if io.kind() == std::io::ErrorKind::InvalidData => return true,
            // `io::Error::source` skips the error it wraps: look into it.
            Some(io) => match io.get_ref() {
                Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
                None => current.source(),
            },
            None => current.source(),
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_classify_statuses_by_code_and_reason() {
        assert!(Error::api(404, "NotFound", "x").is_not_found());
        assert!(Error::api(409, "Conflict", "x").is_conflict());
        assert!(!Error::api(409, "AlreadyExists", "x").is_conflict());
        assert!(Error::api(409, "AlreadyExists", "x").is_already_exists());
        assert!(Error::api(410, "Expired", "x").is_gone());
        assert!(!Error::api(500, "InternalError", "x").is_gone());
        assert!(Error::Config("x".into()).status().is_none());
    }
}
