// Command startbench measures envtest's Environment.Start() as a suite calls it (this
// module's CRDs, the binaries of KUBEBUILDER_ASSETS), N times, and prints each run and the
// median (with USE_EXISTING_CLUSTER=true: against the cluster of KUBECONFIG, which Start()
// only checks and installs the CRDs into); with -phases it also times the steps Start() is made of (etcd, kube-apiserver,
// user provisioning, the default namespace, CRD installation), to show what dominates.
//
//	KUBEBUILDER_ASSETS=$(kubemock envtest-assets /tmp/assets) go run ./hack/startbench -n 20 -phases
//	USE_EXISTING_CLUSTER=true KUBECONFIG=/tmp/kubemock.kubeconfig go run ./hack/startbench -n 20
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	runs := flag.Int("n", 20, "starts to measure")
	phases := flag.Bool("phases", false, "also time Start()'s steps one by one")
	crds := flag.String("crds", filepath.Join("config", "crd", "bases"), "CRD directory")
	flag.Parse()
	existing := os.Getenv("USE_EXISTING_CLUSTER") == "true"
	if os.Getenv("KUBEBUILDER_ASSETS") == "" && !existing {
		fmt.Fprintln(os.Stderr, "startbench: set KUBEBUILDER_ASSETS (or USE_EXISTING_CLUSTER=true and KUBECONFIG)")
		os.Exit(2)
	}

	var totals []time.Duration
	for i := 0; i < *runs; i++ {
		env := &envtest.Environment{CRDDirectoryPaths: []string{*crds}, ErrorIfCRDPathMissing: true}
		started := time.Now()
		if _, err := env.Start(); err != nil {
			fail(err)
		}
		took := time.Since(started)
		totals = append(totals, took)
		if err := env.Stop(); err != nil {
			fail(err)
		}
		fmt.Printf("start %2d: %7.1f ms\n", i+1, ms(took))
	}
	fmt.Printf("Environment.Start(): median %.1f ms over %d starts (min %.1f, max %.1f)\n",
		ms(median(totals)), len(totals), ms(minOf(totals)), ms(maxOf(totals)))

	if !*phases || existing {
		return
	}
	names := []string{"etcd", "kube-apiserver", "add user", "default namespace", "install CRDs"}
	steps := make([][]time.Duration, len(names))
	for i := 0; i < *runs; i++ {
		for step, took := range phaseRun(*crds) {
			steps[step] = append(steps[step], took)
		}
	}
	for step, name := range names {
		fmt.Printf("  %-18s median %6.1f ms\n", name, ms(median(steps[step])))
	}
}

// phaseRun does what Environment.Start() does (pkg/envtest/server.go), step by step, and
// returns each step's time.
func phaseRun(crds string) []time.Duration {
	var took []time.Duration
	mark := time.Now()
	lap := func() {
		took = append(took, time.Since(mark))
		mark = time.Now()
	}
	etcd := &envtest.Etcd{}
	if err := etcd.Start(); err != nil {
		fail(err)
	}
	defer func() { _ = etcd.Stop() }()
	lap()
	api := &envtest.APIServer{EtcdURL: etcd.URL}
	if err := api.Start(); err != nil {
		fail(err)
	}
	defer func() { _ = api.Stop() }()
	lap()
	plane := &envtest.ControlPlane{APIServer: api, Etcd: etcd}
	user, err := plane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}},
		&rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		fail(err)
	}
	cfg := user.Config()
	lap()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		fail(err)
	}
	for {
		if c.Get(context.Background(), types.NamespacedName{Name: "default"}, &corev1.Namespace{}) == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	lap()
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true}); err != nil {
		fail(err)
	}
	lap()
	return took
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(values []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), values...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func minOf(values []time.Duration) time.Duration {
	m := values[0]
	for _, v := range values {
		m = min(m, v)
	}
	return m
}

func maxOf(values []time.Duration) time.Duration {
	m := values[0]
	for _, v := range values {
		m = max(m, v)
	}
	return m
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "startbench:", err)
	os.Exit(1)
}
