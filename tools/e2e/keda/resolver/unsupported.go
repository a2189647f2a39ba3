// Stand-ins for KEDA's external secret providers in the modelplane e2e build of KEDA
// (tools/e2e/keda-overlay.sh puts this file in place of hashicorpvault_handler.go): the
// tier's triggers read no secret store, and the providers' SDKs are what the build skips.
// Each provider a TriggerAuthentication names is refused with an error naming it.

package resolver

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/go-logr/logr"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/authentication"
)

// DefaultVaultKubernetesAuthTokenFile is the default of the operator's --vault-kubernetes-auth-token-file flag.
const DefaultVaultKubernetesAuthTokenFile = "/var/run/secrets/keda-vault/token"

func unsupported(provider string) error {
	return fmt.Errorf("%s is not built into this KEDA (modelplane's e2e build keeps only the prometheus, cpu and memory scalers)", provider)
}

// HashicorpVaultHandler refuses every use.
type HashicorpVaultHandler struct{}

func NewHashicorpVaultHandler(*kedav1alpha1.HashiCorpVault, *authentication.AuthClientSet, string) *HashicorpVaultHandler {
	return &HashicorpVaultHandler{}
}

func (*HashicorpVaultHandler) Initialize(logr.Logger) error { return unsupported("HashiCorp Vault") }

func (*HashicorpVaultHandler) Stop() {}

func (*HashicorpVaultHandler) ResolveSecrets([]kedav1alpha1.VaultSecret) ([]kedav1alpha1.VaultSecret, error) {
	return nil, unsupported("HashiCorp Vault")
}

// vaultAddressesEqual tells whether two addresses are the same HTTP(S) origin with no user information
// (the resolver's configuration check of its allowed Vault endpoints reads it).
func vaultAddressesEqual(a, b string) bool {
	origin := func(s string) (string, bool) {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.User != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return "", false
		}
		return strings.ToLower(u.Scheme + "://" + u.Host), true
	}
	oa, okA := origin(a)
	ob, okB := origin(b)
	return okA && okB && oa == ob
}
