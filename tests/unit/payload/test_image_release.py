"""The trainer image against the release manifests, without building anything: the NPU variant's build
(base, build arguments, pins) rendered from a release and checked against the torch_npu table and
CANN's ranges; the CPU variant's build unchanged; build-image.sh with a stand-in podman; the bash
entry point; check-image-env.py --release on a made-up image."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from ansible_collections.ascendops.cluster.plugins.module_utils import ascend_release as r
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[3]
PAYLOAD = REPO / "payload"
RELEASES = str(REPO / "releases")


def load(name):
    return r.load_release(name, RELEASES)


def containerfile_args():
    return set(re.findall(r"^ARG (\w+)", (PAYLOAD / "Containerfile").read_text(), re.M))


def requirements(python="3.11"):
    """payload/requirements.txt for one Python: {canonical name: Requirement}."""
    out = {}
    for line in (PAYLOAD / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"python_version": python}):
            out[canonicalize_name(req.name)] = req
    return out


def rendered_set(plan, python):
    """What the Containerfile installs: requirements minus torch and the pinned packages, plus the pins."""
    pins = {canonicalize_name(k): v for k, v in plan["pins"].items()}
    out = {name: str(next(iter(req.specifier))).lstrip("=") for name, req in requirements(python).items()
           if name not in pins and name != "torch"}
    out.update(pins)
    return out


def declared_conflicts(versions, names=("numpy", "protobuf", "torch")):
    """Requirements on ``names`` declared by packages of ``versions`` that this virtualenv holds at the same
    version (their published metadata), which the pinned ``names`` do not meet."""
    out = []
    for dist, version in versions.items():
        try:
            meta = md.distribution(dist)
        except md.PackageNotFoundError:
            continue
        if meta.version.split("+")[0] != version.split("+")[0]:
            continue
        for text in meta.requires or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            name = canonicalize_name(req.name)
            if name in names and name in versions and not req.specifier.contains(versions[name], prereleases=True):
                out.append(f"{dist} {version} needs {req.name}{req.specifier}, pinned {versions[name]}")
    return out


# ------------------------------------------------------------------------------ the NPU variant, rendered

@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_npu_variant_rendered_from_the_release_fits_the_compatibility_table(arch):
    rel = load("910b-cann8.2.rc1")
    plan = r.image_build(rel, arch)
    args = plan["build_args"]
    assert set(args) <= containerfile_args()  # every build argument is one the Containerfile declares
    # base: the vendor's CANN image of the release's CANN and Python
    assert plan["base"] == args["BASE_IMAGE"] == "quay.io/ascend/cann:8.2.rc1-910b-ubuntu22.04-py3.11"
    m = re.match(r"^quay\.io/ascend/cann:(?P<cann>[^-]+)-910b-ubuntu22\.04-py(?P<py>[\d.]+)$", plan["base"])
    assert m and m["cann"] == rel["image"]["cann"].lower() and m["py"] == rel["image"]["python"]
    # torch from its wheel, torch_npu and CANN paired per Ascend/pytorch's table
    torch = args["TORCH_SPEC"].split("==")[1]
    npu = args["TORCH_NPU_SPEC"].split("==")[1]
    image = dict(rel["image"], torch=torch, torch_npu=npu)
    assert r.check_torch_npu("render", image, rel["table"]) == []
    assert (torch, args["TORCH_INDEX_URL"]) == (("2.6.0+cpu", r.TORCH_CPU_INDEX) if arch == "x86_64" else ("2.6.0", ""))
    # numpy and protobuf within CANN's range, and what the requirements' packages declare of them
    pins = dict(p.split("==") for p in shlex.split(args["PIN_SPECS"]))
    for pkg in ("numpy", "protobuf"):
        assert r.in_pyrange(pins[pkg], rel["cann_python"][pkg]) is True, pkg
    assert declared_conflicts(rendered_set(plan, rel["image"]["python"])) == []
    # the label carries the release
    assert json.loads(args["RELEASE_LABEL"])["release"] == "910b-cann8.2.rc1"
    assert r.check_image_label("render", args["RELEASE_LABEL"], rel) == []


def test_without_the_tensorboard_pin_the_npu_variant_conflicts_with_protobuf_for_cann():
    try:
        md.distribution("tensorboard")
    except md.PackageNotFoundError:
        pytest.skip("tensorboard not in this virtualenv")
    rel = load("910b-cann8.2.rc1")
    rel["image"]["pins"] = {}
    found = declared_conflicts(rendered_set(r.image_build(rel), "3.11"))
    assert any(f.startswith("tensorboard 2.21.0 needs protobuf") for f in found), found


def test_a_release_whose_torch_npu_does_not_pair_is_refused_by_the_render_checks():
    rel = load("910b-cann8.2.rc1")
    rel["image"]["torch_npu"] = "2.6.0.post3"  # the CANN 8.3.RC1 build
    assert [f["component"] for f in r.check_release(rel)] == ["image CANN"]
    rel["image"]["numpy"] = "2.4.6"
    assert "numpy" in [f["component"] for f in r.check_release(rel)]


def test_a_release_without_a_trainer_image_cannot_be_rendered():
    with pytest.raises(r.ReleaseError, match="image.trainer: release 910b-cann8.0.0 has no trainer image"):
        r.image_build(load("910b-cann8.0.0"))


# ------------------------------------------------------------------------------ the CPU variant, unchanged

def test_cpu_variant_rendered_from_sim_is_todays_cpu_build():
    plan = r.image_build(load("sim"), "x86_64")
    args = plan["build_args"]
    script = (PAYLOAD / "build-image.sh").read_text()
    assert f"SIM_BASE={args['BASE_IMAGE']}" in script and f"SIM_TORCH={args['TORCH_SPEC']}" in script
    assert args["TORCH_NPU_SPEC"] == "" and args["TORCH_INDEX_URL"] == ""
    # the replacement pins are the very versions requirements.txt pins for the image's Python 3.11
    req = requirements("3.11")
    for spec in shlex.split(args["PIN_SPECS"]):
        name, version = spec.split("==")
        assert str(req[canonicalize_name(name)].specifier) == f"=={version}", spec
    assert declared_conflicts(rendered_set(plan, "3.11")) == []


def test_containerfile_drops_exactly_the_pinned_lines():
    """The Containerfile's grep pattern, run on requirements.txt with the NPU variant's pins."""
    args = r.image_build(load("910b-cann8.2.rc1"))["build_args"]
    drop = "^torch==" + "".join(f"|^{p.split('==')[0]}==" for p in shlex.split(args["PIN_SPECS"]))
    assert "grep -Eiv \"$drop\"" in (PAYLOAD / "Containerfile").read_text()
    kept = [ln for ln in (PAYLOAD / "requirements.txt").read_text().splitlines()
            if not re.search(drop, ln, re.I)]
    names = {ln.split("==")[0].lower() for ln in kept if "==" in ln}
    assert {"numpy", "protobuf", "tensorboard", "deepspeed", "transformers", "torch"}.isdisjoint(names)
    assert {"tensorboard-data-server", "accelerate", "pyyaml"} <= names


# ------------------------------------------------------------------------------ build-image.sh, stand-in podman

PODMAN = """#!/bin/bash
echo "$*" >> "$PODMAN_LOG"
case "$1 $2" in
  "image exists") [ "$3" != "${PODMAN_MISSING:-none}" ]; exit $? ;;
  "image inspect") echo sha256:0000; exit 0 ;;
  "save --output") : > "$3"; exit 0 ;;
esac
exit 0
"""


def build(tmp_path, **env):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "podman").write_text(PODMAN)
    (bindir / "podman").chmod(0o755)
    log = tmp_path / "podman.log"
    log.write_text("")
    full = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PODMAN_LOG=str(log),
                WHEEL_DIR=str(tmp_path), FORCE="1", **env)
    for key in ("RELEASE", "BASE_IMAGE", "TORCH_SPEC", "IMAGE_TAG", "PYTHON"):
        if key not in env:
            full.pop(key, None)
    proc = subprocess.run(["bash", str(PAYLOAD / "build-image.sh"), str(tmp_path / "out.tar")], env=full,
                          capture_output=True, text=True, timeout=120, check=False)
    builds = [ln for ln in log.read_text().splitlines() if ln.startswith("build ")]
    return proc, builds[0] if builds else ""


def test_build_image_default_is_the_cpu_build_labelled_sim(tmp_path):
    proc, line = build(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--build-arg BASE_IMAGE=localhost/ascendops-sim-base:bookworm" in line
    assert "--build-arg TORCH_SPEC=torch==2.13.0+cpu" in line and "--build-arg TORCH_NPU_SPEC= " in line
    assert "--tag localhost/ascendops-trainer:latest" in line
    label = re.search(r"--label ascendops.release=(\{.*?\}) --tag", line).group(1)
    assert r.check_image_label("cpu", label, load("sim")) == []


def test_build_image_for_the_npu_release(tmp_path):
    proc, line = build(tmp_path, RELEASE="910b-cann8.2.rc1", ARCH="x86_64", PODMAN_MISSING="none")
    assert proc.returncode == 0, proc.stderr
    assert "--build-arg BASE_IMAGE=quay.io/ascend/cann:8.2.rc1-910b-ubuntu22.04-py3.11" in line
    assert "--build-arg TORCH_SPEC=torch==2.6.0+cpu" in line and "TORCH_NPU_SPEC=torch-npu==2.6.0" in line
    assert f"TORCH_INDEX_URL={r.TORCH_CPU_INDEX}" in line and "numpy==1.26.4" in line
    assert "--tag localhost/ascendops-trainer:910b-cann8.2.rc1" in line


def test_build_image_refuses_a_release_without_a_trainer_image_or_a_missing_base(tmp_path):
    proc, line = build(tmp_path, RELEASE="910b-cann8.0.0")
    assert proc.returncode == 2 and not line and "has no trainer image" in proc.stderr
    proc, line = build(tmp_path, RELEASE="910b-cann8.2.rc1",
                       PODMAN_MISSING="quay.io/ascend/cann:8.2.rc1-910b-ubuntu22.04-py3.11")
    assert proc.returncode == 2 and "is not in local podman storage" in proc.stderr


def test_build_image_with_another_base_and_no_release_has_no_label(tmp_path):
    proc, line = build(tmp_path, BASE_IMAGE="localhost/ascend-pytorch:2.6.0", TORCH_SPEC="")
    assert proc.returncode == 0, proc.stderr
    assert "--label ascendops.release= --tag" in line and "--build-arg PIN_SPECS= " in line


# ------------------------------------------------------------------------------ the entry point

BASH_ONLY = """\
function _probe() {{ [[ -n "${{BASH_SOURCE[0]}}" ]] && echo "{name}"; }}
export ASCENDOPS_SEEN="${{ASCENDOPS_SEEN:+$ASCENDOPS_SEEN,}}$(_probe)"
export ASCENDOPS_ARGS_{var}="$#:$*"
"""


def entrypoint(tmp_path, *scripts):
    base = tmp_path / "Ascend"
    for rel in scripts:
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        var = rel.split("/")[0].replace("-", "_")
        path.write_text(BASH_ONLY.format(name=rel, var=var))
    env = dict(os.environ, ASCENDOPS_ASCEND_PATH=str(base))
    env.pop("ASCENDOPS_SEEN", None)
    proc = subprocess.run([str(PAYLOAD / "container-entrypoint.sh"), "bash", "-c",
                           'echo "$ASCENDOPS_SEEN|${ASCENDOPS_ARGS_ascend_toolkit-}|${ASCENDOPS_ARGS_nnal-}|$0 $1"',
                           "arg0", "--cxx_abi=9"], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_entrypoint_sources_toolkit_then_nnal_in_bash_without_the_commands_arguments(tmp_path):
    out = entrypoint(tmp_path, "ascend-toolkit/set_env.sh", "nnal/atb/set_env.sh")
    assert out == "ascend-toolkit/set_env.sh,nnal/atb/set_env.sh|0:|0:|arg0 --cxx_abi=9"


def test_entrypoint_on_cann_8_5_and_on_the_cpu_image(tmp_path):
    assert entrypoint(tmp_path, "cann/set_env.sh") == "cann/set_env.sh|||arg0 --cxx_abi=9"
    assert entrypoint(tmp_path / "cpu") == "|||arg0 --cxx_abi=9"  # nothing to source: the command runs


def test_entrypoint_is_bash():
    assert (PAYLOAD / "container-entrypoint.sh").read_text().startswith("#!/bin/bash\n")
    assert 'ENTRYPOINT ["/usr/local/bin/ascendops-entrypoint"]' in (PAYLOAD / "Containerfile").read_text()


# ------------------------------------------------------------------------------ check-image-env.py --release

@pytest.fixture()
def check_env():
    spec = importlib.util.spec_from_file_location("check_image_env", PAYLOAD / "check-image-env.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fake_image(tmp_path, monkeypatch, mod, dists, cann=None, layout="ascend-toolkit"):
    if cann:
        top = tmp_path / "Ascend" / ("ascend-toolkit" if layout == "ascend-toolkit" else f"cann-{cann}")
        tk = top / cann if layout == "ascend-toolkit" else top
        rec = tk / ("aarch64-linux" if layout == "ascend-toolkit" else "cann/aarch64-linux")
        rec.mkdir(parents=True)
        (rec / "ascend_toolkit_install.info").write_text(f"package_name=Ascend-cann-toolkit\nversion={cann}\n")
        (tk / "opp_kernel").mkdir()
        (tk / "opp_kernel" / "version.info").write_text(
            f'Version=8.2.0.0.201\nversion_dir={cann}\nrequired_package_driver_version=">=25.0.rc1"\n')
        if layout == "ascend-toolkit":
            os.symlink(cann, top / "latest")
    monkeypatch.setattr(mod, "installed", dists.get)
    monkeypatch.setattr(mod.sys, "version_info", (3, 11, 9))
    return str(tmp_path / "Ascend")


NPU_DISTS = {"torch": "2.6.0+cpu", "torch_npu": "2.6.0", "deepspeed": "0.19.8", "transformers": "5.24.0",
             "numpy": "1.26.4", "protobuf": "3.20.3", "tensorboard": "2.16.2"}


def test_check_image_env_release_passes_on_an_image_built_as_the_release_says(tmp_path, monkeypatch, check_env):
    label = json.loads(r.image_label(load("910b-cann8.2.rc1")))
    path = fake_image(tmp_path, monkeypatch, check_env, NPU_DISTS, cann="8.2.RC1")
    result = check_env.check_release(label, path)
    assert result["ok"], result["problems"]
    assert result["cann_driver_range"] == ">=25.0.rc1"  # the host's driver must be inside it
    assert {c["component"] for c in result["checks"]} >= {
        "python", "torch", "torch_npu", "cann", "tensorboard", "numpy for CANN", "protobuf for CANN"}


def test_check_image_env_release_names_every_pin_that_differs(tmp_path, monkeypatch, check_env):
    label = json.loads(r.image_label(load("910b-cann8.2.rc1")))
    dists = dict(NPU_DISTS, numpy="2.4.6", torch_npu="2.7.1")
    path = fake_image(tmp_path, monkeypatch, check_env, dists, cann="8.3.RC1", layout="cann")
    result = check_env.check_release(label, path)
    assert not result["ok"]
    assert sorted(p.split(":")[0] for p in result["problems"]) == [
        "cann", "numpy", "numpy for CANN", "torch_npu", "torch_npu build"]
    assert "numpy for CANN: expected >=1.19.2, <2.0, found 2.4.6 (CANN 8.2.RC1's Python dependency list)" \
        in result["problems"]


def test_check_image_env_release_on_the_cpu_image_and_one_json_line(tmp_path, monkeypatch, check_env, capsys):
    label = json.loads(r.image_label(load("sim")))
    dists = {"torch": "2.13.0+cpu", "deepspeed": "0.19.8", "transformers": "5.24.0", "numpy": "2.4.6",
             "protobuf": "7.36.2"}
    path = fake_image(tmp_path, monkeypatch, check_env, dists)
    release_file = tmp_path / "release.json"
    release_file.write_text(json.dumps(label))
    assert check_env.main(["--release", str(release_file), "--ascend-path", path]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["ok"] is True
    assert json.loads(lines[0])["cann_driver_range"] is None  # no CANN in the CPU image
    fake_image(tmp_path / "with-cann", monkeypatch, check_env, dists, cann="8.0.0")
    assert check_env.main(["--release", str(release_file), "--ascend-path",
                           str(tmp_path / "with-cann" / "Ascend")]) == 1  # CANN the release does not name
    assert "cann: expected None, found 8.0.0" in capsys.readouterr().out
