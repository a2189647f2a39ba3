# The runtime image of one Modelplane composition function. One Dockerfile for
# all eight; pick the function with --build-arg FUNCTION (its directory under
# functions/):
#
#   docker build --build-arg FUNCTION=compose-model-deployment \
#     -t modelplane/function-compose-model-deployment:runtime .
#
# The image installs the whole project (lib, schemas and every function share
# one Python distribution) and runs the chosen function's module, which serves
# gRPC on 0.0.0.0:9443 with the mTLS certificates Crossplane mounts and names
# in TLS_SERVER_CERTS_DIR. Embed it into the function's package with
# `crossplane xpkg build --embed-runtime-image` (see tools/package.sh).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY lib lib
COPY schemas/modelplane_models schemas/modelplane_models
COPY functions functions
RUN python -m venv /venv && /venv/bin/pip install --no-cache-dir --disable-pip-version-check .

FROM python:3.11-slim
ARG FUNCTION=compose-inference-class
COPY --from=build /venv /venv
# compose-model-deployment -> python -m compose_model_deployment
RUN module="$(echo "${FUNCTION}" | tr - _)" \
 && /venv/bin/python -c "import importlib, sys; importlib.import_module(sys.argv[1] + '.fn')" "${module}" \
 && printf '#!/bin/sh\nexec /venv/bin/python -m %s "$@"\n' "${module}" > /usr/local/bin/function \
 && chmod 0755 /usr/local/bin/function
LABEL org.opencontainers.image.title="modelplane-function-${FUNCTION}"
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["/usr/local/bin/function"]
