#!/bin/bash
# `cmake --install` to a prefix, then the installed copy run by a user without root, from an
# unrelated directory, end to end: what a contributor on a login node does (README "Install").
# As root (CI) the installed copy runs as `nobody`; otherwise as the current, already unprivileged, user.
source "$(dirname "$0")/lib.sh"
: "${CCL_BUILD_DIR:?set by CTest}"

# The prefix lives where an unprivileged user can read it: outside the root-owned checkout.
base=$(mktemp -d /tmp/ccl-harness-install-XXXXXX)
trap 'rm -rf "$base"' EXIT
chmod 755 "$base"
prefix="$base/prefix"

user_home="$base/home"
mkdir -p "$user_home/experiments"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
    chown -R 65534:65534 "$user_home" "$base"
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    # A user owns the build tree they install from; here the tree is root's, so lend the user the
    # one file `cmake --install` writes back into it.
    touch "$CCL_BUILD_DIR/install_manifest.txt"
    chmod 666 "$CCL_BUILD_DIR/install_manifest.txt"
fi
# A clean environment: no CCL_HARNESS_HOME, nothing from the test runner but PATH and HOME.
user_env=(env -i HOME="$user_home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8)
in_user_dir() { (cd "$user_home/experiments" && "${as_user[@]}" "${user_env[@]}" "$@"); }

[ "$(id -u)" -ne 0 ] || { [ "$("${as_user[@]}" id -u)" != 0 ] && pass || fail "setpriv did not drop root"; }
expect_status 0 "cmake --install to a prefix, as the user" -- in_user_dir cmake --install "$CCL_BUILD_DIR" --prefix "$prefix"
for path in bin/ccl-harness share/ccl-harness/templates/torch-ddp/local share/ccl-harness/clusters/local.yaml \
    share/ccl-harness/containers share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml share/ccl-harness/workloads/tiny-ddp/train.py \
    share/ccl-harness/docs/card.md share/ccl-harness/docs/schema/card.schema.json share/man/man1/ccl-harness.1 \
    share/bash-completion/completions/ccl-harness share/zsh/site-functions/_ccl-harness \
    share/fish/vendor_completions.d/ccl-harness.fish; do
    [ -e "$prefix/$path" ] && pass || fail "installed tree lacks $path"
done
[ -x "$prefix/share/ccl-harness/clusters/slurm-local/cluster.sh" ] && pass || fail "cluster.sh lost its executable bit"

# Proof that the installed data is what runs, not the source tree compiled into the binary: a
# marker in the installed local template must show up in the rendered script.
marker="# installed-copy-marker-$$"
in_user_dir sh -c 'printf "%s\n" "$1" >>"$2"' - "$marker" "$prefix/share/ccl-harness/templates/torch-ddp/local/launch.sh.mustache"

moved="$base/elsewhere/prefix"
for installed in "$prefix" "$moved"; do
    if [ "$installed" = "$moved" ]; then
        # Relocatable: the home is found beside the executable, not where it was installed.
        in_user_dir mkdir -p "$base/elsewhere" && in_user_dir mv "$prefix" "$moved"
    fi
    exe="$installed/bin/ccl-harness"
    expect_status 0 "installed: validate its own reference card ($installed)" -- \
        in_user_dir "$exe" validate --strict "$installed/share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml"
    expect_status 0 "installed: run the tiny card as a user ($installed)" -- \
        in_user_dir "$exe" run "$installed/share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml"
    run_dir=$(sed -n 's/^  run directory: //p' <<<"$OUT" | tail -n 1)
    case "$run_dir" in "$user_home"/experiments/results/tiny-ddp-*) pass ;; *) fail "run directory not under the user's ./results: [$run_dir]" ;; esac
    grep -qF -- "$marker" "$run_dir/rendered/launch.sh" && pass || fail "the run did not use the installed templates ($installed)"
    bundle=$(ls "$user_home"/experiments/results/*.tar.zst | tail -n 1)
    expect_status 0 "installed: verify the bundle" -- in_user_dir "$exe" verify "$bundle"
done

# Explicit choices win, and a wrong one is an error rather than a silent fall-back.
exe="$moved/bin/ccl-harness"
expect_status 2 "--home without templates/" -- in_user_dir "$exe" --home "$base" render "$moved/share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml" --out "$user_home/r1"
expect_output "--home named" "--home $base: no templates/ there"
expect_status 2 "CCL_HARNESS_HOME without templates/" -- \
    in_user_dir env CCL_HARNESS_HOME="$base" "$exe" render "$moved/share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml" --out "$user_home/r2"
expect_output "CCL_HARNESS_HOME named" "CCL_HARNESS_HOME=$base: no templates/ there"
[ ! -e "$user_home/r1" ] && [ ! -e "$user_home/r2" ] && pass || fail "a refused render wrote output"
expect_status 0 "--home pointing at the checkout" -- in_user_dir "$exe" --home "$CCL_SOURCE_DIR" render "$moved/share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml" --out "$user_home/r3"
grep -qF -- "$marker" "$user_home/r3/launch.sh" && fail "--home was ignored: the installed template rendered" || pass

# A build tree belongs to the checkout it sits in (a fresh clone given a copied build/), not to
# the source path compiled into it.
clone="$base/clone"
mkdir -p "$clone/build"
cp -r "$CCL_SOURCE_DIR/templates" "$CCL_SOURCE_DIR/clusters" "$CCL_SOURCE_DIR/containers" "$clone/"
cp "$CCL_HARNESS" "$clone/build/ccl-harness"
printf '%s\n' "$marker" >>"$clone/templates/torch-ddp/local/launch.sh.mustache"
expect_status 0 "a build tree in another checkout" -- "$clone/build/ccl-harness" render "$CCL_SOURCE_DIR/workloads/tiny-ddp/tiny-ddp.yaml" --out "$base/r4"
grep -qF -- "$marker" "$base/r4/launch.sh" && pass || fail "build/ccl-harness did not use the checkout it sits in"

# Building the tool alone needs no Catch2; the tests do.
configure() { cmake -S "$CCL_SOURCE_DIR" -B "$base/$1" -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON "${@:2}"; }
expect_status 0 "configure with -DHARNESS_TESTS=OFF and no Catch2" -- configure no-tests -DHARNESS_TESTS=OFF
expect_status 1 "configure with tests and no Catch2 fails" -- configure with-tests -DHARNESS_TESTS=ON
expect_output "the failure names Catch2" "Catch2"

finish
