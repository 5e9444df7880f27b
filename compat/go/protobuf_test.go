package compat

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// protobufMediaType is the Kubernetes protobuf wire format's media type.
const protobufMediaType = "application/vnd.kubernetes.protobuf"

// wireKey is how kubemock's `kubemock_http_requests_total` labels a request (the verb as
// upstream's RequestInfo names it, for the metrics: GET, LIST, WATCH, POST, PUT, PATCH,
// APPLY, DELETE).
type wireKey struct {
	verb, group, resource string
}

// wireLog records, client-side, every resource request of the typed clientset: what it sent
// and what came back. The server's metrics are the independent tally (checkProtobuf).
type wireLog struct {
	mu sync.Mutex
	// requests by key; bodies: those of them with a body in the object's encoding (POST, PUT).
	requests, bodies map[wireKey]int
	// problems: requests that were not protobuf both ways, said in words.
	problems []string
}

// wire is the suite's log of the typed clientset's requests.
var wire = &wireLog{requests: map[wireKey]int{}, bodies: map[wireKey]int{}}

// protobufClientset is client-go's typed clientset as a program makes one from a kubeconfig
// (client-go 1.32's typed clients prefer protobuf on their own), with `wire` watching its
// transport.
func protobufClientset(base *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(base)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recorder{next: rt} })
	return kubernetes.NewForConfig(c)
}

type recorder struct{ next http.RoundTripper }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	key, ok := classify(req)
	if !ok || err != nil {
		return resp, err
	}
	wire.record(key, req, resp)
	return resp, err
}

func (w *wireLog) record(key wireKey, req *http.Request, resp *http.Response) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests[key]++
	what := fmt.Sprintf("%s %s", req.Method, req.URL.RequestURI())
	if accept := req.Header.Get("Accept"); !strings.HasPrefix(accept, protobufMediaType) {
		w.problems = append(w.problems, fmt.Sprintf("%s: Accept %q", what, accept))
	}
	if req.Method == http.MethodPost || req.Method == http.MethodPut {
		w.bodies[key]++
		if media, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); media != protobufMediaType {
			w.problems = append(w.problems, fmt.Sprintf("%s: sent %q", what, req.Header.Get("Content-Type")))
		}
	}
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media != protobufMediaType {
		w.problems = append(w.problems, fmt.Sprintf("%s: answered %d %q", what, resp.StatusCode, resp.Header.Get("Content-Type")))
	}
}

func (w *wireLog) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	verbs := map[string]int{}
	for key, n := range w.requests {
		verbs[key.verb] += n
	}
	names := make([]string, 0, len(verbs))
	for verb, n := range verbs {
		names = append(names, fmt.Sprintf("%s=%d", verb, n))
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// classify names a resource request as the server's metrics do (upstream's
// k8s.io/apiserver/pkg/endpoints/request/requestinfo.go); false for anything else
// (discovery, /version, /metrics).
func classify(req *http.Request) (wireKey, bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return wireKey{}, false
	}
	// namespaces/NS/RESOURCE...; namespaces/NS and namespaces/NS/{status,finalize} are the
	// namespace itself.
	if len(rest) >= 3 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize" {
		rest = rest[2:]
	}
	named := len(rest) >= 2
	verb := ""
	switch req.Method {
	case http.MethodGet:
		switch {
		case named:
			verb = "GET"
		case isTrue(req.URL.Query(), "watch"):
			verb = "WATCH"
		default:
			verb = "LIST"
		}
	case http.MethodPost:
		verb = "POST"
	case http.MethodPut:
		verb = "PUT"
	case http.MethodPatch:
		verb = "PATCH"
		if media, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); media == "application/apply-patch+yaml" {
			verb = "APPLY"
		}
	case http.MethodDelete:
		verb = "DELETE"
	default:
		return wireKey{}, false
	}
	return wireKey{verb: verb, group: group, resource: rest[0]}, true
}

func isTrue(q url.Values, name string) bool {
	v := q.Get(name)
	return v == "true" || v == "1"
}

// flagValue is the value of a `go test` flag ("" when unset or unknown).
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// wireSample is one sample of `kubemock_http_requests_total`.
type wireSample struct {
	key               wireKey
	request, response string
	value             float64
}

// scrapeWire reads `kubemock_http_requests_total` from the server's /metrics (through a client
// of its own, so that the scrape is not in the typed clientset's log).
func scrapeWire(ctx context.Context) ([]wireSample, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("/metrics: %d %s", resp.StatusCode, body)
	}
	var samples []wireSample
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	const name = "kubemock_http_requests_total{"
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		end := strings.LastIndex(line, "} ")
		if end < 0 {
			return nil, fmt.Errorf("unreadable sample %q", line)
		}
		labels := parseLabels(line[len(name):end])
		value, err := strconv.ParseFloat(line[end+2:], 64)
		if err != nil {
			return nil, fmt.Errorf("unreadable sample %q: %w", line, err)
		}
		samples = append(samples, wireSample{
			key:      wireKey{verb: labels["verb"], group: labels["group"], resource: labels["resource"]},
			request:  labels["request_content_type"],
			response: labels["response_content_type"],
			value:    value,
		})
	}
	return samples, scanner.Err()
}

// parseLabels reads `a="x",b="y"` (the values here never hold quotes or commas).
func parseLabels(text string) map[string]string {
	labels := map[string]string{}
	for _, pair := range strings.Split(text, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if ok {
			labels[name] = strings.Trim(value, `"`)
		}
	}
	return labels
}

// exclusiveResource is a resource only the typed clientset touches in this suite: for it the
// server's counts must equal the client's exactly, and all be protobuf.
const exclusiveResource = "secrets"

// checkProtobuf checks, at the end of the suite, that every resource request the typed
// clientset made was protobuf both ways (client-side, from `wire`), and that the server
// counted at least as many protobuf requests and answers per verb and resource (exactly as
// many, and nothing else, for `exclusiveResource`).
func checkProtobuf() error {
	samples, err := scrapeWire(context.Background())
	if err != nil {
		return err
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if len(wire.problems) > 0 {
		return fmt.Errorf("%d requests of the typed clientset were not protobuf, e.g. %s", len(wire.problems), strings.Join(wire.problems[:min(5, len(wire.problems))], "; "))
	}
	for _, verb := range []string{"GET", "WATCH", "POST", "PUT", "PATCH", "APPLY", "DELETE"} {
		seen := false
		for key := range wire.requests {
			seen = seen || key.verb == verb
		}
		if !seen {
			return fmt.Errorf("the suite made no %s request with the typed clientset", verb)
		}
	}
	answered, sent, all := map[wireKey]float64{}, map[wireKey]float64{}, map[wireKey]float64{}
	for _, s := range samples {
		all[s.key] += s.value
		if s.response == protobufMediaType {
			answered[s.key] += s.value
		}
		if s.request == protobufMediaType {
			sent[s.key] += s.value
		}
	}
	for key, n := range wire.requests {
		if answered[key] < float64(n) {
			return fmt.Errorf("%v: the clientset made %d requests, the server answered %v in protobuf", key, n, answered[key])
		}
		if sent[key] < float64(wire.bodies[key]) {
			return fmt.Errorf("%v: the clientset sent %d protobuf bodies, the server counted %v", key, wire.bodies[key], sent[key])
		}
		if key.resource == exclusiveResource && (all[key] != float64(n) || answered[key] != float64(n)) {
			return fmt.Errorf("%v: the clientset made %d requests; the server counted %v, %v of them answered in protobuf", key, n, all[key], answered[key])
		}
	}
	for key, n := range all {
		if key.resource == exclusiveResource && wire.requests[key] == 0 {
			return fmt.Errorf("%v: %v requests the clientset did not make", key, n)
		}
	}
	return nil
}
