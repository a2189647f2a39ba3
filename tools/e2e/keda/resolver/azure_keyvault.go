// Stand-in for KEDA's Azure Key Vault secret provider in the modelplane e2e build (see unsupported.go).

package resolver

import (
	"context"

	"github.com/go-logr/logr"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// AzureKeyVaultHandler refuses every use.
type AzureKeyVaultHandler struct{}

func NewAzureKeyVaultHandler(*kedav1alpha1.AzureKeyVault) *AzureKeyVaultHandler {
	return &AzureKeyVaultHandler{}
}

func (*AzureKeyVaultHandler) Initialize(context.Context, client.Client, logr.Logger, string, corev1listers.SecretLister) error {
	return unsupported("Azure Key Vault")
}

func (*AzureKeyVaultHandler) Read(context.Context, string, string) (string, error) {
	return "", unsupported("Azure Key Vault")
}
