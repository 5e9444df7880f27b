package compat

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

func apiextensionsClient(t *testing.T) *apiextensions.Clientset {
	t.Helper()
	c, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// handlerLog records an informer's notifications in the order they came.
type handlerLog struct {
	mu     sync.Mutex
	events []string
}

func (l *handlerLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, s)
}

func (l *handlerLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// A SharedInformerFactory (streaming its initial list while WatchListClient is on): add,
// update and delete in order, the lister reading the cache, and resyncs re-delivering the
// unchanged object as an update of the same resourceVersion.
func TestSharedInformerFactoryWithResync(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ns := namespace(t)
	cms := clientset.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// client-go's smallest resync period (shared_informer.go's minimumResyncPeriod).
	const resync = time.Second
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, resync, informers.WithNamespace(ns))
	informer := factory.Core().V1().ConfigMaps()
	var log handlerLog
	resyncs := make(chan string, 100)
	if _, err := informer.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { log.add("add " + obj.(*corev1.ConfigMap).Name) },
		UpdateFunc: func(old, cur any) {
			o, c := old.(*corev1.ConfigMap), cur.(*corev1.ConfigMap)
			if o.ResourceVersion == c.ResourceVersion {
				select {
				case resyncs <- c.Name:
				default:
				}
				return
			}
			log.add(fmt.Sprintf("update %s %s", c.Name, c.Data["v"]))
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			log.add("delete " + obj.(*corev1.ConfigMap).Name)
		},
	}, resync); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	if _, err := informer.Lister().ConfigMaps(ns).Get("before"); err != nil {
		t.Fatalf("lister after sync: %v", err)
	}

	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 3; i++ {
		if _, err := cms.Patch(ctx, "live", "application/merge-patch+json", []byte(fmt.Sprintf(`{"data":{"v":"%d"}}`, i)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.Delete(ctx, "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add before", "add live", "update live 2", "update live 3", "delete live"}
	eventually(t, "the handler sees every change in order", func() (bool, string) {
		got := log.snapshot()
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
	if _, err := informer.Lister().ConfigMaps(ns).Get("live"); !apierrors.IsNotFound(err) {
		t.Fatalf("lister after delete: %v", err)
	}
	// Two resyncs of the object still there.
	for i := 0; i < 2; i++ {
		select {
		case name := <-resyncs:
			if name != "before" {
				t.Fatalf("resync of %s", name)
			}
		case <-ctx.Done():
			t.Fatal("no resync")
		}
	}
}

// The typed rate-limited work queue fed by an informer: keys deduplicated while waiting, a
// failing key retried with per-item backoff until it succeeds, then forgotten; the worker's
// writes reach the server.
func TestWorkqueueController(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ns := namespace(t)
	cms := clientset.CoreV1().ConfigMaps(ns)
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "compat"},
	)
	defer queue.ShutDown()

	// Deduplication: a key added twice before a worker takes it is one item.
	queue.Add("x")
	queue.Add("x")
	if queue.Len() != 1 {
		t.Fatalf("queue length %d after adding one key twice", queue.Len())
	}
	key, _ := queue.Get()
	queue.Forget(key)
	queue.Done(key)

	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().ConfigMaps()
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue(queue, obj) },
		UpdateFunc: func(_, obj any) { enqueue(queue, obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	// The worker stamps `handled` on each ConfigMap; "flaky" fails its first two attempts.
	attempts := map[string]int{}
	requeues := make(chan int, 10)
	go func() {
		for {
			key, quit := queue.Get()
			if quit {
				return
			}
			err := func() error {
				namespace, name, err := cache.SplitMetaNamespaceKey(key)
				if err != nil {
					return err
				}
				attempts[name]++
				if name == "flaky" && attempts[name] <= 2 {
					return errors.New("not yet")
				}
				cm, err := informer.Lister().ConfigMaps(namespace).Get(name)
				if err != nil || cm.Annotations["handled"] != "" {
					return nil
				}
				cm = cm.DeepCopy()
				if cm.Annotations == nil {
					cm.Annotations = map[string]string{}
				}
				cm.Annotations["handled"] = fmt.Sprint(attempts[name])
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
				return err
			}()
			if err != nil {
				queue.AddRateLimited(key)
				requeues <- queue.NumRequeues(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()
	for _, name := range []string{"steady", "flaky"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both ConfigMaps handled", func() (bool, string) {
		got := map[string]string{}
		for _, name := range []string{"steady", "flaky"} {
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got[name] = cm.Annotations["handled"]
		}
		return got["steady"] == "1" && got["flaky"] == "3", fmt.Sprint(got)
	})
	if first, second := <-requeues, <-requeues; first != 1 || second != 2 {
		t.Fatalf("requeues %d, %d", first, second)
	}
	flakyKey := ns + "/flaky"
	eventually(t, "the flaky key forgotten", func() (bool, string) {
		return queue.NumRequeues(flakyKey) == 0, fmt.Sprint(queue.NumRequeues(flakyKey))
	})
}

func enqueue(queue workqueue.TypedRateLimitingInterface[string], obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		queue.Add(key)
	}
}

// observedLock is a Lease lock that signals each successful write (acquire, renew, release),
// so that the test can stop a leader right after a renewal rather than in the middle of one
// (a renewal cancelled in flight may still be applied by the server, and then the release,
// written from the record before it, conflicts: client-go's behaviour with any server).
type observedLock struct {
	resourcelock.Interface
	written chan struct{}
}

func (l *observedLock) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, record)
	if err == nil {
		select {
		case l.written <- struct{}{}:
		default:
		}
	}
	return err
}

// Leader election on a Lease: two candidates, one leads while the other sees it lead, the
// leader steps down releasing the Lease, and the other takes over at once (the lease lasts a
// minute, longer than the test waits: only the release lets it in); the Lease records the
// holder and the transition, and is left released.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ns := namespace(t)
	const leaseName = "compat-leader"
	type candidate struct {
		elector *leaderelection.LeaderElector
		lock    *observedLock
		cancel  context.CancelFunc
		leading chan struct{}
		stopped chan struct{}
		done    chan struct{}
	}
	start := func(id string) *candidate {
		c := &candidate{leading: make(chan struct{}), stopped: make(chan struct{}), done: make(chan struct{})}
		runCtx, cancel := context.WithCancel(ctx)
		c.cancel = cancel
		c.lock = &observedLock{
			Interface: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: leaseName},
				Client:     clientset.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: id},
			},
			written: make(chan struct{}, 1),
		}
		var err error
		c.elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            c.lock,
			LeaseDuration:   time.Minute,
			RenewDeadline:   10 * time.Second,
			RetryPeriod:     200 * time.Millisecond,
			ReleaseOnCancel: true,
			Name:            id,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { close(c.leading) },
				OnStoppedLeading: func() { close(c.stopped) },
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		go func() { c.elector.Run(runCtx); close(c.done) }()
		return c
	}
	lease := func() *coordinationv1.Lease {
		l, err := clientset.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	waitFor := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(wait):
			t.Fatalf("%s: not within %s", what, wait)
		}
	}
	// stepDown cancels c right after one of its renewals went through, and waits for its
	// release.
	stepDown := func(c *candidate, who string) {
		t.Helper()
		select {
		case <-c.lock.written:
		default:
		}
		waitFor(c.lock.written, who+" renews")
		c.cancel()
		waitFor(c.stopped, who+" stops leading")
		waitFor(c.done, who+"'s elector returns")
	}

	a := start("candidate-a")
	waitFor(a.leading, "a leads")
	b := start("candidate-b")
	defer b.cancel()
	eventually(t, "b sees a lead", func() (bool, string) {
		return b.elector.GetLeader() == "candidate-a", b.elector.GetLeader()
	})
	if b.elector.IsLeader() {
		t.Fatal("b leads while a holds the lease")
	}
	if got := lease(); *got.Spec.HolderIdentity != "candidate-a" || *got.Spec.LeaseDurationSeconds != 60 {
		t.Fatalf("lease held by a: %s", toJSON(got.Spec))
	}

	stepDown(a, "a")
	waitFor(b.leading, "b takes over")
	got := lease()
	if *got.Spec.HolderIdentity != "candidate-b" || got.Spec.LeaseTransitions == nil || *got.Spec.LeaseTransitions != 1 {
		t.Fatalf("lease after the hand-over: %s", toJSON(got.Spec))
	}
	stepDown(b, "b")
	// Released as client-go releases (leaderelection.go): no holder, a one-second duration.
	if got := lease(); (got.Spec.HolderIdentity != nil && *got.Spec.HolderIdentity != "") || *got.Spec.LeaseDurationSeconds != 1 {
		t.Fatalf("lease after release: %s", toJSON(got.Spec))
	}
}

// The event broadcaster: events recorded for an object reach the server through the sink,
// repeats are aggregated into one Event with a count, and they read back by field selector.
func TestEventBroadcaster(t *testing.T) {
	ctx := testContext(t)
	ns := namespace(t)
	cm, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	// A clientset of its own: the sink writes through client-go's hand-written Event
	// expansion methods (CreateWithEventNamespace, PatchWithEventNamespace), which in 1.32
	// send JSON, not protobuf, and would fail the suite's protobuf check of `clientset`.
	sinkClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: sinkClient.CoreV1().Events(ns)})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "compat-controller"})

	recorder.Event(cm, corev1.EventTypeNormal, "Created", "made it")
	for i := 0; i < 3; i++ {
		recorder.Event(cm, corev1.EventTypeWarning, "Retrying", "still trying")
	}
	selector := fields.Set{"involvedObject.name": "target", "involvedObject.kind": "ConfigMap"}.AsSelector().String()
	eventually(t, "events recorded and aggregated", func() (bool, string) {
		list, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]int32{}
		for _, e := range list.Items {
			if e.InvolvedObject.UID != cm.UID || e.Source.Component != "compat-controller" {
				return false, toJSON(e)
			}
			got[e.Type+"/"+e.Reason+"/"+e.Message] = e.Count
		}
		return len(got) == 2 && got["Normal/Created/made it"] == 1 && got["Warning/Retrying/still trying"] == 3, fmt.Sprint(got)
	})
	// Another object's events are not selected.
	other, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=nobody"})
	if err != nil || len(other.Items) != 0 {
		t.Fatalf("events of nobody: %v %d", err, len(other.Items))
	}
	// The events.k8s.io view of the same Events.
	list, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("events.k8s.io/v1: %d events", len(list.Items))
	}
}
