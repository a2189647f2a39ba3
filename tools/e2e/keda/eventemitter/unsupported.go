// Stand-ins for KEDA's CloudEventSource destinations in the modelplane e2e build of KEDA
// (tools/e2e/keda-overlay.sh puts these in place of the HTTP and Azure Event Grid handlers):
// the tier emits no CloudEvents, and the CloudEvents and Azure SDKs are what the build skips.
// A CloudEventSource naming either destination is refused: KEDA logs the error and skips it.

package eventemitter

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventingv1alpha1 "github.com/kedacore/keda/v2/apis/eventing/v1alpha1"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/eventemitter/eventdata"
)

func unsupported(destination string) error {
	return fmt.Errorf("CloudEventSource destination %s is not built into this KEDA (modelplane's e2e build)", destination)
}

// CloudEventHTTPHandler is never created.
type CloudEventHTTPHandler struct{}

func NewCloudEventHTTPHandler(context.Context, string, string, logr.Logger) (*CloudEventHTTPHandler, error) {
	return nil, unsupported("http")
}

func (*CloudEventHTTPHandler) EmitEvent(eventdata.EventData, func(eventdata.EventData, error)) {}
func (*CloudEventHTTPHandler) SetActiveStatus(metav1.ConditionStatus)                          {}
func (*CloudEventHTTPHandler) GetActiveStatus() metav1.ConditionStatus                         { return metav1.ConditionFalse }
func (*CloudEventHTTPHandler) CloseHandler()                                                   {}

// AzureEventGridTopicHandler is never created.
type AzureEventGridTopicHandler struct{}

func NewAzureEventGridTopicHandler(context.Context, string, *eventingv1alpha1.AzureEventGridTopicSpec, map[string]string, kedav1alpha1.AuthPodIdentity, logr.Logger) (*AzureEventGridTopicHandler, error) {
	return nil, unsupported("azureEventGridTopic")
}

func (*AzureEventGridTopicHandler) EmitEvent(eventdata.EventData, func(eventdata.EventData, error)) {}
func (*AzureEventGridTopicHandler) SetActiveStatus(metav1.ConditionStatus)                          {}
func (*AzureEventGridTopicHandler) GetActiveStatus() metav1.ConditionStatus {
	return metav1.ConditionFalse
}
func (*AzureEventGridTopicHandler) CloseHandler() {}
