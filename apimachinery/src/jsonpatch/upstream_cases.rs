//! The library's own test table (`testdata/evanphx-json-patch-v4.12.0.json`, ported as data
//! from `patch_test.go` of evanphx/json-patch v4.12.0), run against this engine: every case,
//! with the library's test copy limit.

use serde_json::Value;

use super::Patch;

fn table() -> Value {
    serde_json::from_str(include_str!(
        "../../testdata/evanphx-json-patch-v4.12.0.json"
    ))
    .expect("the table is JSON")
}

fn text<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key].as_str().expect("a string")
}

/// Applies `patch` to `doc`: `None` for a document the library leaves untouched without reading
/// it (an empty one), else the outcome.
fn apply(doc: &str, patch: &str, limit: usize) -> Option<Result<Value, String>> {
    // `Patch.Apply` returns an empty document as it is, before decoding it (the server never
    // patches one: every stored object is a JSON object).
    if doc.is_empty() {
        return None;
    }
    let patch = match Patch::decode(patch.as_bytes()) {
        Ok(patch) => patch,
        Err(err) => return Some(Err(err)),
    };
    let mut doc: Value = serde_json::from_str(doc).expect("the document is JSON");
    Some(
        patch
            .apply_with_copy_limit(&mut doc, limit)
            .map(|()| doc)
            .map_err(|err| err.0),
    )
}

#[test]
fn every_case_of_the_library_applies_as_the_library_applies_it() {
    let table = table();
    let limit = usize::try_from(table["copyLimit"].as_u64().expect("limit")).expect("small");
    let cases = table["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 30);
    for case in cases {
        let (doc, patch) = (text(case, "doc"), text(case, "patch"));
        let (result, library) = (text(case, "result"), text(case, "libraryResult"));
        match apply(doc, patch, limit) {
            None => assert!(result.is_empty() && library.is_empty(), "stays empty"),
            Some(outcome) => {
                let patched = outcome.unwrap_or_else(|err| panic!("{patch}: {err}"));
                let returned: Value = serde_json::from_str(library).expect("JSON result");
                assert_eq!(patched, returned, "{doc} patched with {patch}");
                // What the library's test checks: objects (it reads both sides as maps, so
                // its expectations for arrays go unchecked, and two of them are wrong).
                if patched.is_object() {
                    let expected: Value = serde_json::from_str(result).expect("JSON result");
                    assert_eq!(patched, expected, "{doc} patched with {patch}");
                }
            }
        }
    }
    for case in table["mutationCases"].as_array().expect("mutation cases") {
        let (doc, patch) = (text(case, "doc"), text(case, "patch"));
        let patched = apply(doc, patch, limit)
            .expect("a document")
            .unwrap_or_else(|err| panic!("{patch}: {err}"));
        let original: Value = serde_json::from_str(doc).expect("JSON");
        assert_ne!(patched, original, "{patch} changes {doc}");
    }
    let bad = table["badCases"].as_array().expect("bad cases");
    assert_eq!(bad.len(), 21);
    for case in bad {
        let (doc, patch) = (text(case, "doc"), text(case, "patch"));
        let outcome = apply(doc, patch, limit).expect("a document");
        assert!(
            outcome.is_err(),
            "{patch} must not apply to {doc}: {outcome:?}"
        );
    }
}

#[test]
fn every_test_case_of_the_library_passes_or_fails_with_its_message() {
    let table = table();
    let cases = table["testCases"].as_array().expect("test cases");
    assert_eq!(cases.len(), 10);
    for case in cases {
        let (doc, patch) = (text(case, "doc"), text(case, "patch"));
        let outcome = apply(doc, patch, super::MAX_COPY_BYTES).expect("a document");
        if case["passes"] == true {
            assert!(outcome.is_ok(), "{patch} on {doc}: {outcome:?}");
        } else {
            assert_eq!(
                outcome.err(),
                Some(format!(
                    "testing value {} failed: test failed",
                    text(case, "failedPath")
                )),
                "{patch} on {doc}"
            );
        }
    }
}
