// Generates ../field-selector-cases.json from upstream's own code: the inputs of the tests in
// k8s.io/apimachinery v0.32.0 pkg/fields/selector_test.go (TestSplitTerms, TestSplitTerm,
// TestEscapeValue with its invalid escapes, TestSelectorParse with its bad strings,
// TestDeterministicParse, TestEverything, TestSelectorMatches, TestOneTermEqualSelector,
// TestSetMatches, TestSetIsEmpty, TestRequiresExactMatch) and more, each answered by that
// version's code. There is no TestUnescapeValue in v0.32.0: UnescapeValue is tested inside
// TestEscapeValue, and here with the "unescape" cases. splitTerms and splitTerm are
// unexported, so they are reached with go:linkname.
//
//	cd apimachinery/testdata/gen-field-selector-cases && go run . > ../field-selector-cases.json
package main

import (
	"encoding/json"
	"errors"
	"os"
	_ "unsafe" // go:linkname

	"k8s.io/apimachinery/pkg/fields"
)

//go:linkname splitTerms k8s.io/apimachinery/pkg/fields.splitTerms
func splitTerms(fieldSelector string) []string

//go:linkname splitTerm k8s.io/apimachinery/pkg/fields.splitTerm
func splitTerm(term string) (lhs, op, rhs string, ok bool)

type splitTermsCase struct {
	In    string   `json:"in"`
	Terms []string `json:"terms"`
}

type splitTermCase struct {
	In  string `json:"in"`
	Lhs string `json:"lhs"`
	Op  string `json:"op"`
	Rhs string `json:"rhs"`
	Ok  bool   `json:"ok"`
}

type escapeCase struct {
	Value   string `json:"value"`
	Escaped string `json:"escaped"`
}

type unescapeCase struct {
	In    string  `json:"in"`
	Value *string `json:"value,omitempty"`
	Error *string `json:"error,omitempty"`
	// The error is an InvalidEscapeSequence (else an UnescapedRune).
	InvalidEscapeSequence bool `json:"invalid_escape_sequence,omitempty"`
}

type requirement struct {
	Field    string `json:"field"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
}

type parseCase struct {
	In           string        `json:"in"`
	String       *string       `json:"string,omitempty"`
	Empty        *bool         `json:"empty,omitempty"`
	Requirements []requirement `json:"requirements,omitempty"`
	Error        *string       `json:"error,omitempty"`
}

type matchCase struct {
	Selector string            `json:"selector"`
	Fields   map[string]string `json:"fields"`
	Matches  bool              `json:"matches"`
}

// expr names a selector built without parsing: exactly one of its members is set.
type expr struct {
	// OneTermEqualSelector(eq[0], eq[1]).
	Eq []string `json:"eq,omitempty"`
	// OneTermNotEqualSelector(ne[0], ne[1]).
	Ne []string `json:"ne,omitempty"`
	// AndSelectors(and...); Everything() is an empty and.
	And *[]expr `json:"and,omitempty"`
	// SelectorFromSet(set): Go's map order, so only its matches and emptiness are recorded.
	Set *map[string]string `json:"set,omitempty"`
}

func (e expr) build() fields.Selector {
	switch {
	case e.Eq != nil:
		return fields.OneTermEqualSelector(e.Eq[0], e.Eq[1])
	case e.Ne != nil:
		return fields.OneTermNotEqualSelector(e.Ne[0], e.Ne[1])
	case e.And != nil:
		var children []fields.Selector
		for _, c := range *e.And {
			children = append(children, c.build())
		}
		return fields.AndSelectors(children...)
	case e.Set != nil:
		return fields.SelectorFromSet(*e.Set)
	}
	panic("empty expr")
}

type exactMatch struct {
	Field string `json:"field"`
	Value string `json:"value"`
	Found bool   `json:"found"`
}

type builtMatch struct {
	Fields  map[string]string `json:"fields"`
	Matches bool              `json:"matches"`
}

type builtCase struct {
	Selector     expr          `json:"selector"`
	String       *string       `json:"string,omitempty"`
	Empty        bool          `json:"empty"`
	Requirements []requirement `json:"requirements,omitempty"`
	Exact        *exactMatch   `json:"requires_exact_match,omitempty"`
	Matches      []builtMatch  `json:"matches"`
}

var splitTermsInputs = []string{
	// TestSplitTerms
	`a`, `a=avalue`, `a=avalue,b=bvalue`, `a=avalue,b==bvalue,c!=cvalue`, ``, `a=a,`, `,a=a`,
	`k=\,,k2=v2`, `k=\\,k2=v2`, `k=\\\,,k2=v2`, `k=\a\b\`, `k=\`, `함=수,목=록`,
	// More
	`,`, `,,`, `\,`, `a\\\\,b`, `é\,,é`,
}

var splitTermInputs = []string{
	// TestSplitTerm
	`a=value`, `b==value`, `c!=value`, ``, `a`, `k=\,`, `k=\=`, `k=\\\a\b\=\,\`, `함=수`,
	// More: the first operator wins, checked at each position in turn
	`a!==b`, `a=!b`, `a===b`, `!=b`, `=b`, `a!b`, `a!`, `a =b`, `é!=é`,
}

var escapeInputs = []string{
	// TestEscapeValue
	``, `a`, `=`, `,`, `\`, `\=\,\`,
	// More
	`a,b=c\d`, `é,`, `\\`,
}

var unescapeInputs = []string{
	// TestEscapeValue: the escaped values, then the invalid escape sequences
	``, `a`, `\=`, `\,`, `\\`, `\\\=\\\,\\`,
	`\`, `\\\`, `\a`,
	// More: bare , and =, escapes of multi-byte characters
	`a=b`, `a,b`, `=`, `\é`, `é\`, `x\,\=\\y`, `a\ b`,
}

var parseInputs = []string{
	// TestSelectorParse: good strings
	"x=a,y=b,z=c", "", "x!=a,y=b", `x=a||y\=b`, `x=a\=\=b`,
	// TestSelectorParse: bad strings
	"x=a||y=b", "x==a==b", "x=a,b", "x in (a)", "x in (a,b,c)", "x",
	// TestDeterministicParse
	"x=a,a=x", "a=x,x=a",
	// TestSelectorMatches
	"x=y", "x=y,z=w", "x!=y,z!=w", "notin=in", "foo=bar", "baz=blah", "foo=bar,baz=blah",
	`foo=bar,baz=blah,complex=\=value\\\,\\`, "foo=blah", "baz=bar", "foo=bar,foobar=bar,baz=blah",
	// TestTransform's selectors
	"a=b,c=d", "a=b", "a=b,c=d,e=f",
	// More: empty terms, == printed as =, sorting by the term's text, spaces kept, the first
	// operator winning, escape errors, multi-byte text
	",", ",,", "x=a,,", ",x=a,", "x==a", "x==a,x!=b", "x=", "x!=", "=x", "!=x", "==x", "=",
	"zzz,aaa", "b=1,a", " ", "a = b", "a=!b", "a!==b", "x=a=b", `x=a\x`, `x=a\`, `x=\\`,
	`x=a\,b`, `x=\,,y=\=`, "함=수,목=록", `x=\é`, "x=é,", "x=a,y=b=c,zz", "zz,x=a=b",
	"metadata.name=web-1,metadata.namespace=prod", "spec.host=node-1",
	// More: a term whose field and value are both empty is dropped (ParseSelector's Transform)
	"=,x=a", "x=a,=", "=,=", "==", "!=", `=\,`, "=,x",
}

var matchInputs = []struct {
	sel    string
	fields map[string]string
}{
	// TestEverything (through ParseSelector)
	{"", map[string]string{"x": "y"}},
	// TestSelectorMatches
	{"", map[string]string{"x": "y"}},
	{"x=y", map[string]string{"x": "y"}},
	{"x=y,z=w", map[string]string{"x": "y", "z": "w"}},
	{"x!=y,z!=w", map[string]string{"x": "z", "z": "a"}},
	{"notin=in", map[string]string{"notin": "in"}},
	{"x=y", map[string]string{"x": "z"}},
	{"x=y,z=w", map[string]string{"x": "w", "z": "w"}},
	{"x!=y,z!=w", map[string]string{"x": "z", "z": "w"}},
	{"foo=bar", fieldset},
	{"baz=blah", fieldset},
	{"foo=bar,baz=blah", fieldset},
	{`foo=bar,baz=blah,complex=\=value\\\,\\`, fieldset},
	{"foo=blah", fieldset},
	{"baz=bar", fieldset},
	{"foo=bar,foobar=bar,baz=blah", fieldset},
	// More: a missing field reads as ""
	{"x=", map[string]string{}},
	{"x!=", map[string]string{}},
	{"x!=y", map[string]string{}},
	{"x=y", map[string]string{}},
	{"x==y", map[string]string{"x": "y"}},
	{`x=a\,b`, map[string]string{"x": "a,b"}},
}

// TestSelectorMatches' fieldset.
var fieldset = map[string]string{"foo": "bar", "baz": "blah", "complex": `=value\,\`}

// TestSetMatches' labelset.
var labelset = map[string]string{"foo": "bar", "baz": "blah"}

func eq(f, v string) expr { return expr{Eq: []string{f, v}} }
func ne(f, v string) expr { return expr{Ne: []string{f, v}} }
func and(children ...expr) expr {
	if children == nil {
		children = []expr{}
	}
	return expr{And: &children}
}
func set(s map[string]string) expr { return expr{Set: &s} }

type built struct {
	sel    expr
	exact  string
	fields []map[string]string
}

var builtInputs = []built{
	// TestEverything
	{and(), "", []map[string]string{{"x": "y"}}},
	// TestOneTermEqualSelector
	{eq("x", "y"), "x", []map[string]string{{"x": "y"}, {"x": "z"}}},
	// TestSetMatches
	{set(map[string]string{}), "", []map[string]string{labelset}},
	{set(map[string]string{"foo": "bar"}), "", []map[string]string{labelset}},
	{set(map[string]string{"baz": "blah"}), "", []map[string]string{labelset}},
	{set(map[string]string{"foo": "bar", "baz": "blah"}), "", []map[string]string{labelset}},
	{set(map[string]string{"foo": "=blah"}), "", []map[string]string{labelset}},
	{set(map[string]string{"baz": "=bar"}), "", []map[string]string{labelset}},
	{set(map[string]string{"foo": "=bar", "foobar": "bar", "baz": "blah"}), "", []map[string]string{labelset}},
	// TestSetIsEmpty (hasTerm{} and notHasTerm{} are the one-term selectors of "" and "")
	{eq("", ""), "", nil},
	{ne("", ""), "", nil},
	{and(and()), "", nil},
	{and(eq("a", "b")), "", nil},
	// TestRequiresExactMatch
	{eq("", ""), "test", nil},
	{eq("a", "b"), "test", nil},
	{eq("test", "b"), "test", nil},
	{eq("test", ""), "test", nil},
	{ne("test", "b"), "test", nil},
	{ne("test", ""), "test", nil},
	{and(), "test", nil},
	{and(and()), "test", nil},
	{and(eq("test", "b")), "test", nil},
	{and(eq("", ""), eq("test", "b")), "test", nil},
	// More: AndSelectors prints its members joined by commas, an empty member as an empty
	// term; values are escaped as EscapeValue escapes them; nothing is sorted
	{and(eq("b", "2"), ne("a", "1")), "a", []map[string]string{{"a": "2", "b": "2"}, {"a": "1", "b": "2"}}},
	{and(and(), eq("a", "b")), "a", []map[string]string{{"a": "b"}}},
	{and(eq("a", "b"), and(), and(eq("c", "d"), ne("e", "f"))), "c", []map[string]string{{"a": "b", "c": "d"}, {"a": "b", "c": "d", "e": "f"}}},
	{eq("metadata.name", `a,b=c\d`), "metadata.name", []map[string]string{{"metadata.name": `a,b=c\d`}, {"metadata.name": "a"}}},
	{ne("x", "="), "x", []map[string]string{{"x": "="}, {}}},
	{eq("x", "y"), "", []map[string]string{{}}},
}

func requirementsOf(s fields.Selector) []requirement {
	var out []requirement
	for _, r := range s.Requirements() {
		out = append(out, requirement{r.Field, string(r.Operator), r.Value})
	}
	return out
}

func main() {
	out := struct {
		Description string           `json:"description"`
		SplitTerms  []splitTermsCase `json:"split_terms"`
		SplitTerm   []splitTermCase  `json:"split_term"`
		Escape      []escapeCase     `json:"escape"`
		Unescape    []unescapeCase   `json:"unescape"`
		Parse       []parseCase      `json:"parse"`
		Matches     []matchCase      `json:"matches"`
		Built       []builtCase      `json:"built"`
	}{Description: "Generated by gen-field-selector-cases/main.go with k8s.io/apimachinery v0.32.0: splitTerms and splitTerm of each input, EscapeValue and UnescapeValue, ParseSelector (its String(), Empty() and Requirements(), or its error), Matches against field sets, and selectors built with OneTermEqualSelector, OneTermNotEqualSelector, AndSelectors and SelectorFromSet. Inputs from pkg/fields/selector_test.go, and more."}
	for _, in := range splitTermsInputs {
		out.SplitTerms = append(out.SplitTerms, splitTermsCase{in, splitTerms(in)})
	}
	for _, in := range splitTermInputs {
		lhs, op, rhs, ok := splitTerm(in)
		out.SplitTerm = append(out.SplitTerm, splitTermCase{in, lhs, op, rhs, ok})
	}
	for _, in := range escapeInputs {
		out.Escape = append(out.Escape, escapeCase{in, fields.EscapeValue(in)})
	}
	for _, in := range unescapeInputs {
		c := unescapeCase{In: in}
		if v, err := fields.UnescapeValue(in); err != nil {
			e := err.Error()
			c.Error = &e
			var invalid fields.InvalidEscapeSequence
			c.InvalidEscapeSequence = errors.As(err, &invalid)
		} else {
			c.Value = &v
		}
		out.Unescape = append(out.Unescape, c)
	}
	for _, in := range parseInputs {
		c := parseCase{In: in}
		if s, err := fields.ParseSelector(in); err != nil {
			e := err.Error()
			c.Error = &e
		} else {
			str, empty := s.String(), s.Empty()
			c.String, c.Empty, c.Requirements = &str, &empty, requirementsOf(s)
		}
		out.Parse = append(out.Parse, c)
	}
	for _, m := range matchInputs {
		s, err := fields.ParseSelector(m.sel)
		if err != nil {
			panic(err)
		}
		out.Matches = append(out.Matches, matchCase{m.sel, m.fields, s.Matches(fields.Set(m.fields))})
	}
	for _, b := range builtInputs {
		s := b.sel.build()
		c := builtCase{Selector: b.sel, Empty: s.Empty(), Matches: []builtMatch{}}
		if b.sel.Set == nil {
			str := s.String()
			c.String, c.Requirements = &str, requirementsOf(s)
		}
		if b.exact != "" {
			v, found := s.RequiresExactMatch(b.exact)
			c.Exact = &exactMatch{b.exact, v, found}
		}
		for _, f := range b.fields {
			c.Matches = append(c.Matches, builtMatch{f, s.Matches(fields.Set(f))})
		}
		out.Built = append(out.Built, c)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
