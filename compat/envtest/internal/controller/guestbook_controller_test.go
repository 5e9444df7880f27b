package controller

import (
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "example.com/guestbook/api/v1"
)

const (
	timeout  = 10 * time.Second
	interval = 20 * time.Millisecond
	// quiet is how long a thing that must not happen is watched for.
	quiet = 500 * time.Millisecond
)

// controllerRuns reports whether the API server runs an in-tree controller, from
// KUBEMOCK_CONTROLLERS as kubemock reads it (`*`, `name`, `-name`; unset: none, as envtest).
func controllerRuns(name, alias string) bool {
	on := false
	for _, item := range strings.Split(os.Getenv("KUBEMOCK_CONTROLLERS"), ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "*":
			on = true
		case item == name || item == alias:
			on = true
		case item == "-"+name || item == "-"+alias:
			return false
		}
	}
	return on
}

// newNamespace creates a namespace of its own for one test.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "guestbook-test-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

var _ = Describe("Guestbook Controller", func() {
	var namespace string

	BeforeEach(func() {
		namespace = newNamespace()
	})

	newGuestbook := func(name, message string) *webappv1.Guestbook {
		guestbook := &webappv1.Guestbook{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec:       webappv1.GuestbookSpec{Message: message},
		}
		Expect(k8sClient.Create(ctx, guestbook)).To(Succeed())
		return guestbook
	}

	configMapOf := func(name string) func(Gomega) *corev1.ConfigMap {
		return func(g Gomega) *corev1.ConfigMap {
			var cm corev1.ConfigMap
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name + "-entries"}, &cm)).To(Succeed())
			return &cm
		}
	}

	Context("When reconciling a resource", func() {
		It("should default the spec from the CRD's schema", func() {
			created := newGuestbook("defaults", "hello")
			Expect(created.Spec.Size).To(Equal(int32(1)), "the server applies the schema's default: 1")
		})

		It("should refuse a spec its CRD's schema refuses", func() {
			guestbook := &webappv1.Guestbook{
				ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: namespace},
				Spec:       webappv1.GuestbookSpec{Message: ""},
			}
			err := k8sClient.Create(ctx, guestbook)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.message"))
		})

		It("should converge: a ConfigMap it controls holds the spec, then Available", func() {
			created := newGuestbook("converges", "hello")

			Eventually(func(g Gomega) {
				cm := configMapOf("converges")(g)
				g.Expect(cm.Data).To(HaveKeyWithValue("message", "hello"))
				g.Expect(cm.Data).To(HaveKeyWithValue("size", "1"))
				owner := metav1.GetControllerOf(cm)
				g.Expect(owner).NotTo(BeNil())
				g.Expect(owner.Kind).To(Equal("Guestbook"))
				g.Expect(owner.UID).To(Equal(created.UID))
			}, timeout, interval).Should(Succeed())

			Eventually(func(g Gomega) {
				var got webappv1.Guestbook
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(created), &got)).To(Succeed())
				g.Expect(got.Status.ConfigMapName).To(Equal("converges-entries"))
				g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
				g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, ConditionAvailable)).To(BeTrue())
			}, timeout, interval).Should(Succeed())
		})

		It("should follow a change of the spec", func() {
			created := newGuestbook("follows", "first")
			Eventually(func(g Gomega) {
				g.Expect(configMapOf("follows")(g).Data).To(HaveKeyWithValue("message", "first"))
			}, timeout, interval).Should(Succeed())

			Eventually(func(g Gomega) {
				var got webappv1.Guestbook
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(created), &got)).To(Succeed())
				got.Spec.Message = "second"
				got.Spec.Size = 3
				g.Expect(k8sClient.Update(ctx, &got)).To(Succeed())
			}, timeout, interval).Should(Succeed())

			Eventually(func(g Gomega) {
				cm := configMapOf("follows")(g)
				g.Expect(cm.Data).To(HaveKeyWithValue("message", "second"))
				g.Expect(cm.Data).To(HaveKeyWithValue("size", "3"))
				var got webappv1.Guestbook
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(created), &got)).To(Succeed())
				g.Expect(got.Generation).To(Equal(int64(2)))
				g.Expect(got.Status.ObservedGeneration).To(Equal(int64(2)))
			}, timeout, interval).Should(Succeed())
		})

		It("should put back a ConfigMap deleted behind its back (Owns)", func() {
			newGuestbook("restores", "kept")
			var first *corev1.ConfigMap
			Eventually(func(g Gomega) { first = configMapOf("restores")(g) }, timeout, interval).Should(Succeed())
			Expect(k8sClient.Delete(ctx, first)).To(Succeed())

			Eventually(func(g Gomega) {
				again := configMapOf("restores")(g)
				g.Expect(again.UID).NotTo(Equal(first.UID))
				g.Expect(again.Data).To(HaveKeyWithValue("message", "kept"))
			}, timeout, interval).Should(Succeed())
		})
	})

	Context("In-tree controllers (KUBEMOCK_CONTROLLERS)", func() {
		It("should collect the owned ConfigMap only when the garbage collector runs", func() {
			created := newGuestbook("collected", "bye")
			Eventually(func(g Gomega) { configMapOf("collected")(g) }, timeout, interval).Should(Succeed())
			Expect(k8sClient.Delete(ctx, created)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(created), &webappv1.Guestbook{}))
			}, timeout, interval).Should(BeTrue())

			key := types.NamespacedName{Namespace: namespace, Name: "collected-entries"}
			if controllerRuns("garbage-collector-controller", "garbagecollector") {
				Eventually(func() bool {
					return apierrors.IsNotFound(k8sClient.Get(ctx, key, &corev1.ConfigMap{}))
				}, timeout, interval).Should(BeTrue(), "the garbage collector deletes the dependent")
			} else {
				// envtest runs no garbage collector: the dependent stays, with its owner gone.
				Consistently(func() error {
					return k8sClient.Get(ctx, key, &corev1.ConfigMap{})
				}, quiet, interval).Should(Succeed())
			}
		})

		It("should finish deleting a namespace only when the namespace controller runs", func() {
			ns := &corev1.Namespace{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Name: namespace}, ns)).To(Succeed())
			newGuestbook("in-deleted-namespace", "gone")
			Expect(k8sClient.Delete(ctx, ns)).To(Succeed())

			if controllerRuns("namespace-controller", "namespace") {
				Eventually(func() bool {
					return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Name: namespace}, &corev1.Namespace{}))
				}, timeout, interval).Should(BeTrue(), "the namespace controller empties and removes it")
			} else {
				// envtest runs no namespace controller: the namespace stays Terminating.
				Consistently(func(g Gomega) {
					var got corev1.Namespace
					g.Expect(k8sClient.Get(ctx, types.NamespacedName{Name: namespace}, &got)).To(Succeed())
					g.Expect(got.Status.Phase).To(Equal(corev1.NamespaceTerminating))
				}, quiet, interval).Should(Succeed())
			}
		})
	})
})
