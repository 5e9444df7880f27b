package compat

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// widgetFinalizer is the Widget controller's finalizer: it deletes the Widget's ConfigMap.
const widgetFinalizer = "compat.kubemock.io/cleanup"

// crScheme is the scheme of the controller-runtime tests: the built-in kinds and Widget.
var crScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := addWidgetToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

var setLoggerOnce sync.Once

// setLogger gives controller-runtime a logger that prints only errors, and only with -v (its
// info lines would drown the test output, and reconcilers meet the conflicts and stale-cache
// AlreadyExists errors they retry as a matter of course; without a logger it complains
// after 30 s).
func setLogger() {
	setLoggerOnce.Do(func() {
		ctrllog.SetLogger(funcr.New(func(prefix, args string) {
			if testing.Verbose() && strings.Contains(args, `"error"`) {
				fmt.Fprintln(os.Stderr, "controller-runtime:", prefix, args)
			}
		}, funcr.Options{}))
	})
}

// startManager runs a manager over namespace ns (its cache limited to it) with what setup
// registers, until the test ends.
func startManager(t *testing.T, ns string, setup func(ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	setLogger()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 crScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(testContext(t)) {
		t.Fatal("the manager's cache did not sync")
	}
	return mgr
}

// directClient is a controller-runtime client without a cache (reads go to the server).
func directClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: crScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// widgetReconciler keeps, for each Widget, a ConfigMap it controls holding spec.message,
// reports it in the status, and deletes it (finalizer) when the Widget goes.
type widgetReconciler struct {
	client.Client
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var w Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-config", Namespace: w.Namespace}}
	if !w.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&w, widgetFinalizer) {
			return ctrl.Result{}, nil
		}
		if err := r.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(&w, widgetFinalizer)
		return ctrl.Result{}, r.Update(ctx, &w)
	}
	if controllerutil.AddFinalizer(&w, widgetFinalizer) {
		if err := r.Update(ctx, &w); err != nil {
			return ctrl.Result{}, err
		}
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"message": w.Spec.Message}
		return controllerutil.SetControllerReference(&w, cm, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	if w.Status.ObservedGeneration != w.Generation || w.Status.ConfigMap != cm.Name {
		w.Status = WidgetStatus{ObservedGeneration: w.Generation, ConfigMap: cm.Name}
		if err := r.Status().Update(ctx, &w); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// startWidgetController runs the Widget controller (For Widget, Owns ConfigMap) in ns.
func startWidgetController(t *testing.T, ns string) ctrl.Manager {
	return startManager(t, ns, func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).
			Named("widget-" + ns).
			For(&Widget{}).
			Owns(&corev1.ConfigMap{}).
			Complete(&widgetReconciler{Client: mgr.GetClient()})
	})
}

// A manager with a reconciler that owns a child kind: the child is created with a controller
// reference, follows the parent's spec, is put back when deleted or changed, and the status
// reports the generation reconciled.
func TestManagerReconcilerOwnsChild(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ns := namespace(t)
	startWidgetController(t, ns)
	c := directClient(t)
	w := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns}, Spec: WidgetSpec{Message: "one"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	converged := func(message string, generation int64) {
		t.Helper()
		eventually(t, "reconciled to "+message, func() (bool, string) {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-config"}, &cm); err != nil {
				return false, err.Error()
			}
			var got Widget
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
				return false, err.Error()
			}
			owner := metav1.GetControllerOf(&cm)
			ok := cm.Data["message"] == message && owner != nil && owner.UID == got.UID && owner.Kind == "Widget" &&
				*owner.BlockOwnerDeletion && got.Status.ObservedGeneration == generation && got.Status.ConfigMap == "w-config" &&
				controllerutil.ContainsFinalizer(&got, widgetFinalizer)
			return ok, fmt.Sprintf("data %v owner %v status %+v finalizers %v", cm.Data, owner, got.Status, got.Finalizers)
		})
	}
	converged("one", 1)

	patch := client.MergeFrom(w.DeepCopy())
	w.Spec.Message = "two"
	if err := c.Patch(ctx, w, patch); err != nil {
		t.Fatal(err)
	}
	converged("two", 2)

	// The owned child deleted: the owner is reconciled and puts it back.
	if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w-config", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	converged("two", 2)
	// Changed behind the controller's back: put right.
	if err := c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w-config", Namespace: ns}},
		client.RawPatch(types.MergePatchType, []byte(`{"data":{"message":"tampered"}}`))); err != nil {
		t.Fatal(err)
	}
	converged("two", 2)
}

// Finalizers: the controller adds its own; a delete then only marks the object; the
// controller cleans up and removes its finalizer; another finalizer still holds the object
// until it is removed too, and then the object is gone.
func TestFinalizers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ns := namespace(t)
	startWidgetController(t, ns)
	c := directClient(t)
	const hold = "compat.kubemock.io/hold"
	w := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: ns, Finalizers: []string{hold}}, Spec: WidgetSpec{Message: "m"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(w)
	eventually(t, "the controller's finalizer and ConfigMap", func() (bool, string) {
		var got Widget
		if err := c.Get(ctx, key, &got); err != nil {
			return false, err.Error()
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "f-config"}, &corev1.ConfigMap{})
		return controllerutil.ContainsFinalizer(&got, widgetFinalizer) && err == nil, fmt.Sprintf("%v %v", got.Finalizers, err)
	})

	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	var got Widget
	eventually(t, "the controller's cleanup", func() (bool, string) {
		if err := c.Get(ctx, key, &got); err != nil {
			return false, err.Error()
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "f-config"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err) && fmt.Sprint(got.Finalizers) == "["+hold+"]", fmt.Sprintf("%v %v", got.Finalizers, err)
	})
	if got.DeletionTimestamp.IsZero() {
		t.Fatal("a deleted object held by a finalizer has no deletionTimestamp")
	}
	// While terminating, spec changes are still accepted but new finalizers are not.
	patch := client.MergeFrom(got.DeepCopy())
	controllerutil.AddFinalizer(&got, "compat.kubemock.io/late")
	if err := c.Patch(ctx, &got, patch); !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Fatalf("adding a finalizer while terminating: want a refusal, got %v", err)
	}
	if err := c.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	controllerutil.RemoveFinalizer(&got, hold)
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &Widget{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer: want NotFound, got %v", err)
	}
}

// The cached client with field indexes: List with MatchingFields answers from the index,
// for a built-in kind and for the CRD, and follows changes.
func TestCachedClientFieldIndex(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ns := namespace(t)
	mgr := startManager(t, ns, func(mgr ctrl.Manager) error {
		indexer := mgr.GetFieldIndexer()
		if err := indexer.IndexField(context.Background(), &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}); err != nil {
			return err
		}
		return indexer.IndexField(context.Background(), &Widget{}, "spec.message", func(o client.Object) []string {
			return []string{o.(*Widget).Spec.Message}
		})
	})
	c := directClient(t)
	for i, node := range []string{"node-a", "node-b", "node-a"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: ns},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, message := range []string{"x", "y", "x"} {
		if err := c.Create(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-", Namespace: ns}, Spec: WidgetSpec{Message: message}}); err != nil {
			t.Fatal(err)
		}
	}
	cached := mgr.GetClient()
	names := func(list client.ObjectList) string {
		var out []string
		switch l := list.(type) {
		case *corev1.PodList:
			for _, p := range l.Items {
				out = append(out, p.Name)
			}
		case *WidgetList:
			for _, w := range l.Items {
				out = append(out, w.Spec.Message)
			}
		}
		return fmt.Sprint(out)
	}
	eventually(t, "pods on node-a from the index", func() (bool, string) {
		var pods corev1.PodList
		if err := cached.List(ctx, &pods, client.InNamespace(ns), client.MatchingFields{"spec.nodeName": "node-a"}); err != nil {
			return false, err.Error()
		}
		return names(&pods) == "[p0 p2]", names(&pods)
	})
	eventually(t, "widgets with message x from the index", func() (bool, string) {
		var widgets WidgetList
		if err := cached.List(ctx, &widgets, client.InNamespace(ns), client.MatchingFields{"spec.message": "x"}); err != nil {
			return false, err.Error()
		}
		return names(&widgets) == "[x x]", names(&widgets)
	})
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p0", Namespace: ns}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the index follows the deletion", func() (bool, string) {
		var pods corev1.PodList
		if err := cached.List(ctx, &pods, client.MatchingFields{"spec.nodeName": "node-a"}); err != nil {
			return false, err.Error()
		}
		return names(&pods) == "[p2]", names(&pods)
	})
}

// controller-runtime's Patch helpers: merge (with and without the optimistic lock),
// strategic merge (containers merged by name), a raw JSON patch, and Apply with a field owner,
// a conflict, and ForceOwnership.
func TestPatchAndApplyHelpers(t *testing.T) {
	ctx := testContext(t)
	ns := namespace(t)
	c := directClient(t)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}},
			},
		},
	}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}

	// Merge patch with the optimistic lock: a stale base conflicts.
	stale := d.DeepCopy()
	base := d.DeepCopy()
	d.Spec.Replicas = ptr.To[int32](3)
	if err := c.Patch(ctx, d, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}
	staleBase := stale.DeepCopy()
	stale.Spec.Replicas = ptr.To[int32](5)
	if err := c.Patch(ctx, stale, client.MergeFromWithOptions(staleBase, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Fatalf("stale optimistic merge patch: want Conflict, got %v", err)
	}

	// Strategic merge: a container added by name, the existing one kept.
	base = d.DeepCopy()
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy:1"})
	if err := c.Patch(ctx, d, client.StrategicMergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns}}, client.RawPatch(types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`))); err != nil {
		t.Fatal(err)
	}
	// A JSON patch with a test operation.
	if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns}}, client.RawPatch(types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/replicas","value":3},{"op":"replace","path":"/spec/replicas","value":4}]`))); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns}}, client.RawPatch(types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/replicas","value":3}]`))); !apierrors.IsInvalid(err) {
		t.Fatalf("failing JSON patch test: want Invalid, got %v", err)
	}
	var got appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
		t.Fatal(err)
	}
	containers := got.Spec.Template.Spec.Containers
	if *got.Spec.Replicas != 4 || len(containers) != 2 || containers[0].Image != "nginx:2" || containers[1].Name != "sidecar" {
		t.Fatalf("after the patches: replicas %d containers %s", *got.Spec.Replicas, toJSON(containers))
	}

	// client.Apply: typed objects with their TypeMeta, a field owner per applier.
	apply := func(owner, value string, force bool) error {
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "applied", Namespace: ns},
			Data:       map[string]string{"key": value, owner: "mine"},
		}
		opts := []client.PatchOption{client.FieldOwner(owner)}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		return c.Patch(ctx, cm, client.Apply, opts...)
	}
	if err := apply("first", "1", false); err != nil {
		t.Fatal(err)
	}
	if err := apply("second", "2", false); !apierrors.IsConflict(err) {
		t.Fatalf("second owner without force: want Conflict, got %v", err)
	}
	if err := apply("second", "2", true); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "applied"}, &cm); err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, m := range cm.ManagedFields {
		managers[m.Manager] = true
	}
	if fmt.Sprint(cm.Data) != "map[first:mine key:2 second:mine]" || !managers["first"] || !managers["second"] {
		t.Fatalf("after the applies: %v %s", cm.Data, toJSON(cm.ManagedFields))
	}
}
