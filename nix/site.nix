# The results viewer over the committed result sets: `nix build .#site` writes what
# `matrix site results --out <dir>` writes (index.html with the compare view and the
# history, and each run's page), with the same workspace build the matrix runs.
{ pkgs, workspace, results }:
pkgs.runCommand "pingmatrix-site" { } ''
  ${workspace}/bin/matrix site ${results} --out $out
''
