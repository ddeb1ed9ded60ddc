{
  description = "pingmatrix: reproducible HTTP/1.1 ping benchmarks of Rust async runtimes";

  # Pinned by full commit, never by branch: the URL alone fixes the content, so the
  # same flake rev gives the same toolchain and the same binaries even before a
  # flake.lock exists. nixos-26.05 as of 2026-10-08; it ships rustc/cargo 1.95.0,
  # which the outputs assert equals rust-toolchain.toml's channel.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/7c8764b7c7b09b34f632464276218ef9090eaa11";

  outputs = { self, nixpkgs }:
    let
      # Linux only: the services use epoll/io_uring, and perf is Linux-only.
      systems = [ "x86_64-linux" "aarch64-linux" ];

      perSystem = system:
        let
          pkgs = nixpkgs.legacyPackages.${system};
          source = import ./nix/source.nix { inherit (pkgs) lib; root = ./.; };

          # rustup users get rust-toolchain.toml, Nix users get nixpkgs' rustc: refuse
          # to evaluate anything if the two ever name different versions.
          checkedPkgs =
            assert pkgs.lib.assertMsg (pkgs.rustc.version == source.toolchainChannel)
              "flake.nix: nixpkgs ships rustc ${pkgs.rustc.version} but rust-toolchain.toml says ${source.toolchainChannel}; move the nixpkgs pin or the channel so they agree";
            pkgs;

          workspace = import ./nix/workspace.nix { pkgs = checkedPkgs; inherit source; };

          matrix = import ./nix/matrix.nix {
            pkgs = checkedPkgs;
            inherit workspace;
            inherit (source) defaultMatrix;
            # Recorded in every result: which flake and which nixpkgs built the binaries.
            flakeRev = self.rev or self.dirtyRev or "unknown";
            nixpkgsRev = nixpkgs.rev or "unknown";
          };

          matrixApp = {
            type = "app";
            program = checkedPkgs.lib.getExe matrix;
            meta.description = "Run the benchmark matrix (default: ./matrix.toml, results under ./results/)";
          };
        in
        {
          packages = {
            inherit workspace matrix;
            default = workspace;
            site = import ./nix/site.nix {
              pkgs = checkedPkgs;
              inherit workspace;
              results = ./results;
            };
          } // import ./nix/images.nix { pkgs = checkedPkgs; inherit workspace; };

          apps = {
            matrix = matrixApp;
            default = matrixApp;
          };

          devShells.default = import ./nix/shell.nix { pkgs = checkedPkgs; };

          checks = import ./nix/checks.nix {
            pkgs = checkedPkgs;
            inherit source workspace matrix;
            nixFiles = [ ./flake.nix ./nix ];
          };

          formatter = import ./nix/formatter.nix { pkgs = checkedPkgs; };
        };

      all = nixpkgs.lib.genAttrs systems perSystem;
      pick = output: builtins.mapAttrs (_system: outputs: outputs.${output}) all;
    in
    {
      packages = pick "packages";
      apps = pick "apps";
      devShells = pick "devShells";
      checks = pick "checks";
      formatter = pick "formatter";
    };
}
