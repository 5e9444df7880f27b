// Package v1 holds the Guestbook's admission webhooks, as `kubebuilder create webhook --group
// webapp --version v1 --kind Guestbook --defaulting --programmatic-validation` scaffolds them
// (kubebuilder's pkg/plugins/golang/v4/scaffolds/internal/templates/webhooks/webhook.go, the
// go/v4 layout under internal/webhook/), filled in: the defaulter sets the tier, the
// validator refuses spam and a change of tier. config/webhook/manifests.yaml is what
// controller-gen writes from the +kubebuilder:webhook markers below.
package v1

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "example.com/guestbook/api/v1"
)

// DefaultTier is the tier the defaulter gives a guestbook without one.
const DefaultTier = "frontend"

// BannedWord is what a guestbook's message may not contain.
const BannedWord = "spam"

// nolint:unused
// log is for logging in this package.
var guestbooklog = logf.Log.WithName("guestbook-resource")

// SetupGuestbookWebhookWithManager registers the webhook for Guestbook in the manager.
func SetupGuestbookWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr).For(&webappv1.Guestbook{}).
		WithValidator(&GuestbookCustomValidator{}).
		WithDefaulter(&GuestbookCustomDefaulter{}).
		Complete()
}

// +kubebuilder:webhook:path=/mutate-webapp-example-com-v1-guestbook,mutating=true,failurePolicy=fail,sideEffects=None,groups=webapp.example.com,resources=guestbooks,verbs=create;update,versions=v1,name=mguestbook-v1.kb.io,admissionReviewVersions=v1

// GuestbookCustomDefaulter struct is responsible for setting default values on the custom resource of the
// Kind Guestbook when those are created or updated.
//
// NOTE: The +kubebuilder:object:generate=false marker prevents controller-gen from generating DeepCopy methods,
// as it is used only for temporary operations and does not need to be deeply copied.
type GuestbookCustomDefaulter struct{}

var _ webhook.CustomDefaulter = &GuestbookCustomDefaulter{}

// Default implements webhook.CustomDefaulter so a webhook will be registered for the Kind Guestbook.
func (d *GuestbookCustomDefaulter) Default(ctx context.Context, obj runtime.Object) error {
	guestbook, ok := obj.(*webappv1.Guestbook)

	if !ok {
		return fmt.Errorf("expected an Guestbook object but got %T", obj)
	}
	guestbooklog.Info("Defaulting for Guestbook", "name", guestbook.GetName())

	if guestbook.Spec.Tier == "" {
		guestbook.Spec.Tier = DefaultTier
	}
	return nil
}

// NOTE: The 'path' attribute must follow a specific pattern and should not be modified directly here.
// Modifying the path for an invalid path can cause API server errors; failing to locate the webhook.
// +kubebuilder:webhook:path=/validate-webapp-example-com-v1-guestbook,mutating=false,failurePolicy=fail,sideEffects=None,groups=webapp.example.com,resources=guestbooks,verbs=create;update,versions=v1,name=vguestbook-v1.kb.io,admissionReviewVersions=v1

// GuestbookCustomValidator struct is responsible for validating the Guestbook resource
// when it is created, updated, or deleted.
//
// NOTE: The +kubebuilder:object:generate=false marker prevents controller-gen from generating DeepCopy methods,
// as this struct is used only for temporary operations and does not need to be deeply copied.
type GuestbookCustomValidator struct{}

var _ webhook.CustomValidator = &GuestbookCustomValidator{}

// ValidateCreate implements webhook.CustomValidator so a webhook will be registered for the type Guestbook.
func (v *GuestbookCustomValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	guestbook, ok := obj.(*webappv1.Guestbook)
	if !ok {
		return nil, fmt.Errorf("expected a Guestbook object but got %T", obj)
	}
	guestbooklog.Info("Validation for Guestbook upon creation", "name", guestbook.GetName())

	return nil, invalid(guestbook, validateMessage(guestbook))
}

// ValidateUpdate implements webhook.CustomValidator so a webhook will be registered for the type Guestbook.
func (v *GuestbookCustomValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	guestbook, ok := newObj.(*webappv1.Guestbook)
	if !ok {
		return nil, fmt.Errorf("expected a Guestbook object for the newObj but got %T", newObj)
	}
	old, ok := oldObj.(*webappv1.Guestbook)
	if !ok {
		return nil, fmt.Errorf("expected a Guestbook object for the oldObj but got %T", oldObj)
	}
	guestbooklog.Info("Validation for Guestbook upon update", "name", guestbook.GetName())

	errs := validateMessage(guestbook)
	if old.Spec.Tier != "" && guestbook.Spec.Tier != old.Spec.Tier {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "tier"), "the tier cannot change once set"))
	}
	return nil, invalid(guestbook, errs)
}

// ValidateDelete implements webhook.CustomValidator so a webhook will be registered for the type Guestbook.
func (v *GuestbookCustomValidator) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	guestbook, ok := obj.(*webappv1.Guestbook)
	if !ok {
		return nil, fmt.Errorf("expected a Guestbook object but got %T", obj)
	}
	guestbooklog.Info("Validation for Guestbook upon deletion", "name", guestbook.GetName())

	return nil, nil
}

// validateMessage refuses a message with the banned word.
func validateMessage(guestbook *webappv1.Guestbook) field.ErrorList {
	if strings.Contains(strings.ToLower(guestbook.Spec.Message), BannedWord) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "message"), guestbook.Spec.Message,
			fmt.Sprintf("must not contain %q", BannedWord))}
	}
	return nil
}

// invalid is the Invalid error of errs (nil when there are none), as kubebuilder's CronJob
// tutorial builds its validation errors.
func invalid(guestbook *webappv1.Guestbook, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: webappv1.GroupVersion.Group, Kind: "Guestbook"}, guestbook.Name, errs)
}
