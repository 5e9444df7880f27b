//! The authentication step of the request pipeline
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go`, then
//! `impersonation.go`): the authenticators of `authn` decide who a request is made by, the
//! ServiceAccount authenticator (`tokens`, which reads the store) judges the JWTs they leave to
//! it, and the user goes into the request's extensions as a [`Requester`]. A request no
//! authenticator accepts is upstream's 401 `Unauthorized` (audited as upstream's
//! `WithFailedAuthenticationAudit` does). Impersonation is the later step of
//! [`ImpersonationLayer`]: the audit layer sits between the two, as upstream's.
//!
//! The step is a tower layer rather than an axum `from_fn` middleware: in the open mode it
//! costs one `Arc` clone and a look at the header names per request, with no boxed future.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::future::{BoxFuture, Either};
use tracing::{debug, warn};

use crate::audit::{self, AuditHandle};
use crate::authn::{Authenticator, Step, impersonation};
use crate::identity::{self, Requester, UserInfo};
use crate::state::AppState;
use crate::status::ApiError;
use crate::tokens;

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

/// After authentication: the user into the extensions, the credentials out of the headers (as
/// upstream removes `Authorization` once it is used). Impersonation is a step of its own,
/// after the audit layer ([`ImpersonationLayer`]).
fn admit(request: &mut Request, user: Arc<UserInfo>) {
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(Requester(user));
}

/// The 401 of a request no authenticator accepted, audited when the server audits
/// (`WithFailedAuthenticationAudit`).
fn refuse(state: &AppState, request: &Request) -> Response {
    let mut response = unauthorized();
    if let Some(audit) = &state.config().audit {
        let id = audit::failed_authentication(audit, request);
        audit::set_audit_id(&mut response, id);
    }
    response
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
            Step::User(user) => {
                admit(&mut request, user);
                Either::Left(self.inner.call(request))
            }
            Step::Unauthorized => answer(refuse(&self.state, &request)),
            Step::ServiceAccountToken(token) => {
                // The ready service goes into the future; a clone stays for the next call.
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let state = self.state.clone();
                Either::Right(Box::pin(async move {
                    let Some(user) = service_account(&state, &token).await else {
                        return Ok(refuse(&state, &request));
                    };
                    admit(&mut request, user);
                    inner.call(request).await
                }))
            }
        }
    }
}

/// The impersonation step of the request pipeline
/// (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`): after
/// authentication and the audit layer (which records the user who authenticated, and here
/// learns whom they impersonate), before the in-flight limit. A request without
/// impersonation headers costs a look at the header names.
#[derive(Clone)]
pub(crate) struct ImpersonationLayer {
    state: AppState,
}

impl ImpersonationLayer {
    pub(crate) fn new(state: AppState) -> Self {
        ImpersonationLayer { state }
    }
}

impl<S> tower::Layer<S> for ImpersonationLayer {
    type Service = Impersonate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Impersonate {
            state: self.state.clone(),
            inner,
        }
    }
}

/// The service of [`ImpersonationLayer`].
#[derive(Clone)]
pub(crate) struct Impersonate<S> {
    state: AppState,
    inner: S,
}

impl<S> tower::Service<Request> for Impersonate<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, std::future::Ready<Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        if !impersonation::asked(request.headers()) {
            return Either::Left(self.inner.call(request));
        }
        let user = identity::requester(request.extensions());
        match impersonation::impersonate(request.headers_mut(), &user, self.state.authorizer()) {
            Ok(None) => Either::Left(self.inner.call(request)),
            Ok(Some(impersonated)) => {
                if let Some(audit) = AuditHandle::of(request.extensions()) {
                    audit.impersonated(&impersonated);
                }
                request
                    .extensions_mut()
                    .insert(Requester(Arc::new(impersonated)));
                Either::Left(self.inner.call(request))
            }
            Err(err) => Either::Right(std::future::ready(Ok(err.into_response()))),
        }
    }
}
