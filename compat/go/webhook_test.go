package compat

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestWebhookServerPendingAdmissionWebhooks holds the place of issue 18's controller-runtime
// webhook server test (a validating and a defaulting webhook registered through envtest's
// WebhookInstallOptions, each seen being called). kubemock does not call admission webhooks
// yet (another issue), and refuses a webhook configuration rather than store it and ignore
// it; this test pins that refusal, so it fails, and must be replaced by the real webhook
// test, on the day webhooks are enforced.
func TestWebhookServerPendingAdmissionWebhooks(t *testing.T) {
	ctx := testContext(t)
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "compat-validating"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.compat.kubemock.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/validate")},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	_, err := clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{})
	if err == nil {
		_ = clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, config.Name, metav1.DeleteOptions{})
		t.Fatal("kubemock stored a webhook configuration: webhooks are enforced now, replace this test by the webhook server test (issue 18)")
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want the 422 that refuses unenforced webhooks, got %v", err)
	}
}
