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
//! The step is a tower layer rather than an axum `from_fn` middleware: in the open mode it
//! costs one `Arc` clone and a look at the header names per request, with no boxed future.

pub(crate) mod impersonation;
pub(crate) mod tokenfile;
pub(crate) mod x509;

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::future::{BoxFuture, Either};
use rustls::pki_types::UnixTime;
use tracing::{debug, warn};

use crate::identity::{Requester, UserInfo};
use crate::state::AppState;
use crate::status::ApiError;
use crate::tls::TlsConnection;
use crate::tokens;

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
enum Step {
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
    fn start(&self, request: &Request) -> Step {
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

/// Upstream's 401 (`filters.Unauthorized`: `apierrors.NewUnauthorized("Unauthorized")`).
fn unauthorized() -> Response {
    ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized").into_response()
}

/// The ServiceAccount token authenticator: this server's TokenRequest tokens, checked for
/// signature, expiry, audience and the objects they are bound to (`tokens`).
async fn service_account(state: &AppState, token: &str) -> Option<Arc<UserInfo>> {
    match tokens::authenticate(state, token, &[], tokens::unix_now()).await {
        Ok(Ok(authenticated)) => Some(Arc::new(authenticated.user)),
        Ok(Err(rejected)) => {
            debug!(?rejected, "invalid bearer token");
            None
        }
        Err(err) => {
            warn!(message = %err.message, "authenticating a service-account token failed");
            None
        }
    }
}

/// After authentication: impersonation (if asked for), the user into the extensions, the
/// credentials out of the headers (as upstream removes `Authorization` once it is used).
fn admit(state: &AppState, request: &mut Request, user: Arc<UserInfo>) -> Result<(), ApiError> {
    let user = if impersonation::asked(request.headers()) {
        match impersonation::impersonate(request.headers_mut(), &user, state.authorizer())? {
            Some(impersonated) => Arc::new(impersonated),
            None => user,
        }
    } else {
        user
    };
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(Requester(user));
    Ok(())
}

/// The authentication step of the request pipeline (see the module documentation).
#[derive(Clone)]
pub(crate) struct AuthenticationLayer {
    state: AppState,
}

impl AuthenticationLayer {
    /// Authentication as `state`'s configuration says (open mode without `security`).
    pub(crate) fn new(state: AppState) -> Self {
        AuthenticationLayer { state }
    }
}

impl<S> tower::Layer<S> for AuthenticationLayer {
    type Service = Authenticate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authenticate {
            authenticator: self
                .state
                .config()
                .security
                .as_ref()
                .map(|security| Arc::clone(security.authenticator())),
            state: self.state.clone(),
            inner,
        }
    }
}

/// The service of [`AuthenticationLayer`].
#[derive(Clone)]
pub(crate) struct Authenticate<S> {
    /// `None` in the open mode.
    authenticator: Option<Arc<Authenticator>>,
    state: AppState,
    inner: S,
}

impl<S> tower::Service<Request> for Authenticate<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let step = match &self.authenticator {
            None => Step::User(UserInfo::open_mode()),
            Some(authenticator) => authenticator.start(&request),
        };
        let answer = |response: Response| -> Self::Future {
            Either::Right(Box::pin(std::future::ready(Ok(response))))
        };
        match step {
            Step::User(user) => match admit(&self.state, &mut request, user) {
                Ok(()) => Either::Left(self.inner.call(request)),
                Err(err) => answer(err.into_response()),
            },
            Step::Unauthorized => answer(unauthorized()),
            Step::ServiceAccountToken(token) => {
                // The ready service goes into the future; a clone stays for the next call.
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let state = self.state.clone();
                Either::Right(Box::pin(async move {
                    let Some(user) = service_account(&state, &token).await else {
                        return Ok(unauthorized());
                    };
                    match admit(&state, &mut request, user) {
                        Ok(()) => inner.call(request).await,
                        Err(err) => Ok(err.into_response()),
                    }
                }))
            }
        }
    }
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
