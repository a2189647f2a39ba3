// Added to KEDA's pkg/scalers in the modelplane e2e build (tools/e2e/keda-overlay.sh): what the
// kept scalers (prometheus, cpu, memory) use that KEDA declares in a hidden scaler's file.

package scalers

// externalMetricType is the HPA metric source type of every external metric.
const externalMetricType = "External"
