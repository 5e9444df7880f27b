//! The language as Kubernetes' rules use it: macros, errors absorbed by `||`/`&&`, optional
//! values, extended strings, lists, regex, url, sets; checker issues in cel-go's words; and
//! the per-call cost limit cutting off an expensive expression with cel-go's message.

use kubemock_cel::{Env, PER_CALL_LIMIT, Type, Value, Vars};

fn eval(expr: &str) -> Result<Value, String> {
    let env = Env::new().with_var("self", Type::Dyn);
    let vars = Vars::new().with(
        "self",
        Value::from_json(
            &serde_json::json!({"items": [1, 2, 3], "name": "web-1", "labels": {"a": "b"}}),
        ),
    );
    let program = env.compile(expr).map_err(|e| e.to_string())?;
    program
        .eval(&vars, PER_CALL_LIMIT)
        .result
        .map_err(|e| e.message)
}

#[test]
fn expressions_evaluate_as_in_cel_go() {
    let truths = [
        "self.items.all(x, x > 0)",
        "self.items.exists(x, x == 2)",
        "self.items.exists_one(x, x == 2)",
        "self.items.map(x, x * 2) == [2, 4, 6]",
        "self.items.filter(x, x % 2 == 1) == [1, 3]",
        "has(self.name) && !has(self.missing)",
        "self.labels.a == 'b' && 'a' in self.labels",
        "self.name.startsWith('web') && self.name.matches('^web-[0-9]+$')",
        "self.name.split('-') == ['web', '1'] && self.name.upperAscii() == 'WEB-1'",
        "self.name.indexOf('-') == 3 && self.name.substring(4) == '1'",
        "['a', 'b'].join('-') == 'a-b'",
        "'%s has %d items'.format([self.name, size(self.items)]) == 'web-1 has 3 items'",
        "self.items.isSorted() && self.items.sum() == 6 && self.items.max() == 3",
        "self.?missing.orValue('x') == 'x' && self.?name.hasValue()",
        "optional.of(1).value() == 1 && !optional.none().hasValue()",
        "self.missing == 1 || true",
        "!(self.missing == 1 && false)",
        "'abc123'.find('[0-9]+') == '123' && 'a1b2'.findAll('[0-9]') == ['1', '2']",
        "url('https://example.com:8080/p?k=v').getPort() == '8080'",
        "sets.contains([1, 2, 3], [1, 2]) && sets.intersects([1], [1, 5])",
        "quantity('1Gi').isGreaterThan(quantity('1G'))",
        "1 < 1.5 && 2u > 1",
        "duration('1h') > duration('59m') && timestamp('2024-01-01T00:00:00Z').getFullYear() == 2024",
        "type(1) == int && string(1.5) == '1.5'",
    ];
    for t in truths {
        assert_eq!(
            eval(t).map(|v| v.equals(&Value::Bool(true))),
            Ok(true),
            "{t}"
        );
    }
}

#[test]
fn runtime_errors_read_as_cel_go() {
    assert_eq!(
        eval("self.missing == 1").err().as_deref(),
        Some("no such key: missing")
    );
    assert_eq!(
        eval("self.items[5] == 1").err().as_deref(),
        Some("index out of bounds: 5")
    );
    assert_eq!(
        eval("1 / 0 == 1").err().as_deref(),
        Some("division by zero")
    );
    assert_eq!(
        eval("9223372036854775807 + 1 > 0").err().as_deref(),
        Some("integer overflow")
    );
    assert_eq!(
        eval("self.name + 1 == 1").err().as_deref(),
        Some("no such overload")
    );
}

#[test]
fn checker_issues_read_as_cel_go() {
    let env = Env::new().with_var("self", Type::Dyn);
    let err = env
        .compile("size(1) == 1")
        .expect_err("size(int) is undefined");
    assert_eq!(
        err.text,
        "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'\n | size(1) == 1\n | ....^"
    );
    let err = env.compile("nope.x == 1").expect_err("undeclared");
    assert_eq!(
        err.messages,
        ["undeclared reference to 'nope' (in container '')"]
    );
    let err = env.compile("1 +").expect_err("syntax");
    assert!(
        err.text.starts_with("ERROR: <input>:1:4: Syntax error"),
        "{}",
        err.text
    );
}

#[test]
fn an_expression_past_the_per_call_limit_is_cancelled() {
    let env = Env::new();
    // 1000 x 1000 x 2 comprehension steps: far past 1,000,000.
    let program = env
        .compile("[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, [0,1,2,3,4,5,6,7,8,9].map(d, [0,1,2,3,4,5,6,7,8,9].map(e, [0,1,2,3,4,5,6,7,8,9].map(f, f)))))).size() > 0")
        .expect("compiles");
    let run = program.eval(&Vars::new(), PER_CALL_LIMIT);
    let err = run.result.expect_err("too expensive");
    assert_eq!(
        err.message,
        "operation cancelled: actual cost limit exceeded"
    );
    assert!(err.cost_exceeded);
    assert!(run.cost > PER_CALL_LIMIT);
    // The same under a small limit, and fine under a large one.
    let cheap = env.compile("[1, 2].all(x, x > 0)").expect("compiles");
    assert!(cheap.eval(&Vars::new(), 5).result.is_err());
    assert!(cheap.eval(&Vars::new(), 100).result.is_ok());
}

// Set and map lists of an object, as the schema types them (apiserver/pkg/cel/common/values.go).
#[test]
fn map_lists_merge_by_key_and_compare_regardless_of_order() {
    let schema = serde_json::json!({"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "port": {"type": "integer"}}}});
    let value = |json: serde_json::Value| kubemock_cel::schema::to_value(Some(&schema), &json);
    let env = Env::new()
        .with_var("self", Type::Dyn)
        .with_var("oldSelf", Type::Dyn);
    let program = env.compile("oldSelf + self == self").expect("compiles");
    let run = |old: serde_json::Value, new: serde_json::Value| {
        let vars = Vars::new()
            .with("self", value(new))
            .with("oldSelf", value(old));
        match program.eval(&vars, PER_CALL_LIMIT).result {
            Ok(Value::Bool(b)) => b,
            other => panic!("{other:?}"),
        }
    };
    let old = serde_json::json!([{"name": "http", "port": 80}, {"name": "grpc", "port": 9000}]);
    let reordered =
        serde_json::json!([{"name": "grpc", "port": 9000}, {"name": "http", "port": 80}]);
    let changed = serde_json::json!([{"name": "grpc", "port": 9001}, {"name": "http", "port": 80}]);
    let removed = serde_json::json!([{"name": "http", "port": 8080}]);
    assert!(run(old.clone(), reordered));
    assert!(run(old.clone(), changed));
    assert!(!run(old, removed));
}

/// An authorizer library value compared with `==` is cel-go's runtime `no such overload`
/// (upstream's values compare only to the bare receiver value they embed,
/// `pkg/cel/library/authz.go` `receiverOnlyObjectVal.Equal`), and `!=` is true, cel-go's
/// `evalNe` being true whenever equality is not `true`. Both type-check, the operands having
/// the same type.
#[test]
fn authorizer_values_do_not_compare() {
    use kubemock_cel::authz::{
        AUTHORIZER_TYPE, Authorize, AuthzDecision, AuthzRequest, UserInfo, Verdict,
        authorizer_value,
    };
    struct Allow;
    impl Authorize for Allow {
        fn authorize(&self, _: &AuthzRequest) -> AuthzDecision {
            AuthzDecision {
                verdict: Verdict::Allow,
                reason: String::new(),
                error: None,
            }
        }
    }
    let env = Env::new().with_var("authorizer", Type::Opaque(AUTHORIZER_TYPE));
    let hook: std::sync::Arc<dyn Authorize> = std::sync::Arc::new(Allow);
    let vars = Vars::new().with(
        "authorizer",
        authorizer_value(Some(hook), UserInfo::service_account("ns", "sa")),
    );
    let run = |expr: &str| {
        env.compile(expr)
            .map_err(|e| e.to_string())?
            .eval(&vars, PER_CALL_LIMIT)
            .result
            .map_err(|e| e.message)
    };
    for expr in [
        "authorizer == authorizer",
        "authorizer.path('/healthz') == authorizer.path('/healthz')",
        "authorizer.path('/healthz').check('get') == authorizer.path('/healthz').check('get')",
    ] {
        assert!(
            matches!(run(expr), Err(e) if e == "no such overload"),
            "{expr}"
        );
    }
    assert!(matches!(
        run("authorizer != authorizer"),
        Ok(Value::Bool(true))
    ));
    assert!(matches!(
        run("authorizer.path('/healthz').check('get').allowed()"),
        Ok(Value::Bool(true))
    ));
}

/// Patterns are read as Go's RE2 reads them: a repeated repetition operator is refused
/// (`invalid nested repetition operator`, when a literal pattern compiles), while a
/// non-greedy one, flags and operators inside a class are not repetitions.
#[test]
fn patterns_refuse_what_re2_refuses() {
    for pattern in ["x++", "x**", "x*+", "x{2}*", "x*??"] {
        let err = Env::new()
            .compile(&format!("'x'.matches('{pattern}')"))
            .map(|_| ())
            .expect_err(pattern);
        assert_eq!(err.messages, ["invalid matches argument"], "{pattern}");
        let dynamic = eval(&format!(
            "'x'.matches(self.name.substring(0, 0) + '{pattern}')"
        ));
        assert!(
            matches!(&dynamic, Err(e) if e.contains("invalid nested repetition operator")),
            "{pattern}: {dynamic:?}"
        );
    }
    for pattern in ["x*?", "x+?", "(?i)X", "[+*?]+", "x{2,}", "[[:alpha:]]*"] {
        assert!(
            eval(&format!("'x'.matches('{pattern}') || true")).is_ok(),
            "{pattern}"
        );
    }
}

/// cel-go's two-variable comprehensions (`ext/comprehensions.go`): index and item over a
/// list, key and value over a map; errors fold as in the one-variable macros.
#[test]
fn two_variable_comprehensions() {
    let truths = [
        "[10, 20].all(i, v, v == (i + 1) * 10)",
        "{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)",
        "[0, 5, 6].existsOne(i, v, i == v)",
        "[1, 2].transformList(i, v, i + v) == [1, 3]",
        "[1, 2, 3].transformList(i, v, v > 1, v * 10) == [20, 30]",
        "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}",
        "{'a': 1, 'b': 2}.transformMapEntry(k, v, v > 1, {k + k: v}) == {'bb': 2}",
        "self.labels.exists(k, v, v == 'b')",
        // an error on one element does not decide `exists` when another is true
        "[0, 1].exists(i, v, 1 / v == 1)",
    ];
    for t in truths {
        assert!(
            matches!(eval(t), Ok(Value::Bool(true))),
            "{t}: {:?}",
            eval(t)
        );
    }
    let all = eval("[0, 1].all(i, v, 1 / v == 1)");
    assert!(matches!(&all, Err(e) if e == "division by zero"), "{all:?}");
    let duplicate = eval("{'a': 1, 'b': 2}.transformMapEntry(k, v, {'x': v})");
    assert!(
        matches!(&duplicate, Err(e) if e == "insert failed: key x already exists"),
        "{duplicate:?}"
    );
    let issue = Env::new()
        .compile("[1].transformMapEntry(i, v, v)")
        .map(|_| ())
        .expect_err("not a map");
    assert_eq!(issue.messages, ["expected type 'map' but found 'int'"]);
}

/// cel-go's optional macros (`cel/macro.go`): `optMap` maps a present value, `optFlatMap`
/// maps it to an optional; an absent value stays absent.
#[test]
fn optional_macros() {
    let truths = [
        "optional.of(2).optMap(v, v * 2) == optional.of(4)",
        "optional.none().optMap(v, v * 2) == optional.none()",
        "self.?name.optMap(n, n.size()).value() == 5",
        "optional.of(2).optFlatMap(v, v > 1 ? optional.of(v) : optional.none()) == optional.of(2)",
        "optional.of(0).optFlatMap(v, v > 1 ? optional.of(v) : optional.none()) == optional.none()",
    ];
    for t in truths {
        assert!(
            matches!(eval(t), Ok(Value::Bool(true))),
            "{t}: {:?}",
            eval(t)
        );
    }
    let issue = Env::new()
        .compile("optional.of(1).optFlatMap(v, v)")
        .map(|_| ())
        .expect_err("not optional");
    assert_eq!(
        issue.messages,
        ["expected type 'optional_type' but found 'int'"]
    );
}
