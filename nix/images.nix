# OCI images for `matrix k8s render` (its default --image-prefix pingmatrix/ and --tag
# latest): one per service and one for loadgen, each holding nothing but the binary
# from the same workspace build `matrix` runs, so a Pod runs the bytes run.json hashes.
# Packages `image-<binary>`; `nix build .#image-ping-epoll && docker load < result`.
{ pkgs, workspace }:
let
  # The services come from the one list of services (services/services.toml).
  services = (builtins.fromTOML (builtins.readFile ../services/services.toml)).service;
  binaries = [ "loadgen" ] ++ map (s: s.name) services;
  image = name: pkgs.dockerTools.buildLayeredImage {
    name = "pingmatrix/${name}";
    tag = "latest";
    config.Entrypoint = [ "${workspace}/bin/${name}" ];
  };
in
builtins.listToAttrs (map (name: { name = "image-${name}"; value = image name; }) binaries)
