// Stand-in for KEDA's pkg/scalers/aws in the modelplane e2e build (tools/e2e/keda-overlay.sh):
// the prometheus scaler asks it for an Amazon Managed Prometheus (SigV4) transport, which the
// tier's Prometheus does not need; the AWS SDK is what the build skips.

package aws

import (
	"errors"
	"net/http"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// NewSigV4RoundTripper answers nil (plain HTTP) unless the trigger asks for AWS (an awsRegion or an
// AWS pod identity), which it refuses rather than send unsigned requests.
func NewSigV4RoundTripper(config *scalersconfig.ScalerConfig, awsRegion string) (http.RoundTripper, error) {
	switch {
	case awsRegion != "",
		config.PodIdentity.Provider == kedav1alpha1.PodIdentityProviderAws,
		config.PodIdentity.Provider == kedav1alpha1.PodIdentityProviderAwsEKS:
		return nil, errors.New("AWS SigV4 signing (Amazon Managed Prometheus) is not built into this KEDA (modelplane's e2e build)")
	default:
		return nil, nil
	}
}
