# STRUCTURAL CHECK ONLY. THIS IS NOT NIXPKGS AND BUILDS NOTHING.
#
# scripts/ci/check-flake.sh puts this flake in place of the pinned nixpkgs
# (`--override-input nixpkgs path:nix/stand-in`) so that `nix flake show` and
# `nix flake check --no-build` can evaluate ../../flake.nix offline, with the old
# Nix 2.8 that cannot evaluate real nixpkgs >= 25.11.
#
# It provides exactly the names the flake uses, with the argument shapes of the
# real functions (buildRustPackage takes one attribute set and insists on
# cargoLock; writeShellApplication accepts only its documented arguments, ...),
# so a misspelt attribute or a wrong call shape fails evaluation here too.
# Every derivation is a dummy whose builder exits 1: building it proves nothing
# and fails loudly on purpose. Whether the real packages build is checked only by
# `nix flake check` on a networked machine with Nix >= 2.18.
{
  description = "Structural stand-in for nixpkgs (evaluation only, never a build)";

  outputs = { self }:
    let
      # The version the pinned nixpkgs (nixos-26.05, 7c8764b7) ships; the flake
      # asserts that it equals the channel in rust-toolchain.toml.
      rustcVersion = "1.95.0";

      hasPrefix = prefix: s:
        builtins.substring 0 (builtins.stringLength prefix) s == prefix;

      # A path counts as inside `dir` when it is `dir` itself or below it.
      isWithin = dir: p: p == dir || hasPrefix (dir + "/") p;

      lib = {
        genAttrs = names: f:
          builtins.listToAttrs (map (n: { name = n; value = f n; }) names);

        assertMsg = pred: msg: pred || builtins.throw msg;

        # Like nixpkgs: the program named by meta.mainProgram. The real one only
        # warns when mainProgram is missing; being stricter here catches it early.
        getExe = drv:
          if drv ? meta.mainProgram
          then "${drv}/bin/${drv.meta.mainProgram}"
          else builtins.throw "lib.getExe: ${drv.name or "value"} has no meta.mainProgram";

        # File sets: { include = [ path ]; exclude = [ path ]; }. Enough for
        # unions/difference/maybeMissing/toSource as the flake uses them; like the
        # real lib.fileset, a plain path that does not exist is an error.
        fileset = rec {
          _coerce = x:
            if builtins.isPath x then
              (if builtins.pathExists x then { include = [ x ]; exclude = [ ]; }
              else builtins.throw "lib.fileset: path ${toString x} does not exist")
            else if x ? include && x ? exclude then x
            else builtins.throw "lib.fileset: expected a path or a file set";

          maybeMissing = p:
            if builtins.pathExists p then _coerce p else { include = [ ]; exclude = [ ]; };

          unions = sets:
            let cs = map _coerce sets; in
            {
              include = builtins.concatLists (map (s: s.include) cs);
              exclude = builtins.concatLists (map (s: s.exclude) cs);
            };

          difference = a: b:
            let ca = _coerce a; cb = _coerce b; in
            { include = ca.include; exclude = ca.exclude ++ cb.include; };

          toSource = { root, fileset }:
            let
              fsv = _coerce fileset;
              inc = map toString fsv.include;
              exc = map toString fsv.exclude;
              kept = p: type:
                builtins.any (i: isWithin i p || (type == "directory" && isWithin p i)) inc
                && !(builtins.any (e: isWithin e p) exc);
            in
            assert builtins.isPath root;
            builtins.path { name = "source"; path = root; filter = kept; };
        };
      };

      pkgsFor = system:
        let
          # Forcing every argument (toJSON is deep) makes evaluation errors inside
          # the flake's strings and lists surface here, as they would in nixpkgs.
          dummy = name: args: extra:
            derivation
              {
                inherit name system;
                builder = "/bin/sh";
                args = [ "-c" "echo 'nix/stand-in: structural stand-in, not a build' >&2; exit 1" ];
                standInArgs = builtins.toJSON args;
              } // extra;

          plain = pname: meta:
            dummy "${pname}-stand-in" { } { inherit meta; version = "0"; };
        in
        {
          inherit lib system;

          rustc = dummy "rustc-${rustcVersion}" { } { version = rustcVersion; };
          cargo = dummy "cargo-${rustcVersion}" { } { version = rustcVersion; };
          clippy = plain "clippy" { mainProgram = "cargo-clippy"; };
          rustfmt = plain "rustfmt" { mainProgram = "rustfmt"; };
          rust-analyzer = plain "rust-analyzer" { mainProgram = "rust-analyzer"; };
          cargo-nextest = plain "cargo-nextest" { mainProgram = "cargo-nextest"; };
          wrk = plain "wrk" { mainProgram = "wrk"; };
          oha = plain "oha" { mainProgram = "oha"; };
          hyperfine = plain "hyperfine" { mainProgram = "hyperfine"; };
          jq = plain "jq" { mainProgram = "jq"; };
          perf = plain "perf-linux" { mainProgram = "perf"; };
          nixpkgs-fmt = plain "nixpkgs-fmt" { mainProgram = "nixpkgs-fmt"; };
          coreutils = plain "coreutils" { };
          util-linux = plain "util-linux" { };

          rustPlatform = {
            rustLibSrc = dummy "rust-lib-src" { } { };

            # pkgs/build-support/rust/build-rust-package/default.nix: one attribute
            # set; name defaults to pname-version; some source of vendored deps is
            # mandatory; cargoLock.lockFile is read (so it must exist and parse).
            buildRustPackage = args:
              assert builtins.isAttrs args
                || builtins.throw "buildRustPackage: expected an attribute set";
              let
                hasDeps = args ? cargoLock || args ? cargoHash || args ? cargoDeps || args ? cargoVendorDir;
                lock = builtins.fromTOML (builtins.readFile args.cargoLock.lockFile);
                name = args.name or "${args.pname}-${args.version}";
              in
              assert hasDeps
                || builtins.throw "cargoHash, cargoVendorDir, cargoDeps, or cargoLock must be set";
              assert !(args ? cargoLock) || lock ? package
                || builtins.throw "buildRustPackage: cargoLock.lockFile has no [[package]]";
              assert args ? src || builtins.throw "buildRustPackage: src is required";
              dummy name (removeAttrs args [ "meta" ]) {
                inherit (args) version;
                meta = args.meta or { };
              };
          };

          # pkgs/build-support/trivial-builders/default.nix (closed argument set).
          writeShellApplication =
            { name
            , text
            , runtimeInputs ? [ ]
            , runtimeEnv ? null
            , meta ? { }
            , passthru ? { }
            , checkPhase ? null
            , excludeShellChecks ? [ ]
            , extraShellCheckFlags ? [ ]
            , bashOptions ? [ "errexit" "nounset" "pipefail" ]
            , derivationArgs ? { }
            , inheritPath ? true
            }:
              assert runtimeEnv == null
                || builtins.all builtins.isString (builtins.attrValues runtimeEnv)
                || builtins.throw "writeShellApplication: runtimeEnv values must be strings";
              dummy name { inherit text runtimeInputs runtimeEnv; }
                ({
                  # Exposed so scripts/ci/check-flake.sh can `bash -n` the script body.
                  inherit text runtimeEnv;
                  meta = { mainProgram = name; } // meta;
                } // passthru);

          # pkgs/build-support/docker/default.nix: one attribute set, `name` required;
          # the image is <baseNameOf name>.tar.gz.
          dockerTools.buildLayeredImage =
            { name
            , tag ? null
            , contents ? [ ]
            , config ? { }
            , ...
            }@args:
            dummy "${builtins.baseNameOf name}.tar.gz" args { };

          runCommand = name: env: buildCommand:
            assert builtins.isAttrs env && builtins.isString buildCommand;
            dummy name (env // { inherit buildCommand; }) { };

          # pkgs/build-support/mkshell/default.nix (open argument set).
          mkShell =
            { name ? "nix-shell"
            , packages ? [ ]
            , inputsFrom ? [ ]
            , buildInputs ? [ ]
            , nativeBuildInputs ? [ ]
            , shellHook ? ""
            , ...
            }@attrs:
            dummy name attrs { };
        };
    in
    {
      inherit lib;
      legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" ] pkgsFor;
    };
}
