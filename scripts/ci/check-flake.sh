#!/usr/bin/env bash
# Offline checks of flake.nix: what can be verified without network and with the old
# Nix 2.8 (which cannot evaluate real nixpkgs >= 25.11):
#   syntax, pins, the rustc == rust-toolchain.toml assertion (it must pass AND fire),
#   output structure (`nix flake show` / `nix flake check --no-build`) against the
#   stand-in nixpkgs in nix/stand-in, apps (Nix 2.8 does not validate them), the
#   matrix wrapper script (bash -n, shellcheck), and Nix formatting (nixpkgs-fmt --check).
# Not verified here: that anything actually builds, runs or passes its tests under real
# nixpkgs; that needs `nix flake check` on a networked machine with Nix >= 2.18.
#
# Runs on a copy of the files git knows about (tracked + untracked-not-ignored), because
# a flake in a git tree sees only tracked files and target/ must not be copied; the
# committed result sets are left out (see below).
# Prints one line per check and exits non-zero if any check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."

failures=0
ok() { printf 'ok   %s\n' "$*"; }
fail() {
    printf 'FAIL %s\n' "$*"
    failures=$((failures + 1))
}
die() {
    printf 'FAIL %s\n' "$*" >&2
    exit 1
}

{ command -v nix >/dev/null && command -v nix-instantiate >/dev/null; } ||
    die "nix not found: install Nix >= 2.8 (Debian 12: apt-get install nix-bin; .ci/run does this)"
command -v nixpkgs-fmt >/dev/null ||
    die "nixpkgs-fmt not found: cargo install --locked nixpkgs-fmt@1.3.0 (.ci/run does this)"
command -v shellcheck >/dev/null ||
    die "shellcheck not found: apt-get install shellcheck (.ci/run does this); writeShellApplication runs it at build time"
command -v git >/dev/null || die "git not found: the flake is checked as git presents it"
git_err=$(git rev-parse --is-inside-work-tree 2>&1 >/dev/null) ||
    die "not usable as a git work tree (the flake is checked as git presents it): $git_err"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flake="$work/flake"
mkdir -p "$flake" "$work/cache"

# Nix as root on a fresh machine: flakes are experimental in 2.8, caches go to a temp dir,
# nothing may be fetched (every fetch would fail without network anyway).
export XDG_CACHE_HOME="$work/cache"
export NIX_CONFIG="experimental-features = nix-command flakes
warn-dirty = false"
nix_timeout_s=300

# --- the tree as a flake would see it -------------------------------------------------
# Except the result sets under results/ (its own files stay, so `./results` is there): no
# check here builds the site, and every nix command below copies the tree into the store,
# file by file (~2 s of kernel time each for 2,200 files, 1,745 of them results').
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
        case $f in results/*/*) continue ;; esac
        [ -e "$f" ] && printf '%s\0' "$f"
    done |
    tar --null -T - -cf - | tar -xf - -C "$flake"
untracked=$(git ls-files --others --exclude-standard -- flake.nix flake.lock nix Cargo.toml Cargo.lock \
    rust-toolchain.toml matrix.toml | tr '\n' ' ')
if [ -n "$untracked" ]; then
    printf 'note untracked, checked anyway; a real nix run ignores them until committed: %s\n' "$untracked"
fi
[ -f "$flake/flake.nix" ] || die "flake.nix is missing"
[ -f "$flake/matrix.toml" ] ||
    echo "note matrix.toml is missing: checks.smoke and argument-less 'nix run .#matrix' would fail"

stand_in="path:$flake/nix/stand-in"
on_stand_in=(--override-input nixpkgs "$stand_in" --no-write-lock-file)
# nix with a time limit; stderr kept for the report, "evaluating/checking" chatter dropped.
run_nix() {
    local log="$work/nix.log" rc=0
    timeout "$nix_timeout_s" nix "$@" 2>"$log" || rc=$?
    grep -v -e '^evaluating ' -e "^checking " -e 'not writing modified lock file' \
        -e "^• Added input 'nixpkgs'" -e "^    'path:$flake" "$log" >&2 || true
    return "$rc"
}

# --- 1. syntax --------------------------------------------------------------------------
while IFS= read -r f; do
    if nix-instantiate --parse "$flake/$f" >/dev/null 2>"$work/parse.log"; then
        ok "syntax: $f"
    else
        fail "syntax: $f: $(cat "$work/parse.log")"
    fi
done < <(cd "$flake" && find flake.nix nix -name '*.nix' | sort)

# --- 2. pins: every input by full commit; a committed flake.lock must agree ------------
pins=$(nix eval --impure --raw --expr "
  let
    flake = import $flake/flake.nix;
    inputs = flake.inputs or { };
    revOf = url: builtins.match \".*[/=]([0-9a-f]{40})\" url;
    bad = builtins.filter (n: !(inputs.\${n} ? url) || revOf inputs.\${n}.url == null)
      (builtins.attrNames inputs);
    lockPath = $flake + \"/flake.lock\";
    lock = builtins.fromJSON (builtins.readFile lockPath);
    lockBad = builtins.filter
      (n: (lock.nodes.\${n}.locked.rev or null) != builtins.head (revOf inputs.\${n}.url))
      (builtins.filter (n: builtins.elem n bad == false) (builtins.attrNames inputs));
    lockMsg =
      if !(builtins.pathExists lockPath) then \"\"
      else if lock.version != 7 then \"flake.lock version is not 7\"
      else if lockBad != [ ] then \"flake.lock rev differs from the URL for: \" + toString lockBad
      else \"\";
  in
  if inputs == { } then \"no inputs declared\"
  else if bad != [ ] then \"not pinned to a 40-hex commit: \" + toString bad
  else lockMsg
" 2>&1) || pins="could not evaluate flake.nix inputs: $pins"
if [ -z "$pins" ]; then
    ok "pins: every input URL ends in a 40-hex commit$([ -f "$flake/flake.lock" ] && echo '; flake.lock agrees' || echo '; no flake.lock (written by the first networked run)')"
else
    fail "pins: $pins"
fi

# --- 3. toolchain: rust-toolchain.toml names an exact version the flake asserts --------
channel=$(sed -n 's/^[[:space:]]*channel[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' "$flake/rust-toolchain.toml")
if [[ "$channel" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    ok "toolchain: rust-toolchain.toml pins channel $channel"
else
    fail "toolchain: rust-toolchain.toml channel '$channel' is not an exact x.y.z version"
fi
if run_nix eval --raw "path:$flake#packages.x86_64-linux.workspace.name" "${on_stand_in[@]}" >/dev/null; then
    ok "toolchain: flake evaluates with rustc $channel (stand-in for the pinned nixpkgs)"
else
    fail "toolchain: flake does not evaluate with rustc $channel (see above)"
fi
# The assertion must also fire: same stand-in, another rustc version.
mismatch="$work/stand-in-mismatch"
cp -r "$flake/nix/stand-in" "$mismatch"
sed -i 's/rustcVersion = "[^"]*"/rustcVersion = "0.0.0-mismatch"/' "$mismatch/flake.nix"
if timeout "$nix_timeout_s" nix eval --raw "path:$flake#packages.x86_64-linux.workspace.name" \
    --override-input nixpkgs "path:$mismatch" --no-write-lock-file >/dev/null 2>"$work/mismatch.log"; then
    fail "toolchain: flake still evaluates when nixpkgs' rustc differs from rust-toolchain.toml"
elif grep -q 'rust-toolchain.toml' "$work/mismatch.log"; then
    ok "toolchain: a different nixpkgs rustc is refused ($(grep -o 'nixpkgs ships rustc [^ ]* but rust-toolchain.toml says [^;]*' "$work/mismatch.log" | head -n1))"
else
    fail "toolchain: rustc mismatch fails for another reason: $(tail -n 3 "$work/mismatch.log")"
fi

# --- 4. structure against the stand-in --------------------------------------------------
if run_nix flake show "path:$flake" "${on_stand_in[@]}" >"$work/show.txt"; then
    ok "structure: nix flake show ($(grep -c -e ': package' -e ': derivation' -e ': app' \
        -e ': development environment' "$work/show.txt") outputs over x86_64-linux, aarch64-linux)"
else
    fail "structure: nix flake show"
fi
if run_nix flake check "path:$flake" "${on_stand_in[@]}" --no-build; then
    ok "structure: nix flake check --no-build"
else
    fail "structure: nix flake check --no-build"
fi
# Each output attribute is evaluated once (one evaluation copies the tree into the store:
# about a second and a half each): the names under it that are missing or not derivations.
# $1: the attribute; $2: a Nix expression, sys -> the names wanted under it on that system.
# The --apply argument is Nix code, built in single quotes on purpose.
# shellcheck disable=SC2016
is_drv='x: builtins.isAttrs x && x ? drvPath && builtins.isString x.drvPath'
# shellcheck disable=SC2016
not_derivations() {
    run_nix eval --raw "path:$flake#$1" "${on_stand_in[@]}" --apply '
      out: let
        wanted = '"$2"';
        isDrv = '"$is_drv"';
        bad = sys: builtins.filter (n: !((out.${sys} or { }) ? ${n}) || !(isDrv out.${sys}.${n}))
          (wanted sys);
      in builtins.concatStringsSep " " (builtins.concatMap
        (sys: map (n: "'"$1"'.${sys}.${n}") (bad sys)) [ "x86_64-linux" "aarch64-linux" ])'
}
# One image per binary the matrices name, for `matrix k8s render` (x86_64-linux).
images=""
for b in loadgen $(sed -n 's/^binary = "\(.*\)"/\1/p' "$flake/matrix.toml" "$flake/matrix-full.toml" | sort -u); do
    images="$images \"image-$b\""
done
missing=""
for want in \
    "packages|sys: [ \"workspace\" \"matrix\" \"default\" \"site\" ] ++ (if sys == \"x86_64-linux\" then [$images ] else [ ])" \
    'devShells|sys: [ "default" ]' \
    'checks|sys: [ "build" "tests" "clippy" "fmt" "smoke" "nix-fmt" ]'; do
    attr=${want%%|*}
    if bad=$(not_derivations "$attr" "${want#*|}"); then
        missing="$missing $bad"
    else
        missing="$missing $attr (could not be evaluated)"
    fi
done
# formatter.<system> is itself the derivation.
# shellcheck disable=SC2016
bad=$(run_nix eval --raw "path:$flake#formatter" "${on_stand_in[@]}" --apply '
  f: let isDrv = '"$is_drv"'; in builtins.concatStringsSep " " (map (sys: "formatter.${sys}")
    (builtins.filter (sys: !(f ? ${sys} && isDrv f.${sys})) [ "x86_64-linux" "aarch64-linux" ]))') ||
    bad="formatter (could not be evaluated)"
read -r -a missing_list <<<"$missing $bad"
missing="${missing_list[*]-}"
if [ -n "$missing" ]; then
    fail "structure: missing or not a derivation: $missing"
else
    ok "structure: packages {workspace, matrix, default, site}, devShells.default, formatter, checks {build, tests, clippy, fmt, smoke, nix-fmt} on both systems"
    ok "structure: an image-<binary> package (dockerTools) for loadgen and every service of matrix.toml and matrix-full.toml"
fi

# --- 5. apps, by hand (Nix 2.8 does not validate them) ---------------------------------
# The --apply arguments are Nix code, single-quoted on purpose.
# shellcheck disable=SC2016
apps=$(run_nix eval --raw "path:$flake#apps" "${on_stand_in[@]}" --apply '
  apps: builtins.concatStringsSep "\n" (builtins.concatLists (builtins.attrValues (builtins.mapAttrs
    (sys: byName: map
      (name: let a = byName.${name}; in builtins.concatStringsSep " " [
        sys name (a.type or "-") (a.program or "-")
        (if (a.meta.description or "") != "" then "described" else "undescribed") ])
      (builtins.attrNames byName))
    apps)))') || apps=""
# shellcheck disable=SC2016
wrappers=$(run_nix eval --raw "path:$flake#packages" "${on_stand_in[@]}" --apply '
  p: builtins.concatStringsSep "\n" (builtins.attrValues (builtins.mapAttrs
    (sys: ps: "${sys} ${ps.matrix.outPath} ${ps.workspace.outPath}") p))') || wrappers=""
for sys in x86_64-linux aarch64-linux; do
    read -r _ wrapper workspace < <(grep "^$sys " <<<"$wrappers" || echo "- - -")
    for name in matrix default; do
        read -r _ _ type program described < <(grep "^$sys $name " <<<"$apps" || echo "- - - - -")
        if [ "$type" != "app" ]; then
            fail "apps.$sys.$name: type is '$type', want 'app'"
        elif [ "$program" != "$wrapper/bin/matrix" ]; then
            fail "apps.$sys.$name: program '$program' is not the matrix wrapper ($wrapper/bin/matrix)"
        elif [ "$described" != "described" ]; then
            fail "apps.$sys.$name: no meta.description"
        else
            ok "apps.$sys.$name: type app, program = packages.$sys.matrix/bin/matrix, described"
        fi
    done
done

# --- 6. the matrix wrapper: valid bash, provenance set, runs the workspace's runner ----
text=$(run_nix eval --raw "path:$flake#packages.x86_64-linux.matrix.text" "${on_stand_in[@]}") || text=""
env_names=$(run_nix eval --raw "path:$flake#packages.x86_64-linux.matrix.runtimeEnv" "${on_stand_in[@]}" \
    --apply 'e: toString (builtins.attrNames e)') || env_names=""
read -r _ _ workspace < <(grep "^x86_64-linux " <<<"$wrappers" || echo "- - -")
if [ -z "$text" ] || ! bash -n <<<"$text" 2>"$work/bash.log"; then
    fail "wrapper: script body is empty or not valid bash: $(cat "$work/bash.log" 2>/dev/null)"
elif ! grep -qF "exec \"$workspace/bin/matrix\"" <<<"$text"; then
    fail "wrapper: does not exec the workspace's matrix ($workspace/bin/matrix)"
elif [ "$env_names" != "PINGMATRIX_FLAKE_REV PINGMATRIX_NIXPKGS_REV" ]; then
    fail "wrapper: runtimeEnv is '$env_names', want PINGMATRIX_FLAKE_REV PINGMATRIX_NIXPKGS_REV"
else
    ok "wrapper: valid bash, execs packages.workspace/bin/matrix, sets PINGMATRIX_FLAKE_REV and PINGMATRIX_NIXPKGS_REV"
fi
# writeShellApplication's build fails on any shellcheck finding; check the same script
# (its preamble: bash, errexit/nounset/pipefail) here rather than on the networked machine.
as_shell_application() { # <script body> <output file>
    printf '#!/usr/bin/env bash\nset -o errexit\nset -o nounset\nset -o pipefail\n%s\n' "$1" >"$2"
}
as_shell_application "$text" "$work/wrapper.sh"
if [ -n "$text" ] && shellcheck "$work/wrapper.sh" >"$work/shellcheck.log" 2>&1; then
    ok "wrapper: shellcheck clean (as writeShellApplication requires)"
else
    fail "wrapper: shellcheck: $(cat "$work/shellcheck.log")"
fi

# The default-argument logic, run for real with a fake runner that prints its arguments.
fake="$work/fake-matrix"
printf '#!/usr/bin/env bash\necho "$*"\n' >"$fake"
chmod +x "$fake"
sed "s|exec \"$workspace/bin/matrix\"|exec \"$fake\"|g" "$work/wrapper.sh" >"$work/wrapper-fake.sh"
mkdir -p "$work/cwd-with" "$work/cwd-without"
touch "$work/cwd-with/matrix.toml"
wrapper_case() { # <dir> <expected ERE> <args...>
    local dir=$1 want=$2 got rc=0
    shift 2
    got=$(cd "$dir" && bash "$work/wrapper-fake.sh" "$@" 2>/dev/null) || rc=$?
    if [ "$rc" -eq 0 ] && [[ "$got" =~ $want ]]; then
        ok "wrapper: matrix ${*:-(no arguments)} -> runner gets '$got'"
    else
        fail "wrapper: matrix $* (in $(basename "$dir")) -> '$got' (exit $rc), want /$want/"
    fi
}
ts='results'
wrapper_case "$work/cwd-with" "^run --config matrix.toml --out $ts\$"
wrapper_case "$work/cwd-with" "^run --config matrix.toml --out $ts --quick\$" --quick
wrapper_case "$work/cwd-with" "^run --out $ts --config other.toml\$" --config other.toml
wrapper_case "$work/cwd-with" "^run --config matrix.toml --out x\$" --out x
wrapper_case "$work/cwd-with" "^plan --config x\$" plan --config x
wrapper_case "$work/cwd-with" "^--help\$" --help
if [ -f "$flake/matrix.toml" ]; then
    wrapper_case "$work/cwd-without" "^run --config /nix/store/[a-z0-9]{32}-source/matrix.toml --out $ts\$"
else
    rc=0
    (cd "$work/cwd-without" && bash "$work/wrapper-fake.sh") >/dev/null 2>&1 || rc=$?
    if [ "$rc" -eq 2 ]; then
        ok "wrapper: without any matrix.toml it refuses clearly (exit 2)"
    else
        fail "wrapper: without any matrix.toml it exits $rc, want 2"
    fi
fi

# The formatter is a writeShellApplication too: same bash -n + shellcheck gate.
fmt_text=$(run_nix eval --raw "path:$flake#formatter.x86_64-linux.text" "${on_stand_in[@]}") || fmt_text=""
as_shell_application "$fmt_text" "$work/formatter.sh"
if [ -n "$fmt_text" ] && bash -n "$work/formatter.sh" && shellcheck "$work/formatter.sh" >"$work/shellcheck.log" 2>&1; then
    ok "formatter: script is valid bash and shellcheck clean"
else
    fail "formatter: script empty, invalid or not shellcheck clean: $(cat "$work/shellcheck.log")"
fi

# --- 7. Nix formatting ------------------------------------------------------------------
if (cd "$flake" && nixpkgs-fmt --check flake.nix nix) >"$work/fmt.log" 2>&1; then
    ok "format: nixpkgs-fmt --check flake.nix nix/"
else
    fail "format: nixpkgs-fmt --check flake.nix nix/ (run nixpkgs-fmt flake.nix nix): $(tr '\n' ' ' <"$work/fmt.log")"
fi

echo "not checked here: real builds, tests, clippy, smoke run and dev shell under the pinned nixpkgs (need network and Nix >= 2.18)"
if [ "$failures" -gt 0 ]; then
    echo "check-flake: $failures check(s) FAILED"
    exit 1
fi
echo "check-flake: all checks passed"
