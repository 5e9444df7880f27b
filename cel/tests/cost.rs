//! The compile-time cost estimate against upstream's figures: the table of
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/compilation_test.go`
//! `TestCostEstimation`, ported as data. Each case is a schema built by one of upstream's
//! generators (here `schema`), once without limits ("calc") and once with `maxItems`,
//! `maxProperties` or `maxLength` set to `set_max` ("set"); the rule's estimated worst case
//! must be upstream's exact figure, or at least upstream's figure where upstream only
//! checks that it exceeds the limit.

use std::sync::Arc;

use kubemock_cel::Env;
use kubemock_cel::schema::{schema_sizes, schema_type};
use serde_json::{Value, json};

/// `costLimit` of upstream's test: the O(n²) cases must exceed it.
const COST_LIMIT: u64 = 100_000_000;

/// A scalar schema of upstream's `parseRuleType` names.
fn scalar(t: &str) -> Value {
    match t {
        "duration" | "date" | "date-time" => json!({"type": "string", "format": t}),
        "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
        other => json!({"type": other}),
    }
}

fn set(mut schema: Value, key: &str, max: Option<i64>) -> Value {
    if let Some(m) = max {
        schema[key] = json!(m);
    }
    schema
}

fn object_with_required() -> Value {
    json!({"type": "object", "required": ["required"], "properties": {
        "required": {"type": "string"}, "optional": {"type": "string"}}})
}

/// Upstream's schema generators, by name, with their argument.
fn schema(generator: &str, arg: &str, max: Option<i64>) -> Value {
    match generator {
        "array" => set(
            json!({"type": "array", "items": scalar(arg)}),
            "maxItems",
            max,
        ),
        "arrayOfArrays" => set(
            json!({"type": "array", "items": {"type": "array", "items": {"type": arg}}}),
            "maxItems",
            max,
        ),
        "objectArray" => set(
            json!({"type": "array", "items": object_with_required()}),
            "maxItems",
            max,
        ),
        "mapArray" => set(
            json!({"type": "array", "items": {"type": "object", "additionalProperties": {"type": arg}}}),
            "maxItems",
            max,
        ),
        "map" => set(
            json!({"type": "object", "additionalProperties": scalar(arg)}),
            "maxProperties",
            max,
        ),
        "string" => set(json!({"type": "string"}), "maxLength", max),
        "enum" => set(
            json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]}),
            "maxLength",
            max,
        ),
        "bytes" => set(
            json!({"type": "string", "format": "byte"}),
            "maxLength",
            max,
        ),
        "nested" => set(
            json!({"type": "object", "additionalProperties":
                set(json!({"type": "string"}), "maxLength", max)}),
            "maxProperties",
            max,
        ),
        "allMaxNested" => {
            let inner = set(object_with_required(), "maxProperties", max);
            let item = set(
                json!({"type": "object", "additionalProperties": inner}),
                "maxProperties",
                max,
            );
            set(json!({"type": "array", "items": item}), "maxItems", max)
        }
        "oneMaxNested" => {
            let item = set(
                json!({"type": "object", "additionalProperties": object_with_required()}),
                "maxProperties",
                max,
            );
            json!({"type": "array", "items": item})
        }
        "mapOf" => {
            let item = match arg {
                "object" => object_with_required(),
                "array" => json!({"type": "array", "items": {"type": "number"}}),
                _ => json!({"type": "object", "additionalProperties": {"type": "number"}}),
            };
            set(
                json!({"type": "object", "additionalProperties": item}),
                "maxProperties",
                max,
            )
        }
        "stringList" => {
            let s = set(json!({"type": "string"}), "maxLength", max);
            set(
                json!({"type": "array", "x-kubernetes-list-type": "atomic", "items": s}),
                "maxItems",
                max,
            )
        }
        "replace" => json!({"type": "object", "properties": {
            "str": set(json!({"type": "string"}), "maxLength", max),
            "before": {"type": "string", "maxLength": 2},
            "after": {"type": "string", "maxLength": 4}}}),
        "split" => {
            let s = set(json!({"type": "string"}), "maxLength", max);
            json!({"type": "object", "properties": {"str": s, "separator": s}})
        }
        other => panic!("no generator {other}"),
    }
}

/// (name, generator, argument, rule, calc cost, calc must exceed, set max, set cost); a cost
/// of 0 is not checked, as upstream's `schemaChecker` does not check it (the `has()` cases
/// list 0 where cel-go estimates 1, the cost of reading `self`).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    u64,
    u64,
    i64,
    u64,
);

const CASES: &[Case] = &[
    (
        "number array with all",
        "array",
        "number",
        "self.all(x, true)",
        4718591,
        0,
        10,
        32,
    ),
    (
        "string array with all",
        "array",
        "string",
        "self.all(x, true)",
        3145727,
        0,
        20,
        62,
    ),
    (
        "boolean array with all",
        "array",
        "boolean",
        "self.all(x, true)",
        1887437,
        0,
        5,
        17,
    ),
    (
        "array of number arrays with all",
        "arrayOfArrays",
        "number",
        "self.all(x, true)",
        3145727,
        0,
        100,
        302,
    ),
    (
        "array of objects with all",
        "objectArray",
        "",
        "self.all(x, true)",
        555128,
        0,
        50,
        152,
    ),
    (
        "map of numbers with all",
        "map",
        "number",
        "self.all(x, true)",
        1348169,
        0,
        10,
        32,
    ),
    (
        "map of numbers with has",
        "map",
        "number",
        "has(self.x)",
        0,
        0,
        100,
        0,
    ),
    (
        "map of strings with all",
        "map",
        "string",
        "self.all(x, true)",
        1179647,
        0,
        3,
        11,
    ),
    (
        "map of strings with has",
        "map",
        "string",
        "has(self.x)",
        0,
        0,
        550,
        0,
    ),
    (
        "map of booleans with all",
        "map",
        "boolean",
        "self.all(x, true)",
        943718,
        0,
        100,
        302,
    ),
    (
        "map of booleans with has",
        "map",
        "boolean",
        "has(self.x)",
        0,
        0,
        1024,
        0,
    ),
    (
        "string with contains",
        "string",
        "",
        "self.contains('test')",
        314574,
        0,
        10,
        5,
    ),
    (
        "string with startsWith",
        "string",
        "",
        "self.startsWith('test')",
        2,
        0,
        15,
        2,
    ),
    (
        "string with endsWith",
        "string",
        "",
        "self.endsWith('test')",
        2,
        0,
        30,
        2,
    ),
    (
        "concat string",
        "string",
        "",
        r#"size(self + "hello") > size("hello")"#,
        314578,
        0,
        4,
        7,
    ),
    (
        "index of array with numbers",
        "array",
        "number",
        "self[1] == 0.0",
        2,
        0,
        5000,
        2,
    ),
    (
        "index of array with strings",
        "array",
        "string",
        "self[1] == self[1]",
        314577,
        0,
        8,
        314577,
    ),
    (
        "O(n^2) loop with numbers",
        "array",
        "number",
        "self.all(x, self.all(y, true))",
        0,
        COST_LIMIT,
        10,
        352,
    ),
    (
        "O(n^3) loop with numbers",
        "array",
        "number",
        "self.all(x, self.all(y, self.all(z, true)))",
        0,
        COST_LIMIT,
        10,
        3552,
    ),
    (
        "regex matches simple",
        "string",
        "",
        r#"self.matches("x")"#,
        314574,
        0,
        50,
        22,
    ),
    (
        "regex matches empty string",
        "string",
        "",
        r#""".matches("(((((((((())))))))))[0-9]")"#,
        7,
        0,
        10,
        7,
    ),
    (
        "regex matches empty regex",
        "string",
        "",
        r#"self.matches("")"#,
        1,
        0,
        100,
        1,
    ),
    (
        "map of strings with value length",
        "nested",
        "",
        "self.all(x, x.contains(self[x]))",
        2752507,
        0,
        10,
        72,
    ),
    (
        "set array maxLength to zero",
        "array",
        "number",
        "self[3] == 0.0",
        2,
        0,
        0,
        2,
    ),
    (
        "set map maxLength to zero",
        "map",
        "number",
        r#"self["x"] == 0.0"#,
        2,
        0,
        0,
        2,
    ),
    (
        "set string maxLength to zero",
        "string",
        "",
        r#"self == "x""#,
        2,
        0,
        0,
        1,
    ),
    (
        "set bytes maxLength to zero",
        "bytes",
        "",
        r#"self == b"x""#,
        2,
        0,
        0,
        1,
    ),
    (
        "set maxLength greater than estimated maxLength",
        "array",
        "number",
        "self.all(x, x == 0.0)",
        6291454,
        0,
        3 * 1024 * 2048,
        25165826,
    ),
    (
        "nested types with root rule with all supporting maxLength",
        "allMaxNested",
        "",
        r#"self.all(x, x["y"].required == "z")"#,
        7340027,
        0,
        10,
        72,
    ),
    (
        "nested types with root rule with one supporting maxLength",
        "oneMaxNested",
        "",
        r#"self.all(x, x["y"].required == "z")"#,
        7340027,
        0,
        10,
        7340027,
    ),
    (
        "int-or-string array with all",
        "array",
        "int-or-string",
        "self.all(x, true)",
        4718591,
        0,
        10,
        32,
    ),
    (
        "index of array with int-or-strings",
        "array",
        "int-or-string",
        "self[0] == 5",
        3,
        0,
        10,
        3,
    ),
    (
        "index of array with booleans",
        "array",
        "boolean",
        "self[0] == false",
        2,
        0,
        25,
        2,
    ),
    (
        "index of array of objects",
        "objectArray",
        "",
        "self[0] == null",
        2,
        0,
        422,
        2,
    ),
    (
        "index of array of array of numnbers",
        "arrayOfArrays",
        "number",
        "self[0][0] == -1.0",
        3,
        0,
        51,
        3,
    ),
    (
        "array of number maps with all",
        "mapArray",
        "number",
        "self.all(x, x.y == 25.2)",
        6291452,
        0,
        12,
        74,
    ),
    (
        "index of array of number maps",
        "mapArray",
        "number",
        "self[0].x > 2.0",
        4,
        0,
        3000,
        4,
    ),
    (
        "duration array with all",
        "array",
        "duration",
        "self.all(x, true)",
        2359295,
        0,
        5,
        17,
    ),
    (
        "index of duration array",
        "array",
        "duration",
        "self[0].getHours() == 2",
        4,
        0,
        525,
        4,
    ),
    (
        "date array with all",
        "array",
        "date",
        "self.all(x, true)",
        725936,
        0,
        15,
        47,
    ),
    (
        "index of date array",
        "array",
        "date",
        "self[2].getDayOfMonth() == 13",
        4,
        0,
        42,
        4,
    ),
    (
        "date-time array with all",
        "array",
        "date-time",
        "self.all(x, true)",
        428963,
        0,
        25,
        77,
    ),
    (
        "index of date-time array",
        "array",
        "date-time",
        "self[2].getMinutes() == 45",
        4,
        0,
        99,
        4,
    ),
    (
        "map of int-or-strings with all",
        "map",
        "int-or-string",
        "self.all(x, true)",
        1348169,
        0,
        15,
        47,
    ),
    (
        "map of int-or-strings with has",
        "map",
        "int-or-string",
        "has(self.x)",
        0,
        0,
        5000,
        0,
    ),
    (
        "map of objects with all",
        "mapOf",
        "object",
        "self.all(x, true)",
        428963,
        0,
        20,
        62,
    ),
    (
        "map of objects with has",
        "mapOf",
        "object",
        "has(self.x)",
        0,
        0,
        9001,
        0,
    ),
    (
        "map of number maps with all",
        "mapOf",
        "map",
        "self.all(x, true)",
        1179647,
        0,
        10,
        32,
    ),
    (
        "map of number maps with has",
        "mapOf",
        "map",
        "has(self.x)",
        0,
        0,
        101,
        0,
    ),
    (
        "map of number arrays with all",
        "mapOf",
        "array",
        "self.all(x, true)",
        1179647,
        0,
        25,
        77,
    ),
    (
        "map of number arrays with has",
        "mapOf",
        "array",
        "has(self.x)",
        0,
        0,
        40000,
        0,
    ),
    (
        "map of durations with all",
        "map",
        "duration",
        "self.all(x, true)",
        1048577,
        0,
        5,
        17,
    ),
    (
        "map of durations with has",
        "map",
        "duration",
        "has(self.x)",
        0,
        0,
        256,
        0,
    ),
    (
        "map of dates with all",
        "map",
        "date",
        "self.all(x, true)",
        524288,
        0,
        10,
        32,
    ),
    (
        "map of dates with has",
        "map",
        "date",
        "has(self.x)",
        0,
        0,
        65536,
        0,
    ),
    (
        "map of date-times with all",
        "map",
        "date-time",
        "self.all(x, true)",
        349526,
        0,
        25,
        77,
    ),
    (
        "map of date-times with has",
        "map",
        "date-time",
        "has(self.x)",
        0,
        0,
        490,
        0,
    ),
    (
        "extended library regex find",
        "string",
        "",
        "self.find('[0-9]+') == ''",
        629147,
        0,
        10,
        11,
    ),
    (
        "extended library join",
        "stringList",
        "",
        "self.join(' ') == 'aa bb'",
        329853068905,
        0,
        10,
        43,
    ),
    (
        "extended library isSorted",
        "stringList",
        "",
        "self.isSorted() == true",
        329854432052,
        0,
        10,
        52,
    ),
    (
        "extended library replace",
        "replace",
        "",
        "self.str.replace(self.before, self.after) == 'does not matter'",
        629154,
        0,
        4,
        12,
    ),
    (
        "extended library split",
        "split",
        "",
        "self.str.split(self.separator) == []",
        629160,
        0,
        10,
        22,
    ),
    (
        "extended library lowerAscii",
        "string",
        "",
        "self.lowerAscii() == 'lower!'",
        314575,
        0,
        10,
        6,
    ),
    (
        "check cost of size call",
        "map",
        "integer",
        "oldSelf.size() == self.size()",
        5,
        0,
        10,
        5,
    ),
    (
        "check cost of timestamp comparison",
        "map",
        "date-time",
        r#"self["a"] == self["b"]"#,
        8,
        0,
        7,
        8,
    ),
    (
        "check cost of duration comparison",
        "map",
        "duration",
        r#"self["c"] == self["d"]"#,
        8,
        0,
        42,
        8,
    ),
    (
        "enums with maxLength equals to the longest possible value",
        "enum",
        "",
        "self.contains('A')",
        2,
        0,
        1000,
        401,
    ),
];

/// The estimated worst case of `rule` on `schema`, compiled as a CRD rule is (upstream's
/// test converts with `SchemaDeclType(schema, false)`).
fn max_cost(schema: &Value, rule: &str) -> u64 {
    let t = schema_type(schema, false, "self");
    let sizes = schema_sizes(schema, false).expect("the schema is declared in CEL");
    let env = Env::new()
        .with_var("self", t.clone())
        .with_var("oldSelf", t)
        .with_sizes(Arc::new(sizes));
    match env.compile(rule) {
        Ok(p) => p.estimated_cost.max,
        Err(e) => panic!("{rule}: {}", e.text),
    }
}

#[test]
fn estimates_are_upstreams_cost_estimation_table() {
    let mut failures = Vec::new();
    for &(name, generator, arg, rule, calc, calc_exceeds, set_max, set_cost) in CASES {
        let calc_got = max_cost(&schema(generator, arg, None), rule);
        if calc > 0 && calc_got != calc {
            failures.push(format!("{name} (calc): {calc_got}, upstream {calc}"));
        }
        if calc_exceeds > 0 && calc_got < calc_exceeds {
            failures.push(format!(
                "{name} (calc): {calc_got}, upstream more than {calc_exceeds}"
            ));
        }
        let set_got = max_cost(&schema(generator, arg, Some(set_max)), rule);
        if set_cost > 0 && set_got != set_cost {
            failures.push(format!(
                "{name} (set {set_max}): {set_got}, upstream {set_cost}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}
