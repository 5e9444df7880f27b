package compat

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The open mode (plain HTTP, no credentials), as `kubemock serve` runs by default: the same
// kubeconfig route, a typed round trip and an informer. The rest of the suite is secure.
func TestOpenMode(t *testing.T) {
	ctx := testContext(t)
	open, err := startServer("--no-controllers")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(open.stop)
	c, err := open.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Host, "http://") {
		t.Fatalf("open mode host %s", c.Host)
	}
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("default"))
	informer := factory.Core().V1().ConfigMaps()
	added := make(chan string, 10)
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { added <- obj.(*corev1.ConfigMap).Name },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "open"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case name := <-added:
			if name == "open" {
				return
			}
		case <-ctx.Done():
			t.Fatal("the informer did not see the ConfigMap")
		}
	}
}
