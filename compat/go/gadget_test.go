package compat

import (
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// The webhook test's custom resource, Gadget (hooks.compat.kubemock.io, namespaced), in two
// versions as a kubebuilder project with a conversion webhook has them: v1 is the hub
// (stored; the admission webhooks are written for it), v2 a spoke that converts to and from
// it (controller-runtime's conversion.Hub and conversion.Convertible,
// sigs.k8s.io/controller-runtime/pkg/conversion/conversion.go). The versions differ in shape,
// so that a conversion is visible: v1's `color` is v2's `paint`, v1's `owner` is v2's
// `owner.name`.

// gadgetV1 and gadgetV2 are the Gadget's group versions.
var (
	gadgetV1 = schema.GroupVersion{Group: "hooks.compat.kubemock.io", Version: "v1"}
	gadgetV2 = schema.GroupVersion{Group: "hooks.compat.kubemock.io", Version: "v2"}
)

// conversions counts the conversions the conversion webhook made (both directions).
var conversions atomic.Int64

// GadgetSpec is v1's spec.
type GadgetSpec struct {
	// Color is defaulted by the mutating webhook; "red" is refused by the validating one.
	Color string `json:"color,omitempty"`
	// Size above gadgetWarnSize draws a warning from the validating webhook.
	Size int64 `json:"size,omitempty"`
	// Owner cannot change once set (the validating webhook's update check).
	Owner string `json:"owner,omitempty"`
}

// Gadget is v1, the hub.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetSpec `json:"spec,omitempty"`
}

// GadgetList is a list of v1 Gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

// Hub marks v1 as the version the others convert through.
func (*Gadget) Hub() {}

// GadgetOwner is v2's owner.
type GadgetOwner struct {
	// Name is v1's owner.
	Name string `json:"name,omitempty"`
}

// GadgetV2Spec is v2's spec.
type GadgetV2Spec struct {
	// Paint is v1's color.
	Paint string `json:"paint,omitempty"`
	// Size is v1's size.
	Size int64 `json:"size,omitempty"`
	// Owner holds v1's owner.
	Owner GadgetOwner `json:"owner,omitempty"`
}

// GadgetV2 is v2, a spoke.
type GadgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetV2Spec `json:"spec,omitempty"`
}

// GadgetV2List is a list of v2 Gadgets.
type GadgetV2List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GadgetV2 `json:"items"`
}

// ConvertTo converts this v2 Gadget to the hub.
func (g *GadgetV2) ConvertTo(dst conversion.Hub) error {
	hub := dst.(*Gadget)
	g.ObjectMeta.DeepCopyInto(&hub.ObjectMeta)
	hub.Spec = GadgetSpec{Color: g.Spec.Paint, Size: g.Spec.Size, Owner: g.Spec.Owner.Name}
	conversions.Add(1)
	return nil
}

// ConvertFrom converts the hub to this version.
func (g *GadgetV2) ConvertFrom(src conversion.Hub) error {
	hub := src.(*Gadget)
	hub.ObjectMeta.DeepCopyInto(&g.ObjectMeta)
	g.Spec = GadgetV2Spec{Paint: hub.Spec.Color, Size: hub.Spec.Size, Owner: GadgetOwner{Name: hub.Spec.Owner}}
	conversions.Add(1)
	return nil
}

// DeepCopyObject implements runtime.Object.
func (g *Gadget) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *GadgetList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Gadget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Gadget)
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (g *GadgetV2) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *GadgetV2List) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]GadgetV2, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*GadgetV2)
	}
	return &out
}

// gadgetScheme holds the built-in kinds and both Gadget versions (the same Go kind name
// "Gadget" in each, as two packages api/v1 and api/v2 would register them).
var gadgetScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypeWithName(gadgetV1.WithKind("Gadget"), &Gadget{})
	s.AddKnownTypeWithName(gadgetV1.WithKind("GadgetList"), &GadgetList{})
	s.AddKnownTypeWithName(gadgetV2.WithKind("Gadget"), &GadgetV2{})
	s.AddKnownTypeWithName(gadgetV2.WithKind("GadgetList"), &GadgetV2List{})
	metav1.AddToGroupVersion(s, gadgetV1)
	metav1.AddToGroupVersion(s, gadgetV2)
	return s
}()

// gadgetCRD is the Gadget's CustomResourceDefinition as controller-gen writes it: no
// conversion section (envtest adds the webhook conversion, since the scheme says the kind is
// convertible: modifyConversionWebhooks in controller-runtime's pkg/envtest/crd.go).
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	version := func(name string, storage bool, spec map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{
			Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: spec},
				},
			}},
		}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.hooks.compat.kubemock.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gadgetV1.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				version("v1", true, map[string]apiextensionsv1.JSONSchemaProps{
					"color": str, "size": integer, "owner": str,
				}),
				version("v2", false, map[string]apiextensionsv1.JSONSchemaProps{
					"paint": str, "size": integer,
					"owner": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}},
				}),
			},
		},
	}
}
