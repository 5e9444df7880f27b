package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
)

// enableWatchListClient turns client-go's WatchListClient feature on for the whole suite (as
// `KUBE_FEATURE_WatchListClient=true` does; test.sh exports it too): typed List calls and
// informers then stream their lists with `sendInitialEvents` watches.
func enableWatchListClient() {
	_ = os.Setenv("KUBE_FEATURE_WatchListClient", "true")
}

func TestWatchListClientIsOn(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Fatal("client-go's WatchListClient feature is off: the suite would not exercise streaming lists")
	}
}

// The typed clientset: create, get, update, list with a selector, delete, in protobuf, with the
// server's defaulting and errors coming back as typed values.
func TestTypedClientset(t *testing.T) {
	ctx := testContext(t)
	ns := namespace(t)
	secrets := clientset.CoreV1().Secrets(ns)

	created, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s1", Labels: map[string]string{"app": "compat"}},
		StringData: map[string]string{"password": "hunter2"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// stringData is merged into data, the type defaulted (upstream's Secret strategy).
	if string(created.Data["password"]) != "hunter2" || created.Type != corev1.SecretTypeOpaque || created.UID == "" || created.ResourceVersion == "" {
		t.Fatalf("created: %+v", created)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}

	got, err := secrets.Get(ctx, "s1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Data["user"] = []byte("admin")
	updated, err := secrets.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(updated.Data["user"]) != "admin" || updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("updated: %+v", updated)
	}
	// The old resourceVersion now conflicts.
	got.Data["user"] = []byte("other")
	if _, err := secrets.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want Conflict, got %v", err)
	}

	// A typed List (a streaming list while WatchListClient is on) and a paginated one.
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "app=compat"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "s1" || list.ResourceVersion == "" {
		t.Fatalf("selected list: %+v", list.Items)
	}
	page, err := secrets.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Continue == "" {
		t.Fatalf("first page: %d items, continue %q", len(page.Items), page.Continue)
	}
	rest, err := secrets.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Items) != 1 || rest.Items[0].Name == page.Items[0].Name {
		t.Fatalf("second page: %+v", rest.Items)
	}

	if err := secrets.Delete(ctx, "s1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Get(ctx, "s1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after delete: want NotFound, got %v", err)
	}

	// A pod comes back with the server's defaults, decoded from protobuf.
	pod, err := clientset.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways ||
		pod.Spec.SchedulerName != "default-scheduler" || pod.Status.Phase != corev1.PodPending {
		t.Fatalf("pod defaults: %+v %+v", pod.Spec, pod.Status)
	}
	// Invalid input is a 422 with its causes.
	_, err = clientset.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("pod without containers: want Invalid, got %v", err)
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		t.Fatalf("invalid pod: no causes in %v", err)
	}
	// Patches of each type through the typed client.
	cms := clientset.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		kind types.PatchType
		body string
	}{
		{types.JSONPatchType, `[{"op":"add","path":"/data/b","value":"2"}]`},
		{types.MergePatchType, `{"data":{"c":"3"}}`},
		{types.StrategicMergePatchType, `{"data":{"d":"4"}}`},
	} {
		if _, err := cms.Patch(ctx, "cm", p.kind, []byte(p.body), metav1.PatchOptions{}); err != nil {
			t.Fatalf("%s: %v", p.kind, err)
		}
	}
	cm, err := cms.Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cm.Data) != "map[a:1 b:2 c:3 d:4]" {
		t.Fatalf("patched data: %v", cm.Data)
	}
}

// The dynamic client: the CRD's Widgets and a built-in kind as unstructured objects, the
// status subresource apart from the main resource.
func TestDynamicClient(t *testing.T) {
	ctx := testContext(t)
	ns := namespace(t)
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	widgets := client.Resource(widgetResource).Namespace(ns)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "compat.kubemock.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "labels": map[string]any{"tier": "gold"}},
		"spec":     map[string]any{"message": "hello", "unknown": "pruned"},
	}}
	created, err := widgets.Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedString(created.Object, "spec", "unknown"); found {
		t.Fatalf("unknown field kept: %v", created.Object)
	}
	if created.GetGeneration() != 1 {
		t.Fatalf("generation %d", created.GetGeneration())
	}
	// Status goes through the subresource only; the main resource ignores it.
	created.Object["status"] = map[string]any{"configMap": "x"}
	if _, err := widgets.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "status", "configMap"); s != "x" || got.GetGeneration() != 1 {
		t.Fatalf("after status update: %v", got.Object)
	}
	patched, err := widgets.Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"message":"bye"},"status":{"configMap":"ignored"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _ := unstructured.NestedString(patched.Object, "spec", "message"); m != "bye" || patched.GetGeneration() != 2 {
		t.Fatalf("patched: %v", patched.Object)
	}
	if s, _, _ := unstructured.NestedString(patched.Object, "status", "configMap"); s != "x" {
		t.Fatalf("a main-resource patch changed status: %v", patched.Object)
	}
	list, err := client.Resource(widgetResource).List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.GetKind() != "WidgetList" {
		t.Fatalf("list across namespaces: %s %d", list.GetKind(), len(list.Items))
	}
	// A built-in kind through the dynamic client.
	cms := client.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	if _, err := cms.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "dyn"}, "data": map[string]any{"k": "v"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.Get(ctx, "w1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}

// The metadata client: PartialObjectMetadata for gets, lists and watches, and a metadata patch.
func TestMetadataClient(t *testing.T) {
	ctx := testContext(t)
	ns := namespace(t)
	for _, name := range []string{"m1", "m2"} {
		if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"m": "yes"}},
			Data:       map[string]string{"big": strings.Repeat("x", 1000)},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := client.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	m, err := cms.Get(ctx, "m1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// (client-go's decoder clears the kind, as for every typed object.)
	if m.Name != "m1" || m.UID == "" || m.Labels["m"] != "yes" || len(m.ManagedFields) != 1 {
		t.Fatalf("metadata: %+v", m)
	}
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "m=yes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Name != "m1" || list.ResourceVersion == "" {
		t.Fatalf("metadata list: %s", toJSON(list))
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	patched, err := cms.Patch(ctx, "m2", types.MergePatchType, []byte(`{"metadata":{"annotations":{"seen":"by-metadata"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if patched.Annotations["seen"] != "by-metadata" {
		t.Fatalf("metadata patch: %+v", patched.ObjectMeta)
	}
	event := nextEvent(t, w)
	got, ok := event.Object.(*metav1.PartialObjectMetadata)
	if event.Type != watch.Modified || !ok || got.Name != "m2" || got.Annotations["seen"] != "by-metadata" {
		t.Fatalf("metadata watch event: %s %#v", event.Type, event.Object)
	}
	// The data was untouched by the metadata patch.
	cm, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, "m2", metav1.GetOptions{})
	if err != nil || len(cm.Data["big"]) != 1000 {
		t.Fatalf("data after a metadata patch: %v %d", err, len(cm.Data["big"]))
	}
}

// Discovery through the memory cache, and the deferred discovery RESTMapper: kinds to
// resources, short names, and a CRD installed after the cache filled found after a Reset.
func TestDiscoveryAndRESTMapper(t *testing.T) {
	ctx := testContext(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	version, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if version.Major != "1" || version.Minor != "32" {
		t.Fatalf("/version: %+v", version)
	}
	cached := memory.NewMemCacheClient(dc)
	groups, resources, err := cached.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	for _, want := range []string{"", "apps", "batch", "coordination.k8s.io", "apiextensions.k8s.io", "compat.kubemock.io"} {
		if !names[want] {
			t.Errorf("group %q missing from discovery", want)
		}
	}
	found := false
	for _, list := range resources {
		if list.GroupVersion == "apps/v1" {
			for _, r := range list.APIResources {
				found = found || (r.Name == "deployments" && r.Namespaced && strings.Contains(strings.Join(r.ShortNames, ","), "deploy"))
			}
		}
	}
	if !found {
		t.Fatal("apps/v1 deployments (short name deploy) not in discovery")
	}
	if !cached.Fresh() {
		t.Fatal("the memory cache is not fresh after a full read")
	}
	preferred, err := cached.ServerPreferredResources()
	if err != nil || len(preferred) == 0 {
		t.Fatalf("preferred resources: %v (%d)", err, len(preferred))
	}

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	mapping, err := mapper.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	if mapping.Resource != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) || mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Fatalf("Deployment mapping: %+v", mapping)
	}
	expander := restmapper.NewShortcutExpander(mapper, cached, nil)
	gvr, err := expander.ResourceFor(schema.GroupVersionResource{Resource: "deploy"})
	if err != nil || gvr.Resource != "deployments" || gvr.Group != "apps" {
		t.Fatalf("short name deploy: %v %v", gvr, err)
	}
	kind, err := mapper.KindFor(schema.GroupVersionResource{Resource: "widgets"})
	if err != nil || kind != widgetGroupVersion.WithKind("Widget") {
		t.Fatalf("widgets: %v %v", kind, err)
	}
	nsMapping, err := mapper.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1")
	if err != nil || nsMapping.Scope.Name() != meta.RESTScopeNameRoot {
		t.Fatalf("Namespace mapping: %+v %v", nsMapping, err)
	}

	// A kind installed after the cache filled: unknown until the mapper is reset.
	crd := widgetCRD()
	crd.Name = "gadgets.compat.kubemock.io"
	crd.Spec.Names.Plural, crd.Spec.Names.Singular, crd.Spec.Names.Kind, crd.Spec.Names.ListKind = "gadgets", "gadget", "Gadget", "GadgetList"
	crd.Spec.Names.ShortNames = []string{"gdg"}
	crd.Spec.Scope = "Cluster"
	ext := apiextensionsClient(t)
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{})
	})
	gadget := schema.GroupKind{Group: "compat.kubemock.io", Kind: "Gadget"}
	eventually(t, "the mapper finds Gadget after a reset", func() (bool, string) {
		m, err := mapper.RESTMapping(gadget)
		if err != nil {
			mapper.Reset()
			return false, err.Error()
		}
		return m.Resource.Resource == "gadgets" && m.Scope.Name() == meta.RESTScopeNameRoot, fmt.Sprintf("%+v", m)
	})
}

// nextEvent is the watch's next event (fails the test at the deadline or when it closes).
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch closed")
		}
		if e.Type == watch.Error {
			t.Fatalf("watch error: %v", apierrors.FromObject(e.Object))
		}
		return e
	case <-testContext(t).Done():
		t.Fatal("no watch event before the deadline")
	}
	return watch.Event{}
}

// toJSON is v as JSON, for failure messages.
func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
