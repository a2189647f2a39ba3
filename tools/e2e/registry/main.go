// Command registry serves an in-memory OCI registry (go-containerregistry's
// pkg/registry) on a loopback address, for the end-to-end tier: the
// Configuration and Function packages are pushed to it and Crossplane core
// pulls them from it. Upstream's cmd/registry listens on every interface; this
// one listens only where it is told (127.0.0.1 by default) and prints the
// address it got, so a caller can ask for port 0.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	address := flag.String("address", "127.0.0.1:0", "host:port to listen on")
	flag.Parse()
	listener, err := net.Listen("tcp", *address)
	if err != nil {
		log.Fatalf("registry: cannot listen on %s: %v", *address, err)
	}
	fmt.Fprintf(os.Stdout, "registry: serving on %s\n", listener.Addr())
	server := &http.Server{Handler: registry.New(registry.Logger(log.New(os.Stderr, "", log.LstdFlags))), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(server.Serve(listener))
}
