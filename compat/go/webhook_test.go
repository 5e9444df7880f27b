package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The webhook test: controller-runtime's webhook server, with a defaulter, a validator and
// the conversion webhook of a two-version CRD, registered with kubemock the way an envtest
// suite registers them (envtest.WebhookInstallOptions makes a serving certificate, points
// the configurations' `service` at the local server with the certificate as caBundle, and
// installs them; controller-runtime's pkg/envtest/webhook.go), against the suite's running
// server (UseExistingCluster, envtest's USE_EXISTING_CLUSTER mode). Each webhook is seen
// being called: what it does shows in what the client gets back or what is stored, and the
// webhooks count their calls.

const (
	// gadgetMutatingName and gadgetValidatingName are the webhooks' names, as controller-gen
	// names them (`m` or `v`, kind, version).
	gadgetMutatingName   = "mgadget-v1.hooks.compat.kubemock.io"
	gadgetValidatingName = "vgadget-v1.hooks.compat.kubemock.io"
	// gadgetDefaultColor is what the defaulter sets an empty color to.
	gadgetDefaultColor = "blue"
	// gadgetDefaultedLabel is the label the defaulter adds.
	gadgetDefaultedLabel = "hooks.compat.kubemock.io/defaulted"
	// gadgetProtected is the annotation that makes the validator refuse a deletion.
	gadgetProtected = "hooks.compat.kubemock.io/protected"
	// gadgetWarnSize is the size above which the validator warns.
	gadgetWarnSize = 10
	// gadgetSizeWarning is that warning.
	gadgetSizeWarning = "spec.size above 10 is deprecated"
)

// gadgetDefaulter is the mutating webhook (controller-runtime's admission.CustomDefaulter).
type gadgetDefaulter struct {
	// calls and dryRuns count the calls, and those of dry runs.
	calls, dryRuns atomic.Int64
}

// Default sets an empty color and labels the gadget.
func (d *gadgetDefaulter) Default(ctx context.Context, obj runtime.Object) error {
	gadget, ok := obj.(*Gadget)
	if !ok {
		return fmt.Errorf("expected a v1 Gadget, got %T", obj)
	}
	d.calls.Add(1)
	if req, err := admission.RequestFromContext(ctx); err == nil && ptr.Deref(req.DryRun, false) {
		d.dryRuns.Add(1)
	}
	if gadget.Spec.Color == "" {
		gadget.Spec.Color = gadgetDefaultColor
	}
	if gadget.Labels == nil {
		gadget.Labels = map[string]string{}
	}
	gadget.Labels[gadgetDefaultedLabel] = "true"
	return nil
}

// gadgetValidator is the validating webhook (controller-runtime's admission.CustomValidator).
type gadgetValidator struct {
	// calls counts the calls by operation.
	mu    sync.Mutex
	calls map[string]int
}

func (v *gadgetValidator) count(op string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.calls == nil {
		v.calls = map[string]int{}
	}
	v.calls[op]++
}

// called is how often the validator was called for op.
func (v *gadgetValidator) called(op string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls[op]
}

// warnings are the validator's warnings for a gadget.
func (v *gadgetValidator) warnings(gadget *Gadget) admission.Warnings {
	if gadget.Spec.Size > gadgetWarnSize {
		return admission.Warnings{gadgetSizeWarning}
	}
	return nil
}

// ValidateCreate refuses red gadgets with a plain error (controller-runtime answers it as
// admission.Denied: 403).
func (v *gadgetValidator) ValidateCreate(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	gadget, ok := obj.(*Gadget)
	if !ok {
		return nil, fmt.Errorf("expected a v1 Gadget, got %T", obj)
	}
	v.count("CREATE")
	if gadget.Spec.Color == "red" {
		return nil, errors.New("spec.color: red gadgets are not allowed")
	}
	return v.warnings(gadget), nil
}

// ValidateUpdate refuses a change of the owner with an Invalid status (controller-runtime
// passes an APIStatus error on as the review's status: 422 with its causes).
func (v *gadgetValidator) ValidateUpdate(_ context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	old, ok := oldObj.(*Gadget)
	gadget, ok2 := newObj.(*Gadget)
	if !ok || !ok2 {
		return nil, fmt.Errorf("expected v1 Gadgets, got %T and %T", oldObj, newObj)
	}
	v.count("UPDATE")
	if old.Spec.Owner != "" && gadget.Spec.Owner != old.Spec.Owner {
		return v.warnings(gadget), apierrors.NewInvalid(gadgetV1.WithKind("Gadget").GroupKind(), gadget.Name, field.ErrorList{
			field.Forbidden(field.NewPath("spec", "owner"), "the owner cannot change"),
		})
	}
	return v.warnings(gadget), nil
}

// ValidateDelete refuses to delete a protected gadget.
func (v *gadgetValidator) ValidateDelete(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	gadget, ok := obj.(*Gadget)
	if !ok {
		return nil, fmt.Errorf("expected a v1 Gadget, got %T", obj)
	}
	v.count("DELETE")
	if gadget.Annotations[gadgetProtected] == "true" {
		return nil, fmt.Errorf("gadget %s is protected", gadget.Name)
	}
	return nil, nil
}

// gadgetWebhookConfigurations are the configurations as controller-gen writes them from
// `+kubebuilder:webhook` markers into config/webhook/manifests.yaml: a `service` reference
// (webhook-service in system) with the handler's path, which envtest rewrites to its local
// server's URL.
func gadgetWebhookConfigurations() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	service := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Name: "webhook-service", Namespace: "system", Path: ptr.To(path),
		}}
	}
	rules := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{gadgetV1.Group}, APIVersions: []string{"v1"}, Resources: []string{"gadgets"},
			},
		}}
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "compat-mutating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    gadgetMutatingName,
			ClientConfig:            service("/mutate-hooks-compat-kubemock-io-v1-gadget"),
			Rules:                   rules(admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "compat-validating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    gadgetValidatingName,
			ClientConfig:            service("/validate-hooks-compat-kubemock-io-v1-gadget"),
			Rules:                   rules(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	return mutating, validating
}

// warningRecorder is a rest.WarningHandler keeping what it is told.
type warningRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (w *warningRecorder) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// take returns the warnings seen since the last take.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.seen
	w.seen = nil
	return seen
}

// startGadgetWebhooks installs the Gadget CRD and the webhook configurations through envtest
// and runs a manager whose webhook server serves the three webhooks; everything is undone at
// the end of the test.
func startGadgetWebhooks(t *testing.T) (*gadgetDefaulter, *gadgetValidator) {
	t.Helper()
	setLogger()
	mutating, validating := gadgetWebhookConfigurations()
	env := &envtest.Environment{
		UseExistingCluster: ptr.To(true),
		Config:             cfg,
		Scheme:             gadgetScheme,
		CRDs:               []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()},
		CRDInstallOptions:  envtest.CRDInstallOptions{CleanUpAfterUse: true},
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
		},
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("envtest Stop: %v", err)
		}
	})
	// What envtest did: the configurations point at its local server, the CRD converts
	// through it.
	hooks := env.WebhookInstallOptions
	want := fmt.Sprintf("https://%s:%d/", hooks.LocalServingHost, hooks.LocalServingPort)
	if url := ptr.Deref(mutating.Webhooks[0].ClientConfig.URL, ""); !strings.HasPrefix(url, want) {
		t.Fatalf("envtest pointed the mutating webhook at %q, want %s...", url, want)
	}
	crd := env.CRDs[0]
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter ||
		!strings.HasPrefix(ptr.Deref(crd.Spec.Conversion.Webhook.ClientConfig.URL, ""), want) {
		t.Fatalf("envtest did not give the CRD a webhook conversion: %+v", crd.Spec.Conversion)
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  gadgetScheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: hooks.LocalServingHost, Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	defaulter, validator := &gadgetDefaulter{}, &gadgetValidator{}
	// The builder registers /mutate-..., /validate-... and, the kind being convertible in the
	// scheme, /convert (controller-runtime's pkg/builder/webhook.go).
	if err := ctrl.NewWebhookManagedBy(mgr).For(&Gadget{}).
		WithDefaulter(defaulter).WithValidator(validator).Complete(); err != nil {
		t.Fatalf("webhook builder: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		// The configurations go first, so that nothing is sent to a server that has stopped
		// (envtest's Stop removes the CRD, not them).
		c, err := client.New(cfg, client.Options{})
		if err == nil {
			_ = c.Delete(context.Background(), mutating)
			_ = c.Delete(context.Background(), validating)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	started := mgr.GetWebhookServer().StartedChecker()
	eventually(t, "the webhook server listens", func() (bool, string) {
		if err := started(nil); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return defaulter, validator
}

func TestWebhookServer(t *testing.T) {
	defaulter, validator := startGadgetWebhooks(t)
	ctx := testContext(t)
	ns := namespace(t)
	warnings := &warningRecorder{}
	withWarnings := rest.CopyConfig(cfg)
	withWarnings.WarningHandler = warnings
	c, err := client.New(withWarnings, client.Options{Scheme: gadgetScheme})
	if err != nil {
		t.Fatal(err)
	}
	stored := func(t *testing.T, name string) *Gadget {
		t.Helper()
		var got Gadget
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		return &got
	}

	t.Run("defaulter", func(t *testing.T) {
		before := defaulter.calls.Load()
		gadget := &Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}, Spec: GadgetSpec{Size: 1}}
		if err := c.Create(ctx, gadget); err != nil {
			t.Fatal(err)
		}
		if gadget.Spec.Color != gadgetDefaultColor || gadget.Labels[gadgetDefaultedLabel] != "true" {
			t.Fatalf("the answer is not defaulted: %+v %v", gadget.Spec, gadget.Labels)
		}
		got := stored(t, "plain")
		if got.Spec.Color != gadgetDefaultColor || got.Labels[gadgetDefaultedLabel] != "true" {
			t.Fatalf("the stored object is not defaulted: %+v %v", got.Spec, got.Labels)
		}
		if defaulter.calls.Load() == before {
			t.Fatal("the defaulter was not called")
		}
		// An update is defaulted too: a color removed comes back.
		got.Spec.Color = ""
		if err := c.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		if again := stored(t, "plain"); again.Spec.Color != gadgetDefaultColor {
			t.Fatalf("the update was not defaulted: %+v", again.Spec)
		}
	})

	t.Run("validator denies a create with upstream's message", func(t *testing.T) {
		before := validator.called("CREATE")
		gadget := &Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "red"}, Spec: GadgetSpec{Color: "red"}}
		err := c.Create(ctx, gadget)
		want := `admission webhook "` + gadgetValidatingName + `" denied the request: spec.color: red gadgets are not allowed`
		if err == nil || err.Error() != want {
			t.Fatalf("want %q, got %v", want, err)
		}
		if !apierrors.IsForbidden(err) {
			t.Fatalf("want 403 Forbidden (admission.Denied), got %#v", err)
		}
		if validator.called("CREATE") == before {
			t.Fatal("the validator was not called")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gadget), &Gadget{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a denied object was stored: %v", err)
		}
	})

	t.Run("validator warns", func(t *testing.T) {
		warnings.take()
		gadget := &Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}, Spec: GadgetSpec{Size: 11}}
		if err := c.Create(ctx, gadget); err != nil {
			t.Fatal(err)
		}
		if seen := warnings.take(); !slices.Equal(seen, []string{gadgetSizeWarning}) {
			t.Fatalf("want the warning %q, got %q", gadgetSizeWarning, seen)
		}
		// Allowed without a warning: none.
		gadget.Spec.Size = 3
		if err := c.Update(ctx, gadget); err != nil {
			t.Fatal(err)
		}
		if seen := warnings.take(); len(seen) != 0 {
			t.Fatalf("want no warning, got %q", seen)
		}
	})

	t.Run("validator denies an update with its causes", func(t *testing.T) {
		gadget := &Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned"}, Spec: GadgetSpec{Owner: "ada"}}
		if err := c.Create(ctx, gadget); err != nil {
			t.Fatal(err)
		}
		before := validator.called("UPDATE")
		gadget.Spec.Owner = "grace"
		gadget.Spec.Size = 12
		warnings.take()
		err := c.Update(ctx, gadget)
		want := `admission webhook "` + gadgetValidatingName + `" denied the request: Gadget.hooks.compat.kubemock.io "owned" is invalid: spec.owner: Forbidden: the owner cannot change`
		if err == nil || err.Error() != want {
			t.Fatalf("want %q, got %v", want, err)
		}
		status, ok := err.(apierrors.APIStatus)
		if !ok || !apierrors.IsInvalid(err) || status.Status().Details == nil ||
			len(status.Status().Details.Causes) != 1 || status.Status().Details.Causes[0].Field != "spec.owner" {
			t.Fatalf("want a 422 with the cause spec.owner, got %#v", err)
		}
		// The warnings of a denial reach the client too (upstream sends them either way).
		if seen := warnings.take(); !slices.Equal(seen, []string{gadgetSizeWarning}) {
			t.Fatalf("want the warning %q with the denial, got %q", gadgetSizeWarning, seen)
		}
		if validator.called("UPDATE") == before {
			t.Fatal("the validator was not called")
		}
		if got := stored(t, "owned"); got.Spec.Owner != "ada" {
			t.Fatalf("a denied update was stored: %+v", got.Spec)
		}
		// A merge patch is an update to the webhooks: same answer.
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"owner":"grace"}}`))
		if err := c.Patch(ctx, stored(t, "owned"), patch); !apierrors.IsInvalid(err) {
			t.Fatalf("want the patch refused, got %v", err)
		}
	})

	t.Run("validator denies a delete", func(t *testing.T) {
		gadget := &Gadget{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "kept", Annotations: map[string]string{gadgetProtected: "true"},
		}}
		if err := c.Create(ctx, gadget); err != nil {
			t.Fatal(err)
		}
		before := validator.called("DELETE")
		err := c.Delete(ctx, gadget)
		want := `admission webhook "` + gadgetValidatingName + `" denied the request: gadget kept is protected`
		if err == nil || err.Error() != want {
			t.Fatalf("want %q, got %v", want, err)
		}
		if validator.called("DELETE") == before {
			t.Fatal("the validator was not called")
		}
		stored(t, "kept")
		// Unprotected, it goes.
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":null}}`))
		if err := c.Patch(ctx, gadget, patch); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, gadget); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gadget), &Gadget{}); !apierrors.IsNotFound(err) {
			t.Fatalf("want it gone, got %v", err)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		dryRuns := defaulter.dryRuns.Load()
		gadget := &Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dry"}}
		if err := c.Create(ctx, gadget, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		if gadget.Spec.Color != gadgetDefaultColor {
			t.Fatalf("the dry run's answer is not defaulted: %+v", gadget.Spec)
		}
		if defaulter.dryRuns.Load() == dryRuns {
			t.Fatal("the defaulter was not told the request was a dry run")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gadget), &Gadget{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a dry run stored its object: %v", err)
		}
		// A dry run is denied as a real one would be.
		red := &Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dry-red"}, Spec: GadgetSpec{Color: "red"}}
		if err := c.Create(ctx, red, client.DryRunAll); !apierrors.IsForbidden(err) ||
			!strings.Contains(err.Error(), `admission webhook "`+gadgetValidatingName+`" denied the request`) {
			t.Fatalf("want the dry run denied, got %v", err)
		}
	})

	t.Run("conversion webhook", func(t *testing.T) {
		before, defaulted := conversions.Load(), defaulter.calls.Load()
		// Written in v2: the webhooks (v1, matchPolicy Equivalent by default) get it
		// converted to v1, their changes are converted back, it is stored as v1.
		v2 := &GadgetV2{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two"}, Spec: GadgetV2Spec{Size: 2, Owner: GadgetOwner{Name: "ada"}}}
		if err := c.Create(ctx, v2); err != nil {
			t.Fatal(err)
		}
		// (The typed client drops apiVersion and kind when it decodes; v2's shape shows.)
		if v2.Spec.Paint != gadgetDefaultColor || v2.Spec.Owner.Name != "ada" {
			t.Fatalf("want the v2 answer defaulted through v1, got %+v", v2.Spec)
		}
		if defaulter.calls.Load() == defaulted {
			t.Fatal("the v1 defaulter was not called for a v2 create")
		}
		// Read in v1: v1's shape.
		if got := stored(t, "two"); got.Spec != (GadgetSpec{Color: gadgetDefaultColor, Size: 2, Owner: "ada"}) {
			t.Fatalf("v1 reads %+v", got.Spec)
		}
		// v1 objects read in v2, one by one and in a list.
		var one GadgetV2
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, &one); err != nil {
			t.Fatal(err)
		}
		if one.Spec.Paint != gadgetDefaultColor || one.Spec.Size != 1 {
			t.Fatalf("v2 reads %+v", one.Spec)
		}
		var list GadgetV2List
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		owners := map[string]string{}
		for _, item := range list.Items {
			owners[item.Name] = item.Spec.Owner.Name
		}
		if owners["owned"] != "ada" || owners["two"] != "ada" || len(owners) != 4 {
			t.Fatalf("the v2 list: %v", owners)
		}
		// A v2 update the validator refuses (seen in v1) is refused.
		v2.Spec.Owner.Name = "grace"
		if err := c.Update(ctx, v2); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.owner") {
			t.Fatalf("want the v2 update refused by the v1 validator, got %v", err)
		}
		if conversions.Load() == before {
			t.Fatal("the conversion webhook was not called")
		}
	})
}
