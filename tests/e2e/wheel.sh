#!/bin/bash
# .ci/wheel: this build packed as .ci/release packs the portable one, turned into a wheel, the wheel
# checked against the wheel spec by a reader of its own, installed by pip with no network (into a
# venv, and with --user into a throwaway home), and the installed ccl-harness run by a user without
# root from an unrelated directory: --version, validate --strict, list, the tiny card end to end
# and verify of its bundle, pip uninstall; the same tarball gives the same bytes; bad tarballs are
# refused with one message and nothing written. (The real static tarball, dist/, is not in CI.)
source "$(dirname "$0")/lib.sh"
: "${CCL_BUILD_DIR:?set by CTest}"
python=/usr/bin/python3
wheel_tool="$CCL_SOURCE_DIR/.ci/wheel"

if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "wheel: skipped: $python has no venv/ensurepip (Debian: apt-get install python3-venv)" >&2
    exit 125
fi

# Outside the root-owned build tree, so that an unprivileged user can use it (as install.sh).
base=$(mktemp -d /tmp/ccl-harness-wheel-XXXXXX)
trap 'rm -rf "$base"' EXIT
chmod 755 "$base"
user_home="$base/home"
mkdir -p "$user_home/experiments"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
# What a login shell gives: no CCL_HARNESS_HOME, no PYTHON*, no pip configuration of the runner's.
user_env=(env -i HOME="$user_home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1
    PIP_NO_INPUT=1 PIP_CONFIG_FILE=/dev/null)
in_user_dir() { (cd "$user_home/experiments" && "${as_user[@]}" "${user_env[@]}" "$@"); }

# 1. A release-shaped tarball of this build, packed as .ci/release's package() packs the portable one.
version=$(sed -n 's/^project(ccl-harness VERSION \([0-9.]*\).*/\1/p' "$CCL_SOURCE_DIR/CMakeLists.txt")
name="ccl-harness-$version-linux-x86_64"
# Stripped, as .ci/release ships it: a RelWithDebInfo binary is 200 MB of debug sections that
# the wheel would compress and pip unpack several times over, for nothing this test checks.
cmake --install "$CCL_BUILD_DIR" --strip --prefix "$base/stage/$name" >/dev/null
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$base/stage" -czf "$base/$name.tar.gz" "$name"
tarball="$base/$name.tar.gz"

expect_status 0 ".ci/wheel on a release tarball" -- "$wheel_tool" "$tarball" --out "$base/dist"
wheels=("$base"/dist/*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] && pass || fail "wanted one wheel in $base/dist: ${wheels[*]}"
whl=${wheels[0]}
expect_output ".ci/wheel names what it wrote" "wheel: wrote $whl"
# This build links Debian's shared libraries: the wheel must not claim manylinux for it.
if readelf -l "$CCL_BUILD_DIR/ccl-harness" | grep -q 'Requesting program interpreter'; then
    expect_eq "a dynamically linked build's wheel" "ccl_harness-$version-py3-none-linux_x86_64.whl" "$(basename "$whl")"
    expect_output "and .ci/wheel says why" "dynamically linked: tagged linux_x86_64"
else
    expect_eq "a static build's wheel" \
        "ccl_harness-$version-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64.whl" "$(basename "$whl")"
fi

# 2. The wheel read back independently: every member in RECORD with its sha256 (urlsafe base64, no
# padding) and size, nothing outside the four places a wheel may put files, the tags of the name in
# WHEEL, modes in external_attr, fixed times, .dist-info last, and the tarball's every file in it.
if problems=$("$python" - "$whl" "$tarball" "$version" <<'PY' 2>&1
import base64, csv, hashlib, io, sys, tarfile, zipfile
whl, tarball, version = sys.argv[1:]
problems = []
dist = "ccl_harness-" + version
z = zipfile.ZipFile(whl)
infos = z.infolist()
names = [i.filename for i in infos]
if len(set(names)) != len(names):
    problems.append("duplicate members")
allowed = ("ccl_harness/", dist + ".data/scripts/", dist + ".data/data/", dist + ".dist-info/")
for n in names:
    if n.startswith("/") or ".." in n.split("/") or not n.startswith(allowed):
        problems.append("member outside the wheel's places: " + n)
record_name = dist + ".dist-info/RECORD"
if names[-1] != record_name:
    problems.append("RECORD is not the last member: " + names[-1])
info_at = min(i for i, n in enumerate(names) if n.startswith(dist + ".dist-info/"))
if any(not n.startswith(dist + ".dist-info/") for n in names[info_at:]):
    problems.append(".dist-info is not at the end")
rows = list(csv.reader(io.StringIO(z.read(record_name).decode())))
listed = {r[0]: r for r in rows}
if set(listed) != set(names) or len(rows) != len(names):
    problems.append("RECORD and the members differ: %s" % sorted(set(listed) ^ set(names)))
for n in names:
    row = listed.get(n)
    if n == record_name:
        if row and row[1:] != ["", ""]:
            problems.append("RECORD lists a hash of itself")
        continue
    data = z.read(n)
    digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if row is None or row[1] != digest or row[2] != str(len(data)):
        problems.append("RECORD row wrong for %s: %s (actual %s,%d)" % (n, row, digest, len(data)))
for i in infos:
    if i.date_time != (1980, 1, 1, 0, 0, 0):
        problems.append("time of %s: %s" % (i.filename, i.date_time))
    if i.create_system != 3 or (i.external_attr >> 16) not in (0o100644, 0o100755):
        problems.append("mode of %s: %o" % (i.filename, i.external_attr >> 16))
binary = dist + ".data/scripts/ccl-harness"
if binary not in names or z.getinfo(binary).external_attr >> 16 != 0o100755:
    problems.append("no executable " + binary)
wheel = dict(l.split(": ", 1) for l in z.read(dist + ".dist-info/WHEEL").decode().splitlines() if l)
tags = [l.split(": ", 1)[1] for l in z.read(dist + ".dist-info/WHEEL").decode().splitlines() if l.startswith("Tag: ")]
stem = whl.rsplit("/", 1)[1][: -len(".whl")]
_, wheel_version, python_tag, abi_tag, platforms = stem.split("-")
want = ["%s-%s-%s" % (python_tag, abi_tag, p) for p in platforms.split(".")]
if wheel.get("Wheel-Version") != "1.0" or wheel.get("Root-Is-Purelib") != "false" or tags != want:
    problems.append("WHEEL %s, tags %s, the name says %s" % (wheel, tags, want))
meta = z.read(dist + ".dist-info/METADATA").decode()
if "\nName: ccl-harness\n" not in meta or "\nVersion: %s\n" % version not in meta or wheel_version != version:
    problems.append("METADATA name or version: " + meta[:200])
with tarfile.open(tarball) as t:
    for m in t.getmembers():
        if not m.isfile():
            continue
        rel = m.name.split("/", 1)[1]
        target = dist + (".data/scripts/" + rel[4:] if rel.startswith("bin/") else ".data/data/" + rel)
        if target not in names or z.read(target) != t.extractfile(m).read():
            problems.append("tarball file %s is not %s in the wheel" % (m.name, target))
        elif bool(m.mode & 0o111) != bool((z.getinfo(target).external_attr >> 16) & 0o111):
            problems.append("executable bit of %s lost" % m.name)
print("; ".join(problems[:10]))
PY
); then
    [ -z "$problems" ] && pass || fail "the wheel: $problems"
else
    fail "reading the wheel: $problems"
fi

# 3. Deterministic: the same tarball, again, byte for byte.
expect_status 0 ".ci/wheel again" -- "$wheel_tool" "$tarball" --out "$base/again"
cmp -s "$whl" "$base/again/$(basename "$whl")" && pass || fail "two wheels of one tarball differ"

# 4. Bad tarballs: exit 2, one message naming the problem, and nothing in --out.
make_bad() { # make_bad FILE KIND: a tarball with one thing wrong
    "$python" - "$1" "$2" "$name" <<'PY'
import io, sys, tarfile
path, kind, top = sys.argv[1:]
def add(t, name, data=b"x", mode=0o644, type_=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.type, info.linkname = (len(data) if type_ == tarfile.REGTYPE else 0), mode, type_, link
    t.addfile(info, io.BytesIO(data) if type_ == tarfile.REGTYPE else None)
with tarfile.open(path, "w:gz") as t:
    add(t, top + "/bin/ccl-harness", b"\x7fELF" + bytes(60), 0o755) if kind != "script" else None
    add(t, top + "/share/ccl-harness/clusters/local.yaml", b"name: local\n")
    if kind == "dotdot":
        add(t, top + "/../escape.txt")
    elif kind == "absolute":
        add(t, "/tmp/absolute.txt")
    elif kind == "symlink":
        add(t, top + "/share/ccl-harness/link", type_=tarfile.SYMTYPE, link="/etc/passwd")
    elif kind == "hardlink":
        add(t, top + "/share/ccl-harness/hard", type_=tarfile.LNKTYPE, link=top + "/bin/ccl-harness")
    elif kind == "script":
        add(t, top + "/bin/ccl-harness", b"#!/bin/sh\necho hi\n", 0o755)
PY
}
bad_case() { # bad_case WHAT NEEDLE TARBALL: .ci/wheel refuses TARBALL, naming NEEDLE, writing nothing
    local out="$base/bad-out"
    rm -rf "$out"
    expect_status 2 ".ci/wheel refuses $1" -- "$wheel_tool" "$3" --out "$out"
    expect_output "$1: the message" "wheel: error: "
    expect_output "$1: names the problem" "$2"
    [ "$(grep -c . <<<"$OUT")" -eq 1 ] && pass || fail "$1: more than one line: $OUT"
    [ ! -e "$out" ] && pass || fail "$1: $out was written: $(ls -A "$out")"
}
bad_case "a missing tarball" "$base/nothing.tar.gz: no such file" "$base/nothing.tar.gz"
printf 'not a tarball\n' >"$base/text.tar.gz"
bad_case "a text file" "$base/text.tar.gz: not a tar archive" "$base/text.tar.gz"
bad_case "a directory" "a directory, not a release tarball" "$base"
mkdir -p "$base/nobin/$name/share" && printf 'x\n' >"$base/nobin/$name/share/f"
tar -C "$base/nobin" -czf "$base/nobin.tar.gz" "$name"
bad_case "a tarball without bin/ccl-harness" "no $name/bin/ccl-harness; not a release tarball" "$base/nobin.tar.gz"
mkdir -p "$base/wrongtop/release/bin" && cp "$CCL_HARNESS" "$base/wrongtop/release/bin/ccl-harness"
tar -C "$base/wrongtop" -czf "$base/wrongtop.tar.gz" release
bad_case "another folder name" "the release folder must be ccl-harness-<version>-linux-x86_64" "$base/wrongtop.tar.gz"
for kind in dotdot absolute symlink hardlink script; do
    make_bad "$base/$kind.tar.gz" "$kind"
done
bad_case "a member with ../" "member \"$name/../escape.txt\": a path outside the release folder" "$base/dotdot.tar.gz"
bad_case "an absolute member" 'member "/tmp/absolute.txt": a path outside the release folder' "$base/absolute.tar.gz"
bad_case "a symbolic link" "member \"$name/share/ccl-harness/link\": a link (to '/etc/passwd')" "$base/symlink.tar.gz"
bad_case "a hard link" "member \"$name/share/ccl-harness/hard\": a link" "$base/hardlink.tar.gz"
bad_case "a script for a binary" "bin/ccl-harness: not an ELF executable" "$base/script.tar.gz"
expect_status 2 "no tarball given" -- "$wheel_tool"

# 5. A venv with the wheel, as the user; the installed copy run from an unrelated directory.
chmod 644 "$whl"
if [ "${#as_user[@]}" -gt 0 ]; then chown -R 65534:65534 "$user_home" "$base"; fi
venv="$base/venv"
exe="$venv/bin/ccl-harness"
expect_status 0 "python3 -m venv" -- in_user_dir "$python" -m venv "$venv"
expect_status 0 "pip install the wheel into the venv, offline" -- in_user_dir "$venv/bin/pip" install --no-index --no-deps "$whl"
[ -x "$exe" ] && [ "$(stat -c %a "$exe")" = 755 ] && pass || fail "$exe is not installed executable"
cmp -s "$exe" "$base/stage/$name/bin/ccl-harness" && pass || fail "the installed binary is not the tarball's"
for path in share/ccl-harness/templates/torch-ddp/local share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml \
    share/man/man1/ccl-harness.1 share/bash-completion/completions/ccl-harness; do
    [ -e "$venv/$path" ] && pass || fail "the venv lacks $path"
done
[ -x "$venv/share/ccl-harness/clusters/slurm-local/cluster.sh" ] && pass || fail "cluster.sh lost its executable bit"

expect_status 0 "the venv's ccl-harness --version" -- in_user_dir "$exe" --version
expect_output "--version names the version" "ccl-harness $version"
expect_output "--version names the libraries" "libraries: "
version_out=$OUT
expect_status 0 "python -m ccl_harness --version" -- in_user_dir "$venv/bin/python" -m ccl_harness --version
expect_eq "python -m ccl_harness runs the same binary" "$version_out" "$OUT"
expect_status 0 "ccl_harness.__version__" -- in_user_dir "$venv/bin/python" -c 'import ccl_harness; print(ccl_harness.__version__)'
expect_eq "the package's version" "$version" "$OUT"
expect_status 0 "the venv's ccl-harness finds its home in the venv" -- in_user_dir "$exe" -v list
expect_output "home named" "harness home $venv/share/ccl-harness"
expect_output "list shows the shipped profiles" "shipped $venv/share/ccl-harness/clusters/perlmutter.yaml"
expect_status 0 "validate --strict a reference card by path" -- \
    in_user_dir "$exe" validate --strict "$CCL_SOURCE_DIR/workloads/qwen3-4b-vllm-perlmutter/qwen3-4b-vllm-perlmutter.yaml"
expect_status 0 "the tiny card end to end" -- \
    in_user_dir "$exe" run "$CCL_SOURCE_DIR/workloads/tiny-ddp/tiny-ddp.yaml" --results "$base/results"
expect_output "the run ends with its headline metrics" "  metrics: avg_step_time "
bundles=("$base"/results/tiny-ddp-*.tar.zst)
[ -f "${bundles[0]}" ] && pass || fail "no bundle in $base/results"
expect_status 0 "verify the bundle" -- in_user_dir "$exe" verify "${bundles[0]}"
expect_status 0 "the run is in the user's results store" -- in_user_dir "$exe" results list --where card=tiny-ddp
expect_output "one run, recorded as it ended" "1 run"

expect_status 0 "pip uninstall" -- in_user_dir "$venv/bin/pip" uninstall -y ccl-harness
# pip removes the files it installed; folders left empty by data files stay (pip's way with them).
left=$(find "$venv/bin/ccl-harness" "$venv/share" "$venv"/lib/python3*/site-packages/ccl_harness* -type f 2>/dev/null || true)
[ -z "$left" ] && pass || fail "pip uninstall left: $left"

# 6. pip install --user into a throwaway home, where a login node's user puts tools. Debian marks
# its python3 externally managed (PEP 668), which --user installs must override; a python3 without
# pip (python3-venv alone) runs pip from ensurepip's bundled wheel.
user_pip=("$python" -m pip)
if ! "$python" -m pip --version >/dev/null 2>&1; then
    bundled=$("$python" -c 'import ensurepip, glob, os; print(sorted(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")) + glob.glob("/usr/share/python-wheels/pip-*.whl"))[-1])')
    user_pip=("$python" "$bundled/pip")
fi
break_system=()
if "${user_pip[@]}" install --help 2>/dev/null | grep -q -- --break-system-packages; then break_system=(--break-system-packages); fi
expect_status 0 "pip install --user, offline" -- in_user_dir "${user_pip[@]}" install --user "${break_system[@]}" --no-index --no-deps "$whl"
user_exe="$user_home/.local/bin/ccl-harness"
[ -x "$user_exe" ] && pass || fail "no $user_exe"
expect_status 0 "the user's .local/bin/ccl-harness on PATH finds .local/share/ccl-harness" -- \
    in_user_dir env PATH="$user_home/.local/bin:/usr/bin:/bin" ccl-harness -v validate --strict "$user_home/.local/share/ccl-harness/workloads/tiny-ddp/tiny-ddp.yaml"
expect_output "the user home named" "harness home $user_home/.local/share/ccl-harness"
expect_status 0 "pip uninstall --user" -- in_user_dir "${user_pip[@]}" uninstall -y "${break_system[@]}" ccl-harness
# The results store the runs above recorded (${XDG_DATA_HOME:-~/.local/share}/ccl-harness/results.db)
# is the user's data, not the package's: it stays, as pip leaves every file it did not install.
left=$(find "$user_home/.local" -type f ! -path "$user_home/.local/share/ccl-harness/results.db*")
[ -z "$left" ] && pass || fail "pip uninstall left in ~/.local: $left"

finish
