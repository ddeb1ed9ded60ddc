# `nix fmt`: nixpkgs-fmt, the formatter CI can also run offline (scripts/ci/check-flake.sh).
# Newer `nix fmt` passes no paths, and bare nixpkgs-fmt would then wait on stdin, so
# default to the flake's Nix files.
{ pkgs }:
pkgs.writeShellApplication {
  name = "pingmatrix-nix-fmt";
  runtimeInputs = [ pkgs.nixpkgs-fmt ];
  text = ''
    if [ "$#" -eq 0 ]; then
      set -- flake.nix nix
    fi
    exec nixpkgs-fmt "$@"
  '';
  meta.description = "Format the flake's Nix files with nixpkgs-fmt";
}
