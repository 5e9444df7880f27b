//! Authentication: who each request is made by, decided before anything else looks at it
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go`), then
//! impersonation (`impersonation`). The user goes into the request's extensions as a
//! [`Requester`], where the authorizer, the handlers (`Call::user`) and the reviews find it.
//!
//! In the open mode every request is `system:admin` (`identity`). In the secure mode the
//! authenticators run in kube-apiserver's order (`pkg/kubeapiserver/authenticator/config.go`):
//! the x509 client certificate (`x509`), then a bearer token: the static tokens of
//! `--token-auth-file` (`tokenfile`), then the ServiceAccount tokens this server signs
//! (`tokens`). The first that knows the request decides it; one that fails (an unknown bearer
//! token, a certificate that does not verify) makes the request a 401, unless a later one
//! knows it (`union.go`). A request that none knows and none failed is `system:anonymous`
//! when `--anonymous-auth` is true (the default, as upstream), else a 401. The 401 is
//! upstream's `Unauthorized` Status.
//!
//! These are the authenticators, which need no store; the request pipeline's step that runs
//! them, asks the ServiceAccount authenticator (which reads the store) and applies
//! impersonation is `crate::authenticate`.

pub(crate) mod impersonation;
pub(crate) mod tokenfile;
pub(crate) mod x509;

use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::http::{HeaderMap, header};
use rustls::pki_types::UnixTime;
use tracing::debug;

use crate::identity::UserInfo;
use crate::tls::TlsConnection;

/// The authenticators of the secure mode.
#[derive(Debug)]
pub(crate) struct Authenticator {
    /// The authorities of client certificates.
    pub(crate) client_ca: x509::ClientCa,
    /// The tokens of `--token-auth-file` (none without it).
    pub(crate) tokens: tokenfile::Tokens,
    /// Whether a request without credentials is `system:anonymous` (`--anonymous-auth`).
    pub(crate) anonymous: bool,
}

/// What the synchronous authenticators make of a request.
pub(crate) enum Step {
    /// Authenticated.
    User(Arc<UserInfo>),
    /// Refused: a 401.
    Unauthorized,
    /// A bearer token only the ServiceAccount authenticator can judge (it reads the store).
    ServiceAccountToken(String),
}

impl Authenticator {
    /// The x509 and static-token authenticators, then anonymous; a token they do not know is
    /// left to the ServiceAccount authenticator when it looks like a JWT.
    pub(crate) fn start(&self, request: &Request) -> Step {
        let mut failed = false;
        if let Some(peer) = request
            .extensions()
            .get::<ConnectInfo<TlsConnection>>()
            .and_then(|info| info.0.peer.as_ref())
        {
            match self.client_ca.authenticate(peer, UnixTime::now()) {
                Ok(Some(user)) => return Step::User(user),
                Ok(None) => {}
                Err(err) => {
                    debug!(%err, "unable to authenticate the client certificate");
                    failed = true;
                }
            }
        }
        match bearer_token(request.headers()) {
            Bearer::None => {}
            Bearer::Token(token) => {
                if let Some(user) = self.tokens.user(token) {
                    return Step::User(Arc::clone(user));
                }
                if token.split('.').count() == 3 {
                    return Step::ServiceAccountToken(token.to_owned());
                }
                debug!("invalid bearer token");
                return Step::Unauthorized;
            }
            Bearer::Unreadable => {
                debug!("invalid bearer token");
                return Step::Unauthorized;
            }
        }
        if failed || !self.anonymous {
            return Step::Unauthorized;
        }
        Step::User(Arc::new(UserInfo::anonymous()))
    }
}

/// A request's bearer token (`request/bearertoken/bearertoken.go`).
enum Bearer<'a> {
    /// No `Authorization: Bearer TOKEN` (no header, another scheme, an empty token): not this
    /// authenticator's business.
    None,
    /// The token.
    Token(&'a str),
    /// A bearer token that is not text: no authenticator can know it.
    Unreadable,
}

fn bearer_token(headers: &HeaderMap) -> Bearer<'_> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Bearer::None;
    };
    let Ok(value) = std::str::from_utf8(value.as_bytes()) else {
        let bytes = value.as_bytes().trim_ascii();
        return if bytes.len() > 7 && bytes[..7].eq_ignore_ascii_case(b"bearer ") {
            Bearer::Unreadable
        } else {
            Bearer::None
        };
    };
    let mut parts = value.trim().splitn(3, ' ');
    let (Some(scheme), Some(token)) = (parts.next(), parts.next()) else {
        return Bearer::None;
    };
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Bearer::None;
    }
    Bearer::Token(token)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn with_authorization(value: &[u8]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_bytes(value).unwrap(),
        );
        headers
    }

    #[test]
    fn bearer_tokens_are_read_as_upstream_reads_them() {
        let token = |value: &[u8]| match bearer_token(&with_authorization(value)) {
            Bearer::None => "none".to_owned(),
            Bearer::Token(token) => format!("token {token}"),
            Bearer::Unreadable => "unreadable".to_owned(),
        };
        assert_eq!(token(b"Bearer abc"), "token abc");
        assert_eq!(token(b"  bearer abc  "), "token abc");
        assert_eq!(token(b"BEARER abc def"), "token abc");
        assert_eq!(
            token(b"Bearer  abc"),
            "none",
            "an empty token: the space is extra"
        );
        assert_eq!(token(b"Bearer"), "none");
        assert_eq!(token(b"Basic YWxpY2U6c2VjcmV0"), "none");
        assert_eq!(token(b"garbage"), "none");
        assert_eq!(token(b"Bearer \xff\xfe"), "unreadable");
        assert_eq!(token(b"\xff\xfe"), "none");
        assert_eq!(
            match bearer_token(&HeaderMap::new()) {
                Bearer::None => "none",
                _ => "other",
            },
            "none"
        );
    }
}
