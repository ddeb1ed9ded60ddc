# OCI images for `matrix k8s render` (its default --image-prefix pingmatrix/ and --tag
# latest): one per service and one for loadgen, each holding nothing but the binary
# from the same workspace build `matrix` runs, so a Pod runs the bytes run.json hashes.
# Packages `image-<binary>`; `nix build .#image-ping-epoll && docker load < result`.
{ pkgs, workspace }:
let
  binaries = [
    "loadgen"
    "ping-tokio-hyper"
    "ping-tokio-per-core"
    "ping-axum"
    "ping-actix-web"
    "ping-monoio"
    "ping-glommio"
    "ping-compio"
    "ping-may-minihttp"
    "ping-epoll"
  ];
  image = name: pkgs.dockerTools.buildLayeredImage {
    name = "pingmatrix/${name}";
    tag = "latest";
    config.Entrypoint = [ "${workspace}/bin/${name}" ];
  };
in
builtins.listToAttrs (map (name: { name = "image-${name}"; value = image name; }) binaries)
