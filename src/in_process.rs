//! How the `kubemock` binary's own components (controllers, scheduler, simulated kubelets)
//! reach the server they run beside: a [`kubemock_client::transport::LocalServer`] over the
//! server's [`LocalApi`], so that their requests go through the server's whole request
//! pipeline in memory, without the loopback socket and HTTP's framing (issue 23). It lives
//! here, in the root crate, because it is the one place that knows both the client and the
//! server: neither of them may depend on the other.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use kubemock_apiserver::LocalApi;
use kubemock_client::transport::{Local, LocalServer};

/// The server's pipeline as a client's transport: the answers' bodies are streamed to the
/// client as they come (a watch's events).
pub struct InProcess(LocalApi);

impl InProcess {
    /// `api` as a client configuration's server in this process
    /// ([`kubemock_client::Config::local`]).
    pub fn config(api: &LocalApi) -> Local {
        Local(Arc::new(InProcess(api.clone())))
    }
}

impl LocalServer for InProcess {
    fn call(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'static, http::Response<reqwest::Body>> {
        let api = self.0.clone();
        Box::pin(async move {
            api.call(request)
                .await
                .map(|body| reqwest::Body::wrap_stream(body.into_data_stream()))
        })
    }
}
