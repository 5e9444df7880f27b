package compat

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The suite's custom resource, Widget (compat.kubemock.io/v1, namespaced, status
// subresource), as a controller project would define it: a Go type with deep copies,
// registered in a scheme, its CRD installed by TestMain through the apiextensions clientset.

// widgetGroupVersion is the Widget's group and version.
var widgetGroupVersion = schema.GroupVersion{Group: "compat.kubemock.io", Version: "v1"}

// widgetResource is the Widget's resource.
var widgetResource = widgetGroupVersion.WithResource("widgets")

// WidgetSpec is what a Widget asks for.
type WidgetSpec struct {
	// Message goes into the Widget's ConfigMap.
	Message string `json:"message,omitempty"`
}

// WidgetStatus is what the Widget controller reports.
type WidgetStatus struct {
	// ObservedGeneration is the generation the controller last reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ConfigMap is the name of the ConfigMap the controller keeps.
	ConfigMap string `json:"configMap,omitempty"`
}

// Widget is the suite's custom resource.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// DeepCopy is a deep copy of the Widget (and hides ObjectMeta's, which would copy only the
// metadata).
func (w *Widget) DeepCopy() *Widget {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (w *Widget) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Widget, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
		}
	}
	return &out
}

// addWidgetToScheme registers Widget and WidgetList.
func addWidgetToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(widgetGroupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, widgetGroupVersion)
	return nil
}

// widgetCRD is the Widget's CustomResourceDefinition.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.compat.kubemock.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroupVersion.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
				ShortNames: []string{"wdg"}, Categories: []string{"compat"},
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"message": str}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"observedGeneration": integer, "configMap": str,
						}},
					},
				}},
			}},
		},
	}
}

// installCRDs creates the Widget CRD and waits until it is Established.
func installCRDs() error {
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		return err
	}
	for {
		crd, err := crds.Get(ctx, "widgets.compat.kubemock.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the CRD was not Established: %v", crd.Status.Conditions)
		case <-time.After(poll):
		}
	}
}
