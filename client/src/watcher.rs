//! The list-then-watch loop that keeps a view of a resource current (docs/api-behaviour.md#how-clients-recover), as an explicit
//! state machine: list (paginated) or streaming list, then watch from the list's
//! resourceVersion with bookmarks, resume from the last seen resourceVersion when a watch
//! ends, relist on 410, and back off exponentially with jitter on errors.
//!
//! resourceVersion policy (client-go's `tools/cache/reflector.go`): the first list reads at
//! `"0"` (any: a cache may answer) unless configured otherwise; a relist after 410 reads the
//! latest state (`""`); a relist after any other failure reads at the last seen resourceVersion
//! with `NotOlderThan`, so the view never goes back in time. A watch resumes from the last
//! resourceVersion seen in an event or a bookmark.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;

use crate::api::{Api, DEFAULT_PAGE_SIZE};
use crate::error::{Error, Result};
use crate::request::{ListParams, VersionMatch, WatchParams};
use crate::resource::{ObjectList, Resource};
use crate::selector::{FieldSelector, METADATA_NAME};
use crate::transport::WatchEvent;

/// client-go's reflector sets each watch's `timeoutSeconds` to this times a random factor in
/// [1, 2), so that a fleet of informers does not re-watch in lockstep (docs/api-behaviour.md#watch-lifetime: 300–599 s).
pub const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// First wait after an error (client-go reflector and kube-rs: 800 ms).
pub const BACKOFF_INITIAL: Duration = Duration::from_millis(800);
/// Longest wait after repeated errors (client-go reflector and kube-rs: 30 s).
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Jitter: each wait is stretched by up to this fraction of itself (client-go uses 1.0).
pub const BACKOFF_JITTER: f64 = 1.0;
/// A watch that ends sooner than this without delivering anything counts as a failure and is
/// retried after a backoff (client-go logs "very short watch"), so that a server closing watches
/// at once cannot make the client spin.
pub const SHORT_WATCH: Duration = Duration::from_secs(1);

/// A source of lists and watches: [`Api`] for a real server, a scripted one in tests.
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// One list request (one page).
    fn list(&self, params: ListParams) -> BoxFuture<'static, Result<ObjectList<K>>>;
    /// One watch request from `resource_version`.
    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Result<WatchEvent<K>>>>>;
}

impl<K: Resource> ListerWatcher<K> for Api<K> {
    fn list(&self, params: ListParams) -> BoxFuture<'static, Result<ObjectList<K>>> {
        let api = self.clone();
        async move { api.list(&params).await }.boxed()
    }

    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Result<WatchEvent<K>>>>> {
        let api = self.clone();
        async move {
            let stream = api.watch(&params, &resource_version).await?;
            Ok(stream.boxed())
        }
        .boxed()
    }
}

/// Which state the first list reads (docs/api-behaviour.md#resourceversion-on-reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitialList {
    /// `resourceVersion=0`: any state, served from a cache when there is one (client-go).
    #[default]
    Any,
    /// No resourceVersion: a consistent read of the latest state, paginated (kube-rs).
    MostRecent,
}

/// How the watcher lists and watches.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Label selector for lists and watches.
    pub label_selector: Option<String>,
    /// Field selector for lists and watches.
    pub field_selector: Option<String>,
    /// Page size of lists ([`DEFAULT_PAGE_SIZE`]).
    pub page_size: u32,
    /// What the first list reads.
    pub initial_list: InitialList,
    /// Use a streaming list (`sendInitialEvents`, docs/api-behaviour.md#streaming-lists) instead of list requests.
    pub streaming_list: bool,
    /// Lower bound of the randomised watch timeout ([`MIN_WATCH_TIMEOUT`]).
    pub min_watch_timeout: Duration,
    /// Backoff after errors.
    pub backoff: BackoffConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            label_selector: None,
            field_selector: None,
            page_size: DEFAULT_PAGE_SIZE,
            initial_list: InitialList::default(),
            streaming_list: false,
            min_watch_timeout: MIN_WATCH_TIMEOUT,
            backoff: BackoffConfig::default(),
        }
    }
}

impl Config {
    /// Restricts to objects matching a label selector.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }
    /// Restricts to objects matching a field selector: text or a [`FieldSelector`]. Text that is not a field selector fails the
    /// watcher's list and watch requests before they are sent (an `Error::InvalidRequest`).
    #[must_use]
    pub fn fields(mut self, selector: impl fmt::Display) -> Self {
        self.field_selector = Some(selector.to_string());
        self
    }
    /// Restricts to the object named `name`, for watching one object (`metadata.name=<name>`,
    /// the name escaped, as client-go's `fields.OneTermEqualSelector("metadata.name", name)`).
    #[must_use]
    pub fn named(self, name: &str) -> Self {
        self.fields(FieldSelector::one_term_equal(METADATA_NAME, name))
    }
    /// Sets the page size.
    #[must_use]
    pub fn page_size(mut self, size: u32) -> Self {
        self.page_size = size.max(1);
        self
    }
    /// Sets what the first list reads.
    #[must_use]
    pub fn initial_list(mut self, initial: InitialList) -> Self {
        self.initial_list = initial;
        self
    }
    /// Uses streaming lists (`sendInitialEvents=true`).
    #[must_use]
    pub fn streaming_list(mut self) -> Self {
        self.streaming_list = true;
        self
    }
}

/// Exponential backoff with jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// First wait.
    pub initial: Duration,
    /// Longest wait.
    pub max: Duration,
    /// Each wait is stretched by a random fraction in [0, jitter) of itself.
    pub jitter: f64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: BACKOFF_INITIAL,
            max: BACKOFF_MAX,
            jitter: BACKOFF_JITTER,
        }
    }
}

/// The waits of one run of failures: initial, doubled each time, capped, jittered; reset
/// after a success.
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    current: Option<Duration>,
}

impl Backoff {
    /// A fresh backoff.
    pub fn new(config: BackoffConfig) -> Self {
        Backoff {
            config,
            current: None,
        }
    }

    /// The next wait.
    pub fn next_wait(&mut self) -> Duration {
        let base = match self.current {
            None => self.config.initial,
            Some(current) => current.saturating_mul(2),
        }
        .min(self.config.max);
        self.current = Some(base);
        let jitter = base.mul_f64(fastrand::f64() * self.config.jitter.max(0.0));
        (base + jitter).min(self.config.max)
    }

    /// Forgets past failures.
    pub fn reset(&mut self) {
        self.current = None;
    }
}

/// What the watcher reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<K> {
    /// A (re)list begins: what follows up to `InitDone` is the complete state.
    Init,
    /// An object of the (re)list.
    InitApply(K),
    /// The (re)list is complete: the listed objects replace the previous view at once.
    InitDone,
    /// An object was added or changed.
    Apply(K),
    /// An object was deleted (its last state).
    Delete(K),
}

enum State<K> {
    /// Nothing listed yet, or a relist is needed.
    Empty { after_gone: bool },
    /// A paginated list is in progress.
    InitPage {
        continue_token: String,
        resource_version: String,
    },
    /// A streaming list is in progress: initial events until the end bookmark.
    InitialWatch {
        stream: BoxStream<'static, Result<WatchEvent<K>>>,
    },
    /// Listed (or a watch ended): watch from `resource_version`.
    InitListed { resource_version: String },
    /// Watching.
    Watching {
        resource_version: String,
        stream: BoxStream<'static, Result<WatchEvent<K>>>,
        started: Instant,
        delivered: bool,
    },
}

/// Where the watcher goes after a failure.
enum Next {
    /// Same state again, after a backoff.
    Retry,
    /// Relist after a backoff (`gone`: the resourceVersion expired).
    Relist { gone: bool },
}

/// The watcher: drives the state machine and yields events (and errors, after which it
/// carries on by itself after a backoff).
pub struct Watcher<K, L> {
    source: L,
    config: Config,
    state: Option<State<K>>,
    backoff: Backoff,
    /// Wait before the next step (set after an error).
    pending_wait: Option<Duration>,
    /// The last resourceVersion seen (list, event or bookmark): where a relist after a
    /// non-410 failure starts.
    last_resource_version: String,
    /// Set when the server refused a streaming list: list requests from then on.
    streaming_refused: bool,
    /// Events of a list page not yet handed out (at most one page).
    buffered: VecDeque<Event<K>>,
}

impl<K: Resource, L: ListerWatcher<K>> Watcher<K, L> {
    /// A watcher of `source`.
    pub fn new(source: L, config: Config) -> Self {
        let backoff = Backoff::new(config.backoff);
        Watcher {
            source,
            config,
            state: Some(State::Empty { after_gone: false }),
            backoff,
            pending_wait: None,
            last_resource_version: String::new(),
            streaming_refused: false,
            buffered: VecDeque::new(),
        }
    }

    /// The watcher as a stream of events (never ending by itself).
    pub fn into_stream(self) -> impl Stream<Item = Result<Event<K>>> + Send {
        futures_util::stream::unfold(self, |mut watcher| async move {
            let item = watcher.next_event().await;
            Some((item, watcher))
        })
    }

    /// The last resourceVersion seen.
    pub fn resource_version(&self) -> &str {
        &self.last_resource_version
    }

    fn watch_params(&self, streaming: bool) -> WatchParams {
        let factor = 1.0 + fastrand::f64();
        WatchParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            bookmarks: true,
            timeout: Some(self.config.min_watch_timeout.mul_f64(factor)),
            send_initial_events: streaming,
        }
    }

    fn list_params(&self, after_gone: bool) -> ListParams {
        let mut params = ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            limit: Some(self.config.page_size),
            ..ListParams::default()
        };
        if after_gone {
            // The last resourceVersion expired: read the latest state.
        } else if self.last_resource_version.is_empty() {
            if self.config.initial_list == InitialList::Any {
                params.resource_version = Some("0".into());
            }
        } else {
            params.resource_version = Some(self.last_resource_version.clone());
            params.version_match = Some(VersionMatch::NotOlderThan);
        }
        params
    }

    /// Steps until there is something to report.
    pub async fn next_event(&mut self) -> Result<Event<K>> {
        loop {
            if let Some(event) = self.buffered.pop_front() {
                return Ok(event);
            }
            if let Some(wait) = self.pending_wait.take() {
                tokio::time::sleep(wait).await;
            }
            let state = self
                .state
                .take()
                .unwrap_or(State::Empty { after_gone: false });
            let (output, next) = self.step(state).await;
            self.state = Some(next);
            match output {
                Some(Ok(event)) => return Ok(event),
                Some(Err(err)) => {
                    self.pending_wait = Some(self.backoff.next_wait());
                    return Err(err);
                }
                None => {}
            }
        }
    }

    /// One transition. `None` output: nothing to report, step again.
    async fn step(&mut self, state: State<K>) -> (Option<Result<Event<K>>>, State<K>) {
        match state {
            State::Empty { after_gone } => {
                if self.config.streaming_list && !self.streaming_refused {
                    let params = self.watch_params(true);
                    let rv = if after_gone || self.last_resource_version.is_empty() {
                        String::new()
                    } else {
                        self.last_resource_version.clone()
                    };
                    match self.source.watch(params, rv).await {
                        Ok(stream) => (Some(Ok(Event::Init)), State::InitialWatch { stream }),
                        Err(err) => {
                            if matches!(err.code(), Some(400 | 403 | 405 | 415 | 422)) {
                                tracing::info!(error = %err, "streaming list refused; falling back to list");
                                self.streaming_refused = true;
                            }
                            (Some(Err(err)), State::Empty { after_gone })
                        }
                    }
                } else {
                    let params = self.list_params(after_gone);
                    match self.source.list(params).await {
                        Ok(list) => self.listed_page(list, true),
                        Err(err) => {
                            let gone =
                                after_gone || err.is_gone() || err.is_resource_version_too_large();
                            (Some(Err(err)), State::Empty { after_gone: gone })
                        }
                    }
                }
            }
            State::InitPage {
                continue_token,
                resource_version,
            } => {
                let params = ListParams {
                    continue_token: Some(continue_token),
                    limit: Some(self.config.page_size),
                    label_selector: self.config.label_selector.clone(),
                    field_selector: self.config.field_selector.clone(),
                    ..ListParams::default()
                };
                match self.source.list(params).await {
                    Ok(mut list) => {
                        if list
                            .metadata
                            .resource_version
                            .as_deref()
                            .unwrap_or("")
                            .is_empty()
                        {
                            list.metadata.resource_version = Some(resource_version);
                        }
                        self.listed_page(list, false)
                    }
                    // The snapshot expired mid-list: start over with the latest state.
                    Err(err) => (Some(Err(err)), State::Empty { after_gone: true }),
                }
            }
            State::InitialWatch { mut stream } => match stream.next().await {
                Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj))) => (
                    Some(Ok(Event::InitApply(obj))),
                    State::InitialWatch { stream },
                ),
                Some(Ok(WatchEvent::Deleted(obj))) => {
                    tracing::warn!(key = %obj.key(), "DELETED during the initial events of a streaming list");
                    (None, State::InitialWatch { stream })
                }
                Some(Ok(WatchEvent::Bookmark(bookmark))) => {
                    if bookmark.initial_events_end {
                        self.backoff.reset();
                        self.last_resource_version = bookmark.resource_version.clone();
                        (
                            Some(Ok(Event::InitDone)),
                            State::Watching {
                                resource_version: bookmark.resource_version,
                                stream,
                                started: Instant::now(),
                                delivered: true,
                            },
                        )
                    } else {
                        (None, State::InitialWatch { stream })
                    }
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    let err = Error::Api(status);
                    let gone = err.is_gone();
                    (Some(Err(err)), State::Empty { after_gone: gone })
                }
                Some(Err(err)) => (Some(Err(err)), State::Empty { after_gone: false }),
                None => (
                    Some(Err(Error::Stream(
                        "streaming list ended before its initial events were complete".into(),
                    ))),
                    State::Empty { after_gone: false },
                ),
            },
            State::InitListed { resource_version } => {
                let params = self.watch_params(false);
                match self.source.watch(params, resource_version.clone()).await {
                    Ok(stream) => (
                        None,
                        State::Watching {
                            resource_version,
                            stream,
                            started: Instant::now(),
                            delivered: false,
                        },
                    ),
                    Err(err) => {
                        let next = match classify(&err) {
                            Next::Retry => State::InitListed { resource_version },
                            Next::Relist { gone } => State::Empty { after_gone: gone },
                        };
                        (Some(Err(err)), next)
                    }
                }
            }
            State::Watching {
                resource_version,
                mut stream,
                started,
                delivered,
            } => match stream.next().await {
                Some(Ok(event)) => {
                    let (output, rv) = match event {
                        WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                            let rv = obj.resource_version().to_owned();
                            (Some(Ok(Event::Apply(obj))), rv)
                        }
                        WatchEvent::Deleted(obj) => {
                            let rv = obj.resource_version().to_owned();
                            (Some(Ok(Event::Delete(obj))), rv)
                        }
                        WatchEvent::Bookmark(bookmark) => (None, bookmark.resource_version),
                        WatchEvent::Error(status) => {
                            // 410: relist the latest state; client-go: any other ERROR ends
                            // the watch too, relist after a backoff from the last
                            // resourceVersion (docs/api-behaviour.md#how-clients-recover).
                            let err = Error::Api(status);
                            let gone = err.is_gone();
                            return (Some(Err(err)), State::Empty { after_gone: gone });
                        }
                    };
                    self.backoff.reset();
                    let rv = if rv.is_empty() { resource_version } else { rv };
                    self.last_resource_version = rv.clone();
                    (
                        output,
                        State::Watching {
                            resource_version: rv,
                            stream,
                            started,
                            delivered: true,
                        },
                    )
                }
                // A broken stream: resume from the last resourceVersion after a backoff.
                Some(Err(err)) => (Some(Err(err)), State::InitListed { resource_version }),
                None => {
                    if !delivered && started.elapsed() < SHORT_WATCH {
                        let err = Error::Stream("watch ended immediately without events".into());
                        return (Some(Err(err)), State::InitListed { resource_version });
                    }
                    tracing::debug!(%resource_version, "watch ended; resuming");
                    (None, State::InitListed { resource_version })
                }
            },
        }
    }

    /// Queues a list page's events: `Init` before the first page, `InitApply` per object,
    /// `InitDone` after the last page; then watch from the list's resourceVersion.
    fn listed_page(
        &mut self,
        list: ObjectList<K>,
        first: bool,
    ) -> (Option<Result<Event<K>>>, State<K>) {
        let resource_version = list.metadata.resource_version.clone().unwrap_or_default();
        let continue_token = list.metadata.continue_.clone().filter(|t| !t.is_empty());
        if resource_version.is_empty() {
            // kube-rs treats this as an error too: there is nowhere to watch from.
            return (
                Some(Err(Error::Stream(
                    "list answer without a resourceVersion".into(),
                ))),
                State::Empty { after_gone: true },
            );
        }
        if first {
            self.buffered.push_back(Event::Init);
        }
        self.buffered
            .extend(list.items.into_iter().map(Event::InitApply));
        let next = match continue_token {
            Some(token) => State::InitPage {
                continue_token: token,
                resource_version,
            },
            None => {
                self.backoff.reset();
                self.last_resource_version = resource_version.clone();
                self.buffered.push_back(Event::InitDone);
                State::InitListed { resource_version }
            }
        };
        (None, next)
    }
}

fn classify(err: &Error) -> Next {
    if err.is_gone() {
        return Next::Relist { gone: true };
    }
    match err {
        Error::Api(_) if err.is_too_many_requests() || err.code().is_some_and(|c| c >= 500) => {
            Next::Retry
        }
        Error::Api(_) => Next::Relist { gone: false },
        _ => Next::Retry,
    }
}

/// A scripted lister-watcher for tests: answers lists and watches from queues and records
/// every call (with its time).
#[cfg(test)]
pub(crate) mod script {
    use std::collections::VecDeque;
    use std::sync::Arc;

    use futures_util::future::BoxFuture;
    use futures_util::stream::BoxStream;
    use futures_util::{FutureExt, StreamExt};
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
    use parking_lot::Mutex;
    use tokio::time::Instant;

    use super::ListerWatcher;
    use crate::error::{Error, Result};
    use crate::request::{ListParams, WatchParams};
    use crate::resource::ObjectList;
    use crate::transport::{Bookmark, WatchEvent};

    /// A watch answer: events, then the stream ends (or stays open when `hang`).
    pub(crate) struct WatchAnswer {
        pub(crate) events: Vec<Result<WatchEvent<ConfigMap>>>,
        pub(crate) hang: bool,
    }

    #[derive(Default)]
    pub(crate) struct Inner {
        pub(crate) lists: VecDeque<Result<ObjectList<ConfigMap>>>,
        pub(crate) watches: VecDeque<Result<WatchAnswer>>,
        pub(crate) calls: Vec<(Instant, String)>,
    }

    #[derive(Clone, Default)]
    pub(crate) struct Script(pub(crate) Arc<Mutex<Inner>>);

    impl Script {
        pub(crate) fn list(&self, answer: Result<ObjectList<ConfigMap>>) -> &Self {
            self.0.lock().lists.push_back(answer);
            self
        }
        pub(crate) fn watch(&self, events: Vec<Result<WatchEvent<ConfigMap>>>) -> &Self {
            self.0.lock().watches.push_back(Ok(WatchAnswer {
                events,
                hang: false,
            }));
            self
        }
        pub(crate) fn watch_hanging(&self, events: Vec<Result<WatchEvent<ConfigMap>>>) -> &Self {
            self.0
                .lock()
                .watches
                .push_back(Ok(WatchAnswer { events, hang: true }));
            self
        }
        pub(crate) fn watch_fails(&self, err: Error) -> &Self {
            self.0.lock().watches.push_back(Err(err));
            self
        }
        pub(crate) fn calls(&self) -> Vec<String> {
            self.0.lock().calls.iter().map(|c| c.1.clone()).collect()
        }
        pub(crate) fn call_times(&self) -> Vec<Instant> {
            self.0.lock().calls.iter().map(|c| c.0).collect()
        }
    }

    pub(crate) fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    pub(crate) fn page(
        rv: &str,
        continue_token: Option<&str>,
        items: Vec<ConfigMap>,
    ) -> Result<ObjectList<ConfigMap>> {
        Ok(ObjectList {
            metadata: ListMeta {
                resource_version: Some(rv.into()),
                continue_: continue_token.map(str::to_owned),
                ..ListMeta::default()
            },
            items,
        })
    }

    pub(crate) fn bookmark(rv: &str, end: bool) -> Result<WatchEvent<ConfigMap>> {
        Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: rv.into(),
            initial_events_end: end,
        }))
    }

    pub(crate) fn gone() -> Result<WatchEvent<ConfigMap>> {
        match Error::api(410, "Expired", "too old resource version") {
            Error::Api(status) => Ok(WatchEvent::Error(status)),
            _ => unreachable!("Error::api builds an Api error"),
        }
    }

    impl ListerWatcher<ConfigMap> for Script {
        fn list(&self, params: ListParams) -> BoxFuture<'static, Result<ObjectList<ConfigMap>>> {
            let mut inner = self.0.lock();
            let mut call = String::from("list");
            if let Some(rv) = &params.resource_version {
                call.push_str(&format!(" rv={rv}"));
            }
            if let Some(m) = params.version_match {
                call.push_str(&format!(" match={m:?}"));
            }
            if let Some(c) = &params.continue_token {
                call.push_str(&format!(" continue={c}"));
            }
            inner.calls.push((Instant::now(), call));
            match inner.lists.pop_front() {
                Some(answer) => futures_util::future::ready(answer).boxed(),
                None => futures_util::future::pending().boxed(),
            }
        }

        fn watch(
            &self,
            params: WatchParams,
            resource_version: String,
        ) -> BoxFuture<'static, Result<BoxStream<'static, Result<WatchEvent<ConfigMap>>>>> {
            let mut inner = self.0.lock();
            let mut call = format!("watch rv={resource_version}");
            if params.send_initial_events {
                call.push_str(" initial");
            }
            let timeout = params.timeout.map(|t| t.as_secs()).unwrap_or(0);
            assert!(
                (300..600).contains(&timeout),
                "timeoutSeconds {timeout} randomised in [300, 600)"
            );
            assert!(params.bookmarks);
            inner.calls.push((Instant::now(), call));
            match inner.watches.pop_front() {
                Some(Ok(answer)) => {
                    let events = futures_util::stream::iter(answer.events);
                    let stream: BoxStream<'static, _> = if answer.hang {
                        events.chain(futures_util::stream::pending()).boxed()
                    } else {
                        events.boxed()
                    };
                    futures_util::future::ready(Ok(stream)).boxed()
                }
                Some(Err(err)) => futures_util::future::ready(Err(err)).boxed(),
                None => futures_util::future::pending().boxed(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::script::{Script, bookmark, cm, gone, page};
    use super::*;

    fn describe(event: &Result<Event<ConfigMap>>) -> String {
        match event {
            Ok(Event::Init) => "init".into(),
            Ok(Event::InitApply(o)) => format!("init-apply {}", o.key().name),
            Ok(Event::InitDone) => "init-done".into(),
            Ok(Event::Apply(o)) => format!("apply {}@{}", o.key().name, o.resource_version()),
            Ok(Event::Delete(o)) => format!("delete {}", o.key().name),
            Err(err) => format!("error {}", err.code().unwrap_or(0)),
        }
    }

    /// Drives the watcher for `time` (it keeps stepping until an answer never comes).
    async fn drive(watcher: &mut Watcher<ConfigMap, Script>, time: Duration) {
        let _ = tokio::time::timeout(time, async {
            loop {
                let _ = watcher.next_event().await;
            }
        })
        .await;
    }

    async fn take(watcher: &mut Watcher<ConfigMap, Script>, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..n {
            let event = tokio::time::timeout(Duration::from_secs(600), watcher.next_event())
                .await
                .expect("an event within the timeout");
            out.push(describe(&event));
        }
        out
    }

    #[test]
    fn a_watcher_of_one_object_selects_its_escaped_name() {
        let config = Config::default().named("a,b");
        assert_eq!(
            config.field_selector.as_deref(),
            Some(r"metadata.name=a\,b")
        );
        let typed =
            Config::default().fields(FieldSelector::one_term_not_equal("spec.nodeName", ""));
        assert_eq!(typed.field_selector.as_deref(), Some("spec.nodeName!="));
    }

    #[tokio::test(start_paused = true)]
    async fn watcher_should_list_pages_then_watch_from_the_list_version() {
        let script = Script::default();
        script
            .list(page("10", Some("t1"), vec![cm("a", "3")]))
            .list(page("10", None, vec![cm("b", "4")]))
            .watch_hanging(vec![Ok(WatchEvent::Modified(cm("a", "11")))]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        assert_eq!(
            take(&mut watcher, 5).await,
            vec![
                "init",
                "init-apply a",
                "init-apply b",
                "init-done",
                "apply a@11"
            ]
        );
        assert_eq!(
            script.calls(),
            vec!["list rv=0", "list continue=t1", "watch rv=10"]
        );
        assert_eq!(watcher.resource_version(), "11");
    }

    #[tokio::test(start_paused = true)]
    async fn watcher_should_resume_from_a_bookmark_when_the_stream_ends_without_relisting() {
        let script = Script::default();
        script
            .list(page("10", None, vec![]))
            .watch(vec![
                Ok(WatchEvent::Added(cm("a", "12"))),
                bookmark("20", false),
            ])
            .watch_hanging(vec![Ok(WatchEvent::Deleted(cm("a", "21")))]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        assert_eq!(
            take(&mut watcher, 4).await,
            vec!["init", "init-done", "apply a@12", "delete a"]
        );
        assert_eq!(
            script.calls(),
            vec!["list rv=0", "watch rv=10", "watch rv=20"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn watcher_should_relist_the_latest_state_after_an_in_stream_410() {
        let script = Script::default();
        script
            .list(page("10", None, vec![cm("a", "3")]))
            .watch(vec![Ok(WatchEvent::Added(cm("b", "12"))), gone()])
            .list(page("30", None, vec![cm("b", "25")]))
            .watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        assert_eq!(
            take(&mut watcher, 8).await,
            vec![
                "init",
                "init-apply a",
                "init-done",
                "apply b@12",
                "error 410",
                "init",
                "init-apply b",
                "init-done"
            ]
        );
        // No resourceVersion: a consistent read of the latest state (kube-rs; client-go's
        // second attempt).
        assert_eq!(script.calls(), vec!["list rv=0", "watch rv=10", "list"]);
        drive(&mut watcher, Duration::from_secs(60)).await;
        assert_eq!(
            script.calls().last().map(String::as_str),
            Some("watch rv=30")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn watcher_should_relist_when_the_watch_request_itself_answers_410() {
        let script = Script::default();
        script
            .list(page("10", None, vec![]))
            .watch_fails(Error::api(410, "Gone", "gone"))
            .list(page("40", None, vec![]))
            .watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        assert_eq!(
            take(&mut watcher, 5).await,
            vec!["init", "init-done", "error 410", "init", "init-done"]
        );
        assert_eq!(script.calls(), vec!["list rv=0", "watch rv=10", "list"]);
    }

    #[tokio::test(start_paused = true)]
    async fn watcher_should_rewatch_the_same_version_after_a_server_error() {
        let script = Script::default();
        script
            .list(page("10", None, vec![]))
            .watch_fails(Error::api(503, "ServiceUnavailable", "busy"))
            .watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        assert_eq!(
            take(&mut watcher, 3).await,
            vec!["init", "init-done", "error 503"]
        );
        drive(&mut watcher, Duration::from_secs(60)).await;
        assert_eq!(
            script.calls(),
            vec!["list rv=0", "watch rv=10", "watch rv=10"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn watcher_should_back_off_exponentially_with_jitter_and_reset_after_success() {
        let script = Script::default();
        for _ in 0..4 {
            script.list(Err(Error::api(500, "InternalError", "boom")));
        }
        script.list(page("10", None, vec![])).watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        assert_eq!(
            take(&mut watcher, 6).await,
            vec![
                "error 500",
                "error 500",
                "error 500",
                "error 500",
                "init",
                "init-done"
            ]
        );
        drive(&mut watcher, Duration::from_secs(1)).await;
        let times = script.call_times();
        let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
        // Base waits 0.8, 1.6, 3.2, 6.4 s, each stretched by up to 100 %.
        for (gap, base) in gaps.iter().zip([0.8, 1.6, 3.2, 6.4]) {
            let base = Duration::from_secs_f64(base);
            assert!(
                *gap >= base && *gap <= base * 2,
                "gap {gap:?} for base {base:?}"
            );
        }
        // The successful list reset the backoff: the watch followed at once.
        assert_eq!(gaps[4], Duration::ZERO);
        // A failed relist after a non-410 failure reads at the last version, NotOlderThan.
        assert_eq!(
            script.calls()[1],
            "list rv=0",
            "first list still at 0 after failing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_is_capped_at_its_maximum() {
        let mut backoff = Backoff::new(BackoffConfig::default());
        let waits: Vec<Duration> = (0..12).map(|_| backoff.next_wait()).collect();
        assert!(waits.iter().all(|w| *w <= BACKOFF_MAX));
        assert_eq!(waits[11], BACKOFF_MAX, "0.8 s * 2^11 is far past the cap");
        backoff.reset();
        assert!(backoff.next_wait() < BACKOFF_INITIAL * 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_ending_at_once_without_events_counts_as_a_failure() {
        let script = Script::default();
        script
            .list(page("10", None, vec![]))
            .watch(vec![])
            .watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        let events = take(&mut watcher, 3).await;
        assert_eq!(events, vec!["init", "init-done", "error 0"]);
        drive(&mut watcher, Duration::from_secs(60)).await;
        let times = script.call_times();
        assert!(
            times[2] - times[1] >= BACKOFF_INITIAL,
            "re-watched after a backoff"
        );
        assert_eq!(
            script.calls(),
            vec!["list rv=0", "watch rv=10", "watch rv=10"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn streaming_list_ends_its_initial_events_at_the_marked_bookmark() {
        let script = Script::default();
        script
            .watch(vec![
                Ok(WatchEvent::Added(cm("a", "5"))),
                Ok(WatchEvent::Added(cm("b", "6"))),
                bookmark("8", false),
                bookmark("9", true),
                Ok(WatchEvent::Modified(cm("a", "10"))),
            ])
            .watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default().streaming_list());
        assert_eq!(
            take(&mut watcher, 5).await,
            vec![
                "init",
                "init-apply a",
                "init-apply b",
                "init-done",
                "apply a@10"
            ]
        );
        drive(&mut watcher, Duration::from_secs(60)).await;
        assert_eq!(script.calls(), vec!["watch rv= initial", "watch rv=10"]);
    }

    #[tokio::test(start_paused = true)]
    async fn streaming_list_falls_back_to_list_when_refused() {
        let script = Script::default();
        script
            .watch_fails(Error::api(422, "Invalid", "sendInitialEvents is forbidden"))
            .list(page("3", None, vec![]))
            .watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default().streaming_list());
        assert_eq!(
            take(&mut watcher, 3).await,
            vec!["error 422", "init", "init-done"]
        );
        drive(&mut watcher, Duration::from_secs(60)).await;
        assert_eq!(
            script.calls(),
            vec!["watch rv= initial", "list rv=0", "watch rv=3"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_relist_after_another_error_reads_not_older_than_the_last_version() {
        let script = Script::default();
        script
            .list(page("10", None, vec![]))
            .watch(vec![
                Ok(WatchEvent::Added(cm("a", "15"))),
                Err(Error::api(500, "InternalError", "x")),
            ])
            .watch_fails(Error::api(403, "Forbidden", "no"))
            .list(page("20", None, vec![]))
            .watch_hanging(vec![]);
        let mut watcher = Watcher::new(script.clone(), Config::default());
        let events = take(&mut watcher, 7).await;
        assert_eq!(
            events,
            vec![
                "init",
                "init-done",
                "apply a@15",
                "error 500",
                "error 403",
                "init",
                "init-done"
            ]
        );
        assert_eq!(
            script.calls(),
            vec![
                "list rv=0",
                "watch rv=10",
                "watch rv=15",
                "list rv=15 match=NotOlderThan"
            ]
        );
    }
}
