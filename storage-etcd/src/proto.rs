//! The few etcd v3 messages kubemock sends and reads, written by hand as `prost` messages so
//! that the build needs no `protoc` (crates that generate them, such as `etcd-client`, run
//! `tonic-prost-build` and with it `protoc`). Field numbers and types follow etcd's
//! `api/etcdserverpb/rpc.proto` and `api/mvccpb/kv.proto` (etcd-io/etcd, v3.4 to v3.6: these
//! messages are unchanged); fields kubemock never sets or reads are left out, which protobuf
//! allows (unknown fields are skipped on decode, absent ones are their defaults).

// Names follow the proto files (fields `request_range`, `response_put`, ...), not Rust style.
#![allow(missing_docs, unreachable_pub, clippy::enum_variant_names)]

use prost::Message;

/// `mvccpb.KeyValue` (kv.proto).
#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: bytes::Bytes,
    #[prost(int64, tag = "2")]
    pub create_revision: i64,
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(int64, tag = "4")]
    pub version: i64,
    #[prost(bytes = "bytes", tag = "5")]
    pub value: bytes::Bytes,
    #[prost(int64, tag = "6")]
    pub lease: i64,
}

/// `mvccpb.Event.EventType` (kv.proto): PUT = 0, DELETE = 1.
pub const EVENT_PUT: i32 = 0;
/// See [`EVENT_PUT`].
pub const EVENT_DELETE: i32 = 1;

/// `mvccpb.Event` (kv.proto).
#[derive(Clone, PartialEq, Message)]
pub struct Event {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub kv: Option<KeyValue>,
    #[prost(message, optional, tag = "3")]
    pub prev_kv: Option<KeyValue>,
}

/// `etcdserverpb.ResponseHeader` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct ResponseHeader {
    #[prost(uint64, tag = "1")]
    pub cluster_id: u64,
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    #[prost(int64, tag = "3")]
    pub revision: i64,
    #[prost(uint64, tag = "4")]
    pub raft_term: u64,
}

/// `etcdserverpb.RangeRequest` (rpc.proto; sort fields 5-6 and max filters 11, 13 unused).
#[derive(Clone, PartialEq, Message)]
pub struct RangeRequest {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: bytes::Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub range_end: bytes::Bytes,
    #[prost(int64, tag = "3")]
    pub limit: i64,
    #[prost(int64, tag = "4")]
    pub revision: i64,
    #[prost(bool, tag = "7")]
    pub serializable: bool,
    #[prost(bool, tag = "8")]
    pub keys_only: bool,
    #[prost(bool, tag = "9")]
    pub count_only: bool,
    #[prost(int64, tag = "10")]
    pub min_mod_revision: i64,
    #[prost(int64, tag = "12")]
    pub min_create_revision: i64,
    #[prost(int64, tag = "13")]
    pub max_create_revision: i64,
}

/// `etcdserverpb.RangeResponse` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct RangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    #[prost(bool, tag = "3")]
    pub more: bool,
    #[prost(int64, tag = "4")]
    pub count: i64,
}

/// `etcdserverpb.PutRequest` (rpc.proto; lease and ignore_* unused).
#[derive(Clone, PartialEq, Message)]
pub struct PutRequest {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: bytes::Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub value: bytes::Bytes,
    #[prost(bool, tag = "4")]
    pub prev_kv: bool,
}

/// `etcdserverpb.PutResponse` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct PutResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, optional, tag = "2")]
    pub prev_kv: Option<KeyValue>,
}

/// `etcdserverpb.DeleteRangeRequest` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct DeleteRangeRequest {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: bytes::Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub range_end: bytes::Bytes,
    #[prost(bool, tag = "3")]
    pub prev_kv: bool,
}

/// `etcdserverpb.DeleteRangeResponse` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct DeleteRangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub deleted: i64,
    #[prost(message, repeated, tag = "3")]
    pub prev_kvs: Vec<KeyValue>,
}

/// `etcdserverpb.RequestOp` (rpc.proto; the nested `request_txn = 4` is unused).
#[derive(Clone, PartialEq, Message)]
pub struct RequestOp {
    #[prost(oneof = "request_op::Request", tags = "1, 2, 3")]
    pub request: Option<request_op::Request>,
}

/// `RequestOp.request`.
pub mod request_op {
    /// The oneof `request`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Request {
        #[prost(message, tag = "1")]
        RequestRange(super::RangeRequest),
        #[prost(message, tag = "2")]
        RequestPut(super::PutRequest),
        #[prost(message, tag = "3")]
        RequestDeleteRange(super::DeleteRangeRequest),
    }
}

/// `etcdserverpb.ResponseOp` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct ResponseOp {
    #[prost(oneof = "response_op::Response", tags = "1, 2, 3")]
    pub response: Option<response_op::Response>,
}

/// `ResponseOp.response`.
pub mod response_op {
    /// The oneof `response`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Response {
        #[prost(message, tag = "1")]
        ResponseRange(super::RangeResponse),
        #[prost(message, tag = "2")]
        ResponsePut(super::PutResponse),
        #[prost(message, tag = "3")]
        ResponseDeleteRange(super::DeleteRangeResponse),
    }
}

/// `Compare.CompareResult` (rpc.proto): EQUAL = 0, GREATER = 1, LESS = 2, NOT_EQUAL = 3.
pub const COMPARE_EQUAL: i32 = 0;
/// See [`COMPARE_EQUAL`].
pub const COMPARE_GREATER: i32 = 1;
/// `Compare.CompareTarget` (rpc.proto): VERSION = 0, CREATE = 1, MOD = 2, VALUE = 3, LEASE = 4.
pub const TARGET_VERSION: i32 = 0;
/// See [`TARGET_VERSION`].
pub const TARGET_MOD: i32 = 2;

/// `etcdserverpb.Compare` (rpc.proto; range_end = 64 unused).
#[derive(Clone, PartialEq, Message)]
pub struct Compare {
    #[prost(int32, tag = "1")]
    pub result: i32,
    #[prost(int32, tag = "2")]
    pub target: i32,
    #[prost(bytes = "bytes", tag = "3")]
    pub key: bytes::Bytes,
    #[prost(oneof = "compare::TargetUnion", tags = "4, 6")]
    pub target_union: Option<compare::TargetUnion>,
}

/// `Compare.target_union`.
pub mod compare {
    /// The oneof `target_union` (create_revision = 5, value = 7, lease = 8 unused).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum TargetUnion {
        #[prost(int64, tag = "4")]
        Version(i64),
        #[prost(int64, tag = "6")]
        ModRevision(i64),
    }
}

/// `etcdserverpb.TxnRequest` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct TxnRequest {
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

/// `etcdserverpb.TxnResponse` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct TxnResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

/// `etcdserverpb.CompactionRequest` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct CompactionRequest {
    #[prost(int64, tag = "1")]
    pub revision: i64,
    #[prost(bool, tag = "2")]
    pub physical: bool,
}

/// `etcdserverpb.CompactionResponse` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct CompactionResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// `etcdserverpb.WatchRequest` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct WatchRequest {
    #[prost(oneof = "watch_request::RequestUnion", tags = "1, 2, 3")]
    pub request_union: Option<watch_request::RequestUnion>,
}

/// `WatchRequest.request_union`.
pub mod watch_request {
    /// The oneof `request_union`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum RequestUnion {
        #[prost(message, tag = "1")]
        CreateRequest(super::WatchCreateRequest),
        #[prost(message, tag = "2")]
        CancelRequest(super::WatchCancelRequest),
        #[prost(message, tag = "3")]
        ProgressRequest(super::WatchProgressRequest),
    }
}

/// `etcdserverpb.WatchCreateRequest` (rpc.proto; filters = 5, watch_id = 7, fragment = 8
/// unused).
#[derive(Clone, PartialEq, Message)]
pub struct WatchCreateRequest {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: bytes::Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub range_end: bytes::Bytes,
    #[prost(int64, tag = "3")]
    pub start_revision: i64,
    #[prost(bool, tag = "4")]
    pub progress_notify: bool,
    #[prost(bool, tag = "6")]
    pub prev_kv: bool,
}

/// `etcdserverpb.WatchCancelRequest` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct WatchCancelRequest {
    #[prost(int64, tag = "1")]
    pub watch_id: i64,
}

/// `etcdserverpb.WatchProgressRequest` (rpc.proto): no fields.
#[derive(Clone, PartialEq, Message)]
pub struct WatchProgressRequest {}

/// `etcdserverpb.WatchResponse` (rpc.proto).
#[derive(Clone, PartialEq, Message)]
pub struct WatchResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub watch_id: i64,
    #[prost(bool, tag = "3")]
    pub created: bool,
    #[prost(bool, tag = "4")]
    pub canceled: bool,
    #[prost(int64, tag = "5")]
    pub compact_revision: i64,
    #[prost(string, tag = "6")]
    pub cancel_reason: String,
    #[prost(bool, tag = "7")]
    pub fragment: bool,
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
}

/// `etcdserverpb.StatusRequest` (rpc.proto): no fields.
#[derive(Clone, PartialEq, Message)]
pub struct StatusRequest {}

/// `etcdserverpb.StatusResponse` (rpc.proto; only the header and version are read).
#[derive(Clone, PartialEq, Message)]
pub struct StatusResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(string, tag = "2")]
    pub version: String,
}
