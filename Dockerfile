# A runtime image of one Modelplane composition function, for those who build
# with Docker. It is not what `make package` or CI builds: tools/images.sh
# builds the images without Docker (Debian bookworm, /venv from the hashed
# lock tools/images/requirements.lock, one base layer shared by all of them,
# reproducible) and tools/package.sh embeds them in the Function packages.
# This file installs the same project the same way, but resolves the
# dependencies at build time from pyproject.toml's ranges and has not been
# built on this project's machines (no Docker there).
#
# One Dockerfile for every function; pick the function with --build-arg FUNCTION
# (its directory under functions/):
#
#   docker build --build-arg FUNCTION=compose-model-deployment \
#     -t function-compose-model-deployment:runtime .
#   crossplane xpkg build --package-root functions/compose-model-deployment/package \
#     --examples-root functions/compose-model-deployment/package/examples \
#     --embed-runtime-image function-compose-model-deployment:runtime \
#     -o function-compose-model-deployment.xpkg
#
# (--examples-root names a directory that does not exist: the default,
# ./examples, would put the repository's examples into the package.) The
# image runs the chosen function's module, which serves gRPC on 0.0.0.0:9443
# with the mTLS certificates Crossplane mounts and names in
# TLS_SERVER_CERTS_DIR, as user 65532 like tools/images.sh's images.
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
