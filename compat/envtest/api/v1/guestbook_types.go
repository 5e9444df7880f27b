package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GuestbookSpec defines the desired state of Guestbook.
type GuestbookSpec struct {
	// Message is what the guestbook's ConfigMap holds under "message".
	// +kubebuilder:validation:MinLength=1
	Message string `json:"message"`

	// Size is how many entries the guestbook keeps (copied to the ConfigMap).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	Size int32 `json:"size,omitempty"`

	// Tier is where the guestbook is served from: "frontend" or "backend".
	// The defaulting webhook sets "frontend"; it cannot change once set.
	// +kubebuilder:validation:Enum=frontend;backend
	// +optional
	Tier string `json:"tier,omitempty"`
}

// GuestbookStatus defines the observed state of Guestbook.
type GuestbookStatus struct {
	// ConfigMapName is the ConfigMap the controller keeps for this guestbook.
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`

	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: "Available" once the ConfigMap holds the spec.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.spec.message`

// Guestbook is the Schema for the guestbooks API.
type Guestbook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GuestbookSpec   `json:"spec,omitempty"`
	Status GuestbookStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GuestbookList contains a list of Guestbook.
type GuestbookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Guestbook `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Guestbook{}, &GuestbookList{})
}
