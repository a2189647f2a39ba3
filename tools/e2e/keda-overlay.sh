#!/usr/bin/env bash
# Write a `go build -overlay` file that builds KEDA with only the scalers the
# e2e tier uses (prometheus, cpu, memory), so the cloud and database SDKs the
# other scalers, secret providers and event sinks import are never compiled:
#
#   tools/e2e/keda-overlay.sh KEDA_SOURCE_DIR OUT_DIR
#
# prints the path of the overlay file it writes in OUT_DIR. The source is not
# changed (Go refuses overlays of files in the module cache: build a copy). The
# overlay hides KEDA files from the build and adds files in their place:
#
# - pkg/scalers is one package holding every scaler: every file but the shared
#   scaler.go and the kept scalers' own is hidden; scalers/kept.go declares
#   what the kept ones use from a hidden file.
# - pkg/scaling/scalers_builder.go maps trigger types to constructors between
#   its `// TRIGGERS-START` and `// TRIGGERS-END` lines: that switch is
#   rewritten to the kept scalers (any other type: "no scaler found", KEDA's own
#   answer to an unknown type); the rest of the file is KEDA's, unchanged.
# - pkg/scalers/aws and pkg/scalers/azure are replaced whole by stand-ins
#   (tools/e2e/keda/aws, azure): plain HTTP for the prometheus scaler, a clear
#   error when a trigger asks for Amazon or Azure Managed Prometheus.
# - The secret providers (Azure Key Vault, GCP and AWS Secret Manager,
#   HashiCorp Vault) and the CloudEventSource destinations (HTTP, Azure Event
#   Grid) are replaced by stand-ins (tools/e2e/keda/resolver, eventemitter)
#   that refuse with an error naming the provider: the tier uses none.
# - pkg/scalers/gcp loses its Stackdriver client (only GCP scalers use it);
#   pkg/util loses its Ginkgo test reporter (only tests use it).
#
# Every file the overlay names must exist in the source; a KEDA release that
# moved one fails here, naming it, rather than building the full KEDA.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 KEDA_SOURCE_DIR OUT_DIR" >&2; exit 2; }
src="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
standins="$(cd "$(dirname "$0")" && pwd)/keda"

# The scaler files kept in pkg/scalers, besides scaler.go.
readonly kept_scalers=(prometheus_scaler.go cpu_memory_scaler.go)
# Packages replaced whole: package directory => stand-in file.
readonly replaced_packages=("pkg/scalers/aws=aws/sigv4.go" "pkg/scalers/azure=azure/azure.go")
# Files replaced one for one: KEDA file => stand-in file.
readonly replaced_files=(
  "pkg/scaling/resolver/hashicorpvault_handler.go=resolver/unsupported.go"
  "pkg/scaling/resolver/azure_keyvault_handler.go=resolver/azure_keyvault.go"
  "pkg/scaling/resolver/gcp_secretmanager_handler.go=resolver/gcp_secretmanager.go"
  "pkg/scaling/resolver/aws_secretmanager_handler.go=resolver/aws_secretmanager.go"
  "pkg/eventemitter/cloudevent_http_handler.go=eventemitter/unsupported.go"
)
# Files hidden: a stand-in above declares what they did, or nothing built reads them.
readonly hidden_files=(
  pkg/eventemitter/azure_event_grid_topic_handler.go
  pkg/scalers/gcp/gcp_stackdriver_client.go
  pkg/util/ginkgo_reporter.go
)
# Files added: KEDA file that must not exist => stand-in file.
readonly added_files=("pkg/scalers/zz_modelplane_kept.go=scalers/kept.go")

fail() { echo "keda-overlay: $*" >&2; exit 1; }
need() { [[ -f "${src}/$1" ]] || fail "KEDA source has no $1 (another release?): update tools/e2e/keda-overlay.sh"; }
standin() { [[ -f "${standins}/$1" ]] || fail "missing stand-in tools/e2e/keda/$1"; echo "${standins}/$1"; }

entries=()
hide() { need "$1"; entries+=("\"${src}/$1\": \"\""); }
put() { need "$1"; entries+=("\"${src}/$1\": \"$(standin "$2")\""); }
add() { [[ ! -e "${src}/$1" ]] || fail "KEDA source already has $1"; entries+=("\"${src}/$1\": \"$(standin "$2")\""); }
# The package's Go files, tests excepted (`go build` reads no test file).
sources() { find "${src}/$1" -maxdepth 1 -name '*.go' ! -name '*_test.go' -printf '%f\n' | sort; }

for kept in scaler.go "${kept_scalers[@]}"; do need "pkg/scalers/${kept}"; done
while read -r name; do
  if [[ " scaler.go ${kept_scalers[*]} " != *" ${name} "* ]]; then hide "pkg/scalers/${name}"; fi
done < <(sources pkg/scalers)
for pair in "${replaced_packages[@]}"; do
  dir="${pair%%=*}"
  [[ -d "${src}/${dir}" ]] || fail "KEDA source has no ${dir}: update tools/e2e/keda-overlay.sh"
  while read -r name; do hide "${dir}/${name}"; done < <(sources "${dir}")
  add "${dir}/zz_modelplane.go" "${pair#*=}"
done
for pair in "${replaced_files[@]}"; do put "${pair%%=*}" "${pair#*=}"; done
for path in "${hidden_files[@]}"; do hide "${path}"; done
for pair in "${added_files[@]}"; do add "${pair%%=*}" "${pair#*=}"; done

builder=pkg/scaling/scalers_builder.go
need "${builder}"
awk '
  /\/\/ TRIGGERS-START/ {
    print; skipping = 1; started = 1
    print "\t// Only the scalers the modelplane e2e build keeps (tools/e2e/keda-overlay.sh)."
    print "\tswitch triggerType {"
    print "\tcase \"cpu\":"
    print "\t\treturn scalers.NewCPUMemoryScaler(corev1.ResourceCPU, config)"
    print "\tcase \"memory\":"
    print "\t\treturn scalers.NewCPUMemoryScaler(corev1.ResourceMemory, config)"
    print "\tcase \"prometheus\":"
    print "\t\treturn scalers.NewPrometheusScaler(config)"
    print "\tdefault:"
    print "\t\treturn nil, fmt.Errorf(\"no scaler found for type: %s\", triggerType)"
    print "\t}"
    next
  }
  /\/\/ TRIGGERS-END/ { skipping = 0; ended = 1 }
  !skipping { print }
  END { if (!started || !ended) exit 3 }
' "${src}/${builder}" >"${out}/scalers_builder.go" ||
  fail "${builder} has no TRIGGERS-START/TRIGGERS-END lines: update tools/e2e/keda-overlay.sh"
entries+=("\"${src}/${builder}\": \"${out}/scalers_builder.go\"")

{
  echo '{"Replace": {'
  last=$((${#entries[@]} - 1))
  for i in "${!entries[@]}"; do
    if [[ ${i} -lt ${last} ]]; then echo "  ${entries[${i}]},"; else echo "  ${entries[${i}]}"; fi
  done
  echo '}}'
} >"${out}/overlay.json"
echo "${out}/overlay.json"
