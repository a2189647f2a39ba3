// Stand-in for KEDA's GCP Secret Manager provider in the modelplane e2e build (see unsupported.go).

package resolver

import (
	"context"

	"github.com/go-logr/logr"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// GCPSecretManagerHandler refuses every use.
type GCPSecretManagerHandler struct{}

func NewGCPSecretManagerHandler(*kedav1alpha1.GCPSecretManager) *GCPSecretManagerHandler {
	return &GCPSecretManagerHandler{}
}

func (*GCPSecretManagerHandler) Initialize(context.Context, client.Client, logr.Logger, string, corev1listers.SecretLister) error {
	return unsupported("GCP Secret Manager")
}

func (*GCPSecretManagerHandler) Read(context.Context, string, string) (string, error) {
	return "", unsupported("GCP Secret Manager")
}
