package v1

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "example.com/guestbook/api/v1"
)

// The specs of kubebuilder's webhook test scaffold (webhook_test_template.go: the defaulter and
// validator called as Go functions), and the same behaviour through the API server: each
// write below reaches the webhook server only if the server calls the webhooks that envtest
// registered.

const (
	timeout  = 10 * time.Second
	interval = 20 * time.Millisecond
)

var _ = Describe("Guestbook Webhook", func() {
	var (
		obj       *webappv1.Guestbook
		oldObj    *webappv1.Guestbook
		validator GuestbookCustomValidator
		defaulter GuestbookCustomDefaulter
		namespace string
	)

	BeforeEach(func() {
		obj = &webappv1.Guestbook{}
		oldObj = &webappv1.Guestbook{}
		validator = GuestbookCustomValidator{}
		Expect(validator).NotTo(BeNil(), "Expected validator to be initialized")
		defaulter = GuestbookCustomDefaulter{}
		Expect(defaulter).NotTo(BeNil(), "Expected defaulter to be initialized")
		Expect(oldObj).NotTo(BeNil(), "Expected oldObj to be initialized")
		Expect(obj).NotTo(BeNil(), "Expected obj to be initialized")

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "guestbook-webhook-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
	})

	newGuestbook := func(name, message, tier string) *webappv1.Guestbook {
		return &webappv1.Guestbook{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec:       webappv1.GuestbookSpec{Message: message, Tier: tier},
		}
	}

	stored := func(name string) *webappv1.Guestbook {
		var got webappv1.Guestbook
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &got)).To(Succeed())
		return &got
	}

	Context("When creating Guestbook under Defaulting Webhook", func() {
		It("Should apply defaults when a required field is empty", func() {
			By("calling the Default method to apply defaults")
			Expect(defaulter.Default(ctx, obj)).To(Succeed())
			By("checking that the default values are set")
			Expect(obj.Spec.Tier).To(Equal(DefaultTier))
		})

		It("Should have the server apply the defaulting webhook on create", func() {
			created := newGuestbook("defaulted", "hello", "")
			Expect(k8sClient.Create(ctx, created)).To(Succeed())
			Expect(created.Spec.Tier).To(Equal(DefaultTier), "the answer carries the webhook's default")
			Expect(created.Spec.Size).To(Equal(int32(1)), "and the schema's default")
			Expect(stored("defaulted").Spec.Tier).To(Equal(DefaultTier), "and so does the stored object")
		})

		It("Should keep a tier given, and default it again on update", func() {
			created := newGuestbook("backend", "hello", "backend")
			Expect(k8sClient.Create(ctx, created)).To(Succeed())
			Expect(stored("backend").Spec.Tier).To(Equal("backend"))

			// A merge patch that drops the tier is defaulted back: frontend, which the
			// validator then refuses as a change of tier.
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"tier":null}}`))
			err := k8sClient.Patch(ctx, stored("backend"), patch)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(`spec.tier: Forbidden: the tier cannot change once set`))
		})
	})

	Context("When creating or updating Guestbook under Validating Webhook", func() {
		It("Should deny creation if the message is spam", func() {
			By("simulating an invalid creation scenario")
			obj.Spec.Message = "buy spam"
			Expect(validator.ValidateCreate(ctx, obj)).Error().To(HaveOccurred())
		})

		It("Should admit creation if all required fields are present", func() {
			obj.Spec.Message = "hello"
			Expect(validator.ValidateCreate(ctx, obj)).To(BeNil())
		})

		It("Should have the server deny a spam creation with the webhook's words", func() {
			err := k8sClient.Create(ctx, newGuestbook("spammy", "buy spam", ""))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(Equal(`admission webhook "vguestbook-v1.kb.io" denied the request: ` +
				`Guestbook.webapp.example.com "spammy" is invalid: spec.message: Invalid value: "buy spam": must not contain "spam"`))
			status, ok := err.(apierrors.APIStatus)
			Expect(ok).To(BeTrue(), "got %T", err)
			Expect(status.Status().Details).NotTo(BeNil())
			Expect(status.Status().Details.Causes).To(ConsistOf(HaveField("Field", "spec.message")))

			err = k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "spammy"}, &webappv1.Guestbook{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a denied Guestbook was stored: %v", err)
		})

		It("Should validate updates correctly", func() {
			By("simulating a valid update scenario")
			oldObj.Spec.Tier = "frontend"
			obj.Spec.Tier = "frontend"
			obj.Spec.Message = "updated_value"
			Expect(validator.ValidateUpdate(ctx, oldObj, obj)).To(BeNil())

			By("updating through the server")
			Expect(k8sClient.Create(ctx, newGuestbook("updated", "first", ""))).To(Succeed())
			Eventually(func(g Gomega) {
				got := stored("updated")
				got.Spec.Message = "second"
				got.Spec.Size = 2
				g.Expect(k8sClient.Update(ctx, got)).To(Succeed())
			}, timeout, interval).Should(Succeed())
			Expect(stored("updated").Spec).To(Equal(webappv1.GuestbookSpec{Message: "second", Size: 2, Tier: DefaultTier}))

			By("changing the tier: denied")
			got := stored("updated")
			got.Spec.Tier = "backend"
			err := k8sClient.Update(ctx, got)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(Equal(`admission webhook "vguestbook-v1.kb.io" denied the request: ` +
				`Guestbook.webapp.example.com "updated" is invalid: spec.tier: Forbidden: the tier cannot change once set`))

			By("spam in an update: denied")
			got = stored("updated")
			got.Spec.Message = "more SPAM"
			err = k8sClient.Update(ctx, got)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(`spec.message: Invalid value: "more SPAM": must not contain "spam"`))

			Expect(stored("updated").Spec).To(Equal(webappv1.GuestbookSpec{Message: "second", Size: 2, Tier: DefaultTier}))
		})
	})
})
