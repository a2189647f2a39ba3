// Stand-in for KEDA's AWS Secrets Manager provider in the modelplane e2e build (see unsupported.go).

package resolver

import (
	"context"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// AwsSecretManagerHandler refuses every use.
type AwsSecretManagerHandler struct{}

func NewAwsSecretManagerHandler(*kedav1alpha1.AwsSecretManager) *AwsSecretManagerHandler {
	return &AwsSecretManagerHandler{}
}

func (*AwsSecretManagerHandler) Initialize(context.Context, client.Client, logr.Logger, string, corev1listers.SecretLister, *corev1.PodSpec) error {
	return unsupported("AWS Secrets Manager")
}

func (*AwsSecretManagerHandler) Read(context.Context, logr.Logger, string, string, string, string) (string, error) {
	return "", unsupported("AWS Secrets Manager")
}

func (*AwsSecretManagerHandler) Stop() {}
