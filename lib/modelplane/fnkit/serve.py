"""The one entry point every function's ``main.py`` calls to serve gRPC."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from crossplane.function import logging, runtime
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

DEFAULT_ADDRESS = "0.0.0.0:9443"
# gRPC refuses a message over 4 MiB unless told otherwise, and Crossplane sends compose-model-deployment
# every InferenceCluster and ModelReplica of the fleet. The largest request we support, 1,000
# InferenceClusters x 2 pools and 10,000 ModelReplicas plus a 1,000-replica deployment's own
# composed resources, is about 35 MB serialized (`make bench` prints it); 64 MiB leaves room for
# larger pod templates. Crossplane itself receives responses with gRPC's default 4 MiB limit
# (it sets no MaxCallRecvMsgSize), so raising our send limit does not let a response grow past that.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
SERVER_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)
# Crossplane mounts the function's mTLS material here and says so in this variable.
TLS_CERTS_DIR_ENV = "TLS_SERVER_CERTS_DIR"


def parse_args(prog: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the flags Crossplane's function runtime passes to a function."""
    parser = argparse.ArgumentParser(prog=prog, description=f"{prog}: a Crossplane composition function.")
    parser.add_argument("--address", default=DEFAULT_ADDRESS, help="Address to listen on for gRPC.")
    parser.add_argument(
        "--tls-certs-dir",
        default=os.environ.get(TLS_CERTS_DIR_ENV),
        help=f"Directory with tls.crt, tls.key and ca.crt for mTLS (default: ${TLS_CERTS_DIR_ENV}).",
    )
    parser.add_argument("--insecure", action="store_true", help="Serve without mTLS (for local development).")
    parser.add_argument("--debug", "-d", action="store_true", help="Emit debug logs.")
    return parser.parse_args(argv)


def settle() -> None:
    """Put what start-up loaded out of the cyclic garbage collector's reach.

    Modules, generated models and compiled schemas live as long as the process.
    Without this every full collection walks them again: tens of milliseconds
    in a call on a large fleet, which allocates enough to trigger several.
    """
    gc.freeze()


def main(prog: str, runner: grpcv1.FunctionRunnerServiceServicer, argv: Sequence[str] | None = None) -> int:
    """Serve ``runner`` until terminated; return a process exit code.

    A start-up failure (no credentials and not insecure, unreadable certificates,
    an address that cannot be bound) exits non-zero with the reason on stderr.
    """
    args = parse_args(prog, argv)
    logging.configure(logging.Level.DEBUG if args.debug else logging.Level.INFO)
    if not args.insecure and not args.tls_certs_dir:
        sys.stderr.write(
            f"{prog}: no TLS certificates: pass --tls-certs-dir (or set {TLS_CERTS_DIR_ENV}) or --insecure\n"
        )
        return 2
    try:
        creds = runtime.load_credentials(args.tls_certs_dir) if args.tls_certs_dir else None
        settle()
        runtime.serve(runner, args.address, creds=creds, insecure=args.insecure, options=SERVER_OPTIONS)
    except (OSError, RuntimeError, ValueError) as err:
        sys.stderr.write(f"{prog}: cannot serve on {args.address}: {err}\n")
        return 1
    return 0
