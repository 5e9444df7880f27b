//! Tests need requests made by users other than the open mode's superuser, and kubemock does
//! not authenticate yet (client certificates, tokens and impersonation are the other half of
//! the security issue). Until it does, a server started with
//! `ServerConfig::test_user_headers` takes the request's user from two headers:
//! [`TEST_USER_HEADER`] (the user name) and [`TEST_GROUP_HEADER`] (one group per header
//! value), and adds `system:authenticated` as kube-apiserver's authenticators do
//! (`group.AuthenticatedGroupAdder`), except for `system:anonymous`.
//!
//! Anyone who can reach such a server's port is whoever they say: the binary never sets the
//! option, and only tests and benchmarks start servers with it.

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Map;

use crate::identity::{Requester, SYSTEM_AUTHENTICATED, UserInfo};

/// The header naming the user of a request to a server with test user headers.
pub const TEST_USER_HEADER: &str = "x-kubemock-test-user";

/// The header naming one group of that user (repeat it for more).
pub const TEST_GROUP_HEADER: &str = "x-kubemock-test-group";

/// The user name of anonymous requests (`user.Anonymous`), who is not authenticated.
const ANONYMOUS: &str = "system:anonymous";

/// The middleware: puts the headers' user in the request's extensions.
pub(crate) async fn identify(mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let Some(name) = headers
        .get(TEST_USER_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return next.run(request).await;
    };
    let mut groups: Vec<String> = headers
        .get_all(TEST_GROUP_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    if name != ANONYMOUS && !groups.iter().any(|g| g == SYSTEM_AUTHENTICATED) {
        groups.push(SYSTEM_AUTHENTICATED.to_owned());
    }
    let user = UserInfo {
        name,
        uid: String::new(),
        groups,
        extra: Map::new(),
    };
    request.extensions_mut().insert(Requester(Arc::new(user)));
    next.run(request).await
}
