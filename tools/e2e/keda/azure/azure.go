// Stand-in for KEDA's pkg/scalers/azure in the modelplane e2e build (tools/e2e/keda-overlay.sh):
// what the prometheus scaler and the secret resolver read from it, without the Azure SDK.

package azure

import (
	"errors"
	"net/http"

	"github.com/go-logr/logr"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// The authentication parameters a TriggerAuthentication's Azure service principal resolves to
// (KEDA's names: the resolver writes them whichever scaler reads them).
const (
	ServicePrincipalAuthKey                      = "azureServicePrincipal"
	ServicePrincipalTenantIDKey                  = "azureServicePrincipalTenantId"
	ServicePrincipalClientIDKey                  = "azureServicePrincipalClientId"
	ServicePrincipalCloudKey                     = "azureServicePrincipalCloud"
	ServicePrincipalActiveDirectoryEndpointKey   = "azureServicePrincipalActiveDirectoryEndpoint"
	ServicePrincipalClientSecretKey              = "azureServicePrincipalClientSecret"
	ServicePrincipalClientCertificateKey         = "azureServicePrincipalClientCertificate"
	ServicePrincipalClientCertificatePasswordKey = "azureServicePrincipalClientCertificatePassword"
)

// TryAndGetAzureManagedPrometheusHTTPRoundTripper answers nil (plain HTTP) unless the trigger uses
// Azure workload identity (Azure Managed Prometheus), which it refuses.
func TryAndGetAzureManagedPrometheusHTTPRoundTripper(_ logr.Logger, podIdentity kedav1alpha1.AuthPodIdentity, _ map[string]string) (http.RoundTripper, error) {
	if podIdentity.Provider == kedav1alpha1.PodIdentityProviderAzureWorkload {
		return nil, errors.New("Azure Managed Prometheus is not built into this KEDA (modelplane's e2e build)")
	}
	return nil, nil
}
