//! `testing.kubemock.dev/v1` `clocks`: the server's clock as one object, `cluster`
//! (`registry::testing::CLOCK_NAME`), read with GET or list, moved by a write of its `spec`
//! (PUT, or PATCH as merge, JSON, strategic merge or apply patch, which `kubectl patch` and
//! `kubectl apply` send):
//!
//! - `spec.advance`: a Go duration (`90s`, `6h`); the clock moves forward by it, once per
//!   write (it is an order, not a state: the object answered has an empty `spec`);
//! - `spec.time`: an RFC 3339 time; the clock is set to it, backwards too, as upstream's fake
//!   clock (`k8s.io/utils/clock/testing.FakeClock.SetTime`) allows.
//!
//! `status.now` is the time, `status.virtual` whether it can move. Without `--virtual-clock`
//! the clock is the system's: reading works, a move is refused with 405 MethodNotAllowed.
//! Bad values are a 422 with one cause per field; `dryRun=All` checks without moving.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use jiff::Timestamp;
use kubemock_apimachinery::clock::Clock;
use kubemock_apimachinery::duration::parse_duration;
use kubemock_apimachinery::field::{self, Path};
use kubemock_apimachinery::time;
use serde_json::{Value, json};

use super::patch::Patch;
use super::resource::Call;
use crate::field_error::FieldError;
use crate::meta;
use crate::registry::testing::{CLOCK_NAME, GROUP, VERSION};
use crate::status::{ApiError, ApiResult, Details};

/// A request for `clocks`.
pub(crate) async fn serve(call: &Call, method: Method) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let verb = super::testing::verb(call, &method)?;
    call.require_verb(verb)?;
    let clock = call.state.clock();
    if verb == "list" {
        let list = json!({
            "kind": "ClockList",
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "metadata": {},
            "items": [object(clock)],
        });
        return Ok(call.respond_list(StatusCode::OK, &list));
    }
    let name = call.target.name.as_deref().unwrap_or("");
    if name != CLOCK_NAME {
        return Err(ApiError::not_found(resource, name));
    }
    if verb == "get" {
        return Ok(call.respond(StatusCode::OK, &object(clock)));
    }
    let written = match verb {
        "update" => Value::Object(super::testing::body_object(call)?),
        _ => match Patch::parse(call)? {
            // The object has no lists: a strategic merge patch is a merge patch here.
            Patch::Strategic(patch) => {
                let mut target = object(clock);
                json_patch::merge(&mut target, &patch);
                target
            }
            patch => patch.apply(object(clock), &format!("{GROUP}/{VERSION}"), "Clock")?,
        },
    };
    let dry_run = call.dry_run(if verb == "update" {
        "UpdateOptions"
    } else {
        "PatchOptions"
    })?;
    let change = read_spec(&written)?;
    if let Some(change) = change {
        if !clock.is_virtual() {
            return Err(not_virtual());
        }
        if !dry_run {
            match change {
                Change::Advance(by) => clock.advance(by),
                Change::Set(time) => clock.set(time),
            }
            .map_err(|_| not_virtual())?;
            tracing::info!(now = %clock.now(), "clock moved");
        }
    }
    Ok(call.respond(StatusCode::OK, &object(clock)))
}

/// How a write moves the clock.
enum Change {
    Advance(std::time::Duration),
    Set(Timestamp),
}

/// The move `object`'s `spec` asks for (`None`: none), or the 422 of its bad fields.
fn read_spec(object: &Value) -> ApiResult<Option<Change>> {
    let spec_path = Path::new("spec");
    let mut errors: Vec<FieldError> = Vec::new();
    let spec = match object.get("spec") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(spec)) => spec,
        Some(other) => {
            return Err(invalid(vec![
                field::Error::invalid(&spec_path, other.to_string(), "must be an object").into(),
            ]));
        }
    };
    for key in spec.keys() {
        if key != "advance" && key != "time" {
            errors.push(
                field::Error::not_supported(
                    &spec_path.child(key),
                    key.clone(),
                    &["advance", "time"],
                )
                .into(),
            );
        }
    }
    let advance = match spec.get("advance") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            let path = spec_path.child("advance");
            match parse_duration(text) {
                Err(err) => {
                    errors.push(field::Error::invalid(&path, text.clone(), err.to_string()).into());
                    None
                }
                Ok(nanos) if nanos < 0 => {
                    errors.push(
                        field::Error::invalid(
                            &path,
                            text.clone(),
                            "must not be negative (set spec.time to move the clock back)",
                        )
                        .into(),
                    );
                    None
                }
                Ok(nanos) => Some(std::time::Duration::from_nanos(nanos.unsigned_abs())),
            }
        }
        Some(other) => {
            errors.push(
                field::Error::invalid(
                    &spec_path.child("advance"),
                    other.to_string(),
                    "must be a duration string (90s, 6h)",
                )
                .into(),
            );
            None
        }
    };
    let time = match spec.get("time") {
        None | Some(Value::Null) => None,
        Some(value) => {
            let text = value.as_str().unwrap_or_default();
            let parsed =
                time::parse_rfc3339(text).and_then(|nanos| Timestamp::from_nanosecond(nanos).ok());
            if parsed.is_none() {
                errors.push(
                    field::Error::invalid(
                        &spec_path.child("time"),
                        value.to_string(),
                        "must be an RFC 3339 time (2030-01-01T06:00:00Z)",
                    )
                    .into(),
                );
            }
            parsed
        }
    };
    if advance.is_some() && time.is_some() {
        errors.push(
            field::Error::forbidden(&spec_path.child("advance"), "may not be set with spec.time")
                .into(),
        );
    }
    if !errors.is_empty() {
        return Err(invalid(errors));
    }
    Ok(advance.map(Change::Advance).or(time.map(Change::Set)))
}

/// The 422 of a bad clock write.
fn invalid(errors: Vec<FieldError>) -> ApiError {
    meta::invalid(
        &format!("Clock.{GROUP}"),
        GROUP,
        "Clock",
        CLOCK_NAME,
        errors,
    )
}

/// The refusal to move the system clock.
fn not_virtual() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "the clock cannot be moved: kubemock runs on the system clock (start it with `kubemock serve --virtual-clock`)",
    )
    .with_details(Details {
        name: Some(CLOCK_NAME.to_owned()),
        group: Some(GROUP.to_owned()),
        kind: Some("clocks".to_owned()),
        ..Details::default()
    })
}

/// The clock as an object.
fn object(clock: &Clock) -> Value {
    let now = clock.now();
    json!({
        "kind": "Clock",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {"name": CLOCK_NAME},
        "spec": {},
        "status": {
            "now": time::rfc3339_micro_of(now),
            "virtual": clock.is_virtual(),
        },
    })
}
