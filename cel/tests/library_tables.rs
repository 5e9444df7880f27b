//! Upstream's CEL library test tables (k8s.io/apiserver v0.32.0
//! `pkg/cel/library/{ip,cidr,quantity,format}_test.go`), ported as data by
//! `tests/data/port_upstream_tables.py` into `tests/data/library_cases.json`: each case must
//! give upstream's result (compared with CEL equality against the expected value, itself a
//! CEL expression), upstream's exact runtime error (or one matching upstream's pattern where
//! upstream matches a pattern), or compile errors matching upstream's patterns.

use kubemock_cel::{Env, PER_CALL_LIMIT};
use serde_json::Value as Json;

fn run(env: &Env, case: &Json) -> Result<(), String> {
    let expr = case["expr"].as_str().unwrap_or_default();
    let compiled = env.compile(expr);
    if let Some(patterns) = case.get("compile_errors").and_then(Json::as_array) {
        let err = match compiled {
            Ok(_) => return Err("compiled, expected compile errors".into()),
            Err(e) => e,
        };
        for p in patterns {
            let re =
                regex::Regex::new(p.as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
            if !err.messages.iter().any(|m| re.is_match(m)) {
                return Err(format!("no compile error matches {p}: {:?}", err.messages));
            }
        }
        return Ok(());
    }
    let program = compiled.map_err(|e| format!("compile error: {e}"))?;
    let vars = kubemock_cel::Vars::new();
    let got = program.eval(&vars, PER_CALL_LIMIT).result;
    if let Some(want) = case.get("runtime_error").and_then(Json::as_str) {
        return match got {
            Err(e) if e.message == want => Ok(()),
            Err(e) => Err(format!("error {:?}, want {want:?}", e.message)),
            Ok(v) => Err(format!("value {v}, want error {want:?}")),
        };
    }
    if let Some(pattern) = case.get("runtime_error_pattern").and_then(Json::as_str) {
        let re = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
        return match got {
            Err(e) if re.is_match(&e.message) => Ok(()),
            Err(e) => Err(format!("error {:?}, want /{pattern}/", e.message)),
            Ok(v) => Err(format!("value {v}, want error /{pattern}/")),
        };
    }
    let want_expr = case["result"].as_str().unwrap_or_default();
    let want = env
        .compile(want_expr)
        .map_err(|e| format!("expected value does not compile: {e}"))?
        .eval(&vars, PER_CALL_LIMIT)
        .result
        .map_err(|e| format!("expected value fails: {e}"))?;
    match got {
        Ok(v) if v.equals(&want) => Ok(()),
        Ok(v) => Err(format!("value {v}, want {want}")),
        Err(e) => Err(format!("error {e}, want {want}")),
    }
}

#[test]
fn upstream_library_tables_give_upstream_results() {
    let cases: Vec<Json> =
        serde_json::from_str(include_str!("data/library_cases.json")).expect("valid case file");
    assert!(cases.len() > 300, "the ported tables are all there");
    let env = Env::new();
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = run(&env, case) {
            failures.push(format!(
                "{} {}: `{}`: {why}",
                case["file"].as_str().unwrap_or_default(),
                case["name"].as_str().unwrap_or_default(),
                case["expr"].as_str().unwrap_or_default()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from upstream:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
