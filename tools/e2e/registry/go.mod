module modelplane.local/e2e/registry

go 1.25.0

require github.com/google/go-containerregistry v0.21.9
