package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
)

// Server-side apply through applyconfigurations: each field manager owns what it applied, a
// second manager changing an owned field conflicts (409 naming the owner) until it forces,
// a manager's fields extract back into an apply configuration, and a manager that stops
// applying a field removes it.
func TestServerSideApply(t *testing.T) {
	ctx := testContext(t)
	ns := namespace(t)
	cms := clientset.CoreV1().ConfigMaps(ns)

	first, err := cms.Apply(ctx, corev1ac.ConfigMap("applied", ns).
		WithLabels(map[string]string{"owner": "alpha"}).
		WithData(map[string]string{"a": "1", "shared": "alpha"}), metav1.ApplyOptions{FieldManager: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.ManagedFields) != 1 || first.ManagedFields[0].Manager != "alpha" || first.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managed fields after the first apply: %s", toJSON(first.ManagedFields))
	}
	// beta applies a field of its own: no conflict, both managers listed.
	second, err := cms.Apply(ctx, corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "beta"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(second.Data) != "map[a:1 b:2 shared:alpha]" || len(second.ManagedFields) != 2 {
		t.Fatalf("after beta's apply: %v %s", second.Data, toJSON(second.ManagedFields))
	}
	// beta changes alpha's field: a conflict naming alpha and the field.
	_, err = cms.Apply(ctx, corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"b": "2", "shared": "beta"}), metav1.ApplyOptions{FieldManager: "beta"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("conflicting apply: want Conflict, got %v", err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Details == nil || len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != ".data.shared" ||
		status.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict {
		t.Fatalf("conflict causes: %s", toJSON(status.Details))
	}
	// Forced: beta takes the field over.
	forced, err := cms.Apply(ctx, corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"b": "2", "shared": "beta"}), metav1.ApplyOptions{FieldManager: "beta", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if forced.Data["shared"] != "beta" {
		t.Fatalf("after the forced apply: %v", forced.Data)
	}
	alpha, err := corev1ac.ExtractConfigMap(forced, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(alpha.Data) != "map[a:1]" || alpha.Labels["owner"] != "alpha" {
		t.Fatalf("alpha's fields after losing shared: %v %v", alpha.Data, alpha.Labels)
	}
	// alpha applies without its label: the label goes, the data it still applies stays.
	dropped, err := cms.Apply(ctx, corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dropped.Labels["owner"]; ok || fmt.Sprint(dropped.Data) != "map[a:1 b:2 shared:beta]" {
		t.Fatalf("after alpha dropped its label: %v %v", dropped.Labels, dropped.Data)
	}

	// A Deployment applied as kubectl's apply would: containers merge by name (the
	// associative list keys of the schema), defaults filled by the server.
	deployment := appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(2).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(map[string]string{"app": "web"}).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("app").WithImage("nginx:1")))))
	if _, err := clientset.AppsV1().Deployments(ns).Apply(ctx, deployment, metav1.ApplyOptions{FieldManager: "deployer"}); err != nil {
		t.Fatal(err)
	}
	sidecar := appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().
		WithTemplate(corev1ac.PodTemplateSpec().
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("sidecar").WithImage("envoy:1")))))
	merged, err := clientset.AppsV1().Deployments(ns).Apply(ctx, sidecar, metav1.ApplyOptions{FieldManager: "injector"})
	if err != nil {
		t.Fatal(err)
	}
	containers := merged.Spec.Template.Spec.Containers
	if len(containers) != 2 || containers[0].Name != "app" || containers[1].Name != "sidecar" || *merged.Spec.Replicas != 2 ||
		merged.Spec.Strategy.Type != "RollingUpdate" {
		t.Fatalf("merged deployment: %s", toJSON(merged.Spec))
	}
}

// A watch with bookmarks and `sendInitialEvents` (what a WatchListClient reflector sends):
// the existing objects as ADDED, then the bookmark that ends the initial events (annotated
// `k8s.io/initial-events-end`), then live events, and periodic bookmarks while idle.
func TestWatchListWithBookmarks(t *testing.T) {
	ctx := testContext(t)
	ns := namespace(t)
	cms := clientset.CoreV1().ConfigMaps(ns)
	for i := 0; i < 3; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("initial-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen := map[string]bool{}
	for len(seen) < 3 {
		e := nextEvent(t, w)
		cm, ok := e.Object.(*corev1.ConfigMap)
		if e.Type != watch.Added || !ok {
			t.Fatalf("initial event %s %T", e.Type, e.Object)
		}
		seen[cm.Name] = true
	}
	end := nextEvent(t, w)
	marker, ok := end.Object.(*corev1.ConfigMap)
	if end.Type != watch.Bookmark || !ok || marker.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("after the initial events: %s %s", end.Type, toJSON(end.Object))
	}
	initialRV, err := strconv.ParseUint(marker.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "initial-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Live events in order (a periodic bookmark may come between them).
	var live []string
	var lastRV uint64
	for len(live) < 2 {
		e := nextEvent(t, w)
		if e.Type == watch.Bookmark {
			continue
		}
		cm := e.Object.(*corev1.ConfigMap)
		rv, _ := strconv.ParseUint(cm.ResourceVersion, 10, 64)
		if rv <= initialRV || rv <= lastRV {
			t.Fatalf("event %s %s at resourceVersion %d after %d/%d", e.Type, cm.Name, rv, initialRV, lastRV)
		}
		lastRV = rv
		live = append(live, fmt.Sprintf("%s %s", e.Type, cm.Name))
	}
	if fmt.Sprint(live) != "[ADDED live DELETED initial-0]" {
		t.Fatalf("live events: %v", live)
	}
	// Idle: the server's periodic bookmark (every 300 ms in this suite) at least as new.
	deadline := time.After(wait)
	for {
		select {
		case e := <-w.ResultChan():
			if e.Type != watch.Bookmark {
				t.Fatalf("unexpected %s while idle", e.Type)
			}
			cm := e.Object.(*corev1.ConfigMap)
			rv, _ := strconv.ParseUint(cm.ResourceVersion, 10, 64)
			if rv < lastRV {
				t.Fatalf("bookmark at %d before the last event %d", rv, lastRV)
			}
			return
		case <-deadline:
			t.Fatal("no periodic bookmark")
		}
	}
}
