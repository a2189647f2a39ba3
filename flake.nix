{
  # A development shell with the tools the README's two commands need:
  # Python 3.11+, make and Go (the Go toolchain builds the pinned Crossplane
  # CLI through tools/crossplane.sh). `nix develop`, then `make test`.
  #
  # Function images are not built here: each function's runtime image is
  # built from its Dockerfile (see README.md); this flake does not claim to
  # package them. It has not been evaluated in CI (no Nix on the CI machine).
  description = "modelplane: LLM inference across a fleet of Kubernetes GPU clusters, on Crossplane";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.05";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = [ pkgs.python311 pkgs.gnumake pkgs.go pkgs.git pkgs.kubectl ];
        };
      });
    };
}
