// Package controller holds the Guestbook reconciler, as kubebuilder scaffolds it
// (`internal/controller/guestbook_controller.go`), filled in: each Guestbook gets a
// ConfigMap it controls, holding its spec, and an "Available" condition once it does.
package controller

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	webappv1 "example.com/guestbook/api/v1"
)

// ConditionAvailable is the condition type set once the ConfigMap holds the spec.
const ConditionAvailable = "Available"

// GuestbookReconciler reconciles a Guestbook object.
type GuestbookReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=webapp.example.com,resources=guestbooks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=webapp.example.com,resources=guestbooks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// Reconcile moves the Guestbook's ConfigMap and status toward its spec.
func (r *GuestbookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var guestbook webappv1.Guestbook
	if err := r.Get(ctx, req.NamespacedName, &guestbook); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !guestbook.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      guestbook.Name + "-entries",
		Namespace: guestbook.Namespace,
	}}
	result, err := controllerutil.CreateOrUpdate(ctx, r.Client, configMap, func() error {
		if configMap.Data == nil {
			configMap.Data = map[string]string{}
		}
		configMap.Data["message"] = guestbook.Spec.Message
		configMap.Data["size"] = strconv.Itoa(int(guestbook.Spec.Size))
		return controllerutil.SetControllerReference(&guestbook, configMap, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	log.V(1).Info("configmap reconciled", "configmap", configMap.Name, "result", result)

	patch := client.MergeFrom(guestbook.DeepCopy())
	guestbook.Status.ConfigMapName = configMap.Name
	guestbook.Status.ObservedGeneration = guestbook.Generation
	meta.SetStatusCondition(&guestbook.Status.Conditions, metav1.Condition{
		Type:               ConditionAvailable,
		Status:             metav1.ConditionTrue,
		Reason:             "ConfigMapReady",
		Message:            "the ConfigMap holds the spec",
		ObservedGeneration: guestbook.Generation,
	})
	if err := r.Status().Patch(ctx, &guestbook, patch); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// SetupWithManager sets up the controller with the Manager: Guestbooks, and the
// ConfigMaps they own (a ConfigMap changed or deleted behind its back is put back).
func (r *GuestbookReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&webappv1.Guestbook{}).
		Owns(&corev1.ConfigMap{}).
		Named("guestbook").
		Complete(r)
}
