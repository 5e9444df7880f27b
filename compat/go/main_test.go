// Package compat runs client-go and controller-runtime, unchanged, against a `kubemock serve`
// that TestMain starts (the binary from KUBEMOCK_BIN, default the workspace's
// target/debug/kubemock) in the secure mode: TLS, a client certificate from the kubeconfig
// that `--kubeconfig-out` writes, RBAC. Every test gets its own namespace. At the end TestMain
// checks from the server's /metrics that client-go's typed clientset talked protobuf
// throughout (protobuf_test.go).
package compat

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// wait is the deadline of any single wait: generous, because CI machines are slow, and only
// ever reached when something is broken.
const wait = 30 * time.Second

// poll is how often a condition is checked while waiting for it.
const poll = 20 * time.Millisecond

// readyPrefix is what kubemock's ready line says before the URL.
const readyPrefix = "kubemock: serving on "

// server is a running `kubemock serve`.
type server struct {
	cmd        *exec.Cmd
	url        string
	kubeconfig string
	dir        string
}

var (
	// srv is the suite's server (secure mode).
	srv *server
	// cfg is the admin's rest.Config for srv, as clientcmd reads the kubeconfig.
	cfg *rest.Config
	// clientset is the suite's one typed clientset, protobuf as kube-controller-manager sets
	// it up (`--kube-api-content-type`); every request it makes is recorded by `wire`.
	clientset *kubernetes.Clientset
	// namespaces counts the namespaces the tests created, for unique names.
	namespaces atomic.Int64
)

// kubemockBinary is the binary under test: KUBEMOCK_BIN, else the workspace's debug build.
func kubemockBinary() (string, error) {
	if bin := os.Getenv("KUBEMOCK_BIN"); bin != "" {
		return bin, nil
	}
	return filepath.Abs("../../target/debug/kubemock")
}

// startServer runs `kubemock serve --port 0 --kubeconfig-out F ARGS` until its ready line.
func startServer(args ...string) (*server, error) {
	bin, err := kubemockBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kubemock-compat-go-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	all := append([]string{"serve", "--port", "0", "--kubeconfig-out", kubeconfig}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	lines := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		if scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
		// Whatever else it prints is drained, so that it never blocks on a full pipe.
		for scanner.Scan() {
		}
	}()
	s := &server{cmd: cmd, kubeconfig: kubeconfig, dir: dir}
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, readyPrefix) {
			s.stop()
			return nil, fmt.Errorf("unexpected ready line %q", line)
		}
		s.url = strings.TrimPrefix(line, readyPrefix)
	case <-time.After(wait):
		s.stop()
		return nil, fmt.Errorf("no ready line within %s", wait)
	}
	return s, nil
}

// restConfig reads the server's kubeconfig as any Go program would.
func (s *server) restConfig() (*rest.Config, error) {
	c, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return nil, err
	}
	// client-go's defaults (QPS 5, burst 10) would make the suite wait on its own limiter.
	c.QPS, c.Burst = 500, 1000
	return c, nil
}

// stop ends the server (SIGTERM, then SIGKILL after the deadline) and removes its files.
func (s *server) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(wait):
			_ = s.cmd.Process.Kill()
			<-done
		}
	}
	_ = os.RemoveAll(s.dir)
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Before any client exists: client-go reads its feature gates from the environment once.
	enableWatchListClient()
	var err error
	// --no-controllers: the API server alone, as envtest runs it; the bookmark interval short
	// enough for the watch test to see periodic bookmarks.
	srv, err = startServer("--secure", "--no-controllers", "--bookmark-interval", "300ms")
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat: kubemock did not start:", err)
		return 1
	}
	defer srv.stop()
	if cfg, err = srv.restConfig(); err != nil {
		fmt.Fprintln(os.Stderr, "compat: reading the kubeconfig:", err)
		return 1
	}
	if !strings.HasPrefix(cfg.Host, "https://") || len(cfg.CertData) == 0 {
		fmt.Fprintf(os.Stderr, "compat: expected TLS with a client certificate, got %s\n", cfg.Host)
		return 1
	}
	if clientset, err = protobufClientset(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "compat: clientset:", err)
		return 1
	}
	if err := installCRDs(); err != nil {
		fmt.Fprintln(os.Stderr, "compat: installing the CRDs:", err)
		return 1
	}
	code := m.Run()
	if code == 0 && fullRun() {
		if err := checkProtobuf(); err != nil {
			fmt.Fprintln(os.Stderr, "compat: FAIL protobuf check:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "compat: the typed clientset talked protobuf throughout:", wire.summary())
	}
	return code
}

// fullRun says whether every test ran (no -run, -skip or -short filter), so that the counts
// of the protobuf check are the whole suite's.
func fullRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flagValue(name); f != "" {
			return false
		}
	}
	return true
}

// namespace creates a namespace with a unique name for one test and deletes it afterwards.
func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), namespaces.Add(1))
	if len(name) > 63 {
		name = name[len(name)-63:]
		name = strings.TrimLeft(name, "-")
	}
	ctx := context.Background()
	_, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = clientset.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// eventually waits until cond holds (or fails the test with what it last said).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(wait)
	last := ""
	for time.Now().Before(deadline) {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		time.Sleep(poll)
	}
	t.Fatalf("%s: not within %s (last: %s)", what, wait, last)
}

// testContext is a context that ends with the test (or its deadline).
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return ctx
}
