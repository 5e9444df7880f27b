// auditcheck decodes an audit log written by kubemock with kube-apiserver's own types
// (k8s.io/apiserver/pkg/apis/audit/v1, the version kubemock follows), strictly: every line
// must be one audit.k8s.io/v1 Event with no field the type lacks, and the values upstream
// fixes (kind, apiVersion, level, stage, timestamps) must be what its encoder writes. Run by
// tests/audit.rs when `go` is installed: `go run ./scripts/auditcheck LOG`.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: auditcheck LOG")
		os.Exit(2)
	}
	file, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 0, 1<<20), 64<<20)
	levels := map[auditv1.Level]bool{auditv1.LevelMetadata: true, auditv1.LevelRequest: true, auditv1.LevelRequestResponse: true}
	stages := map[auditv1.Stage]bool{auditv1.StageRequestReceived: true, auditv1.StageResponseStarted: true, auditv1.StageResponseComplete: true, auditv1.StagePanic: true}
	n := 0
	for scanner.Scan() {
		n++
		line := scanner.Bytes()
		decoder := json.NewDecoder(bytes.NewReader(line))
		decoder.DisallowUnknownFields()
		var event auditv1.Event
		if err := decoder.Decode(&event); err != nil {
			fail(n, line, err)
		}
		if event.Kind != "Event" || event.APIVersion != "audit.k8s.io/v1" {
			fail(n, line, fmt.Errorf("kind %q apiVersion %q", event.Kind, event.APIVersion))
		}
		if !levels[event.Level] || !stages[event.Stage] || event.AuditID == "" || event.Verb == "" {
			fail(n, line, fmt.Errorf("level %q stage %q auditID %q verb %q", event.Level, event.Stage, event.AuditID, event.Verb))
		}
		for _, t := range []metav1.MicroTime{event.RequestReceivedTimestamp, event.StageTimestamp} {
			if t.IsZero() || t.UTC().Format(metav1.RFC3339Micro) != mustString(t) {
				fail(n, line, fmt.Errorf("timestamp %v", t))
			}
		}
		// What upstream's encoder writes for the decoded event is what was read, member for
		// member (objects compared as JSON values, so member order does not matter).
		again, err := json.Marshal(&event)
		if err != nil {
			fail(n, line, err)
		}
		var read, written interface{}
		if json.Unmarshal(line, &read) != nil || json.Unmarshal(again, &written) != nil {
			fail(n, line, fmt.Errorf("not JSON"))
		}
		if fmt.Sprint(read) != fmt.Sprint(written) {
			fail(n, line, fmt.Errorf("re-encoded differently:\n%s", again))
		}
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if n == 0 {
		fmt.Fprintln(os.Stderr, "no events")
		os.Exit(1)
	}
	fmt.Printf("%d events decode as audit.k8s.io/v1 Event\n", n)
}

func mustString(t metav1.MicroTime) string {
	b, _ := json.Marshal(t)
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}

func fail(n int, line []byte, err error) {
	fmt.Fprintf(os.Stderr, "line %d: %v\n%s\n", n, err, line)
	os.Exit(1)
}
