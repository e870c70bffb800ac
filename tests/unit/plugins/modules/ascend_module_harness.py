"""Harness for the module tests (used by conftest.py and the tests).

Run a module's main() with arguments, and fake vendor tools.

Module arguments are injected with ``ansible.module_utils.testing.patch_module_args`` (ansible-core
2.19+); older cores fall back to the ``_ANSIBLE_ARGS`` bytes that community.general's
``set_module_args`` sets. ``exit_json``/``fail_json`` raise so the result can be inspected.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import textwrap

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as ansible_warnings

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    patch_module_args = None

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


class AnsibleExitJson(Exception):
    """Raised by the patched exit_json."""


class AnsibleFailJson(Exception):
    """Raised by the patched fail_json."""


def _warnings():
    if not hasattr(ansible_warnings, "get_warning_messages"):
        return []
    return list(ansible_warnings.get_warning_messages())


def _exit_json(self, **kwargs):
    kwargs.setdefault("changed", False)
    kwargs["warnings"] = _warnings()
    raise AnsibleExitJson(kwargs)


def _fail_json(self, msg="", **kwargs):
    kwargs["failed"] = True
    kwargs["msg"] = msg
    raise AnsibleFailJson(kwargs)


@contextlib.contextmanager
def set_module_args(args):
    if patch_module_args is not None:
        with patch_module_args(args):
            yield
        return
    old = basic._ANSIBLE_ARGS
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = old


def module_runner(monkeypatch):
    """run_module(main, args, check_mode=False, diff=False) -> result dict ("failed" set on failure)."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)
    if hasattr(ansible_warnings, "_global_warnings"):
        monkeypatch.setattr(ansible_warnings, "_global_warnings", type(ansible_warnings._global_warnings)())
    # A module runs on a node: its warnings go into its result. Once a test has imported controller code
    # (ansible.plugins.filter.core, say), ansible-core 2.19 takes the process for a controller and sends
    # module warnings to Display instead.
    internal = getattr(ansible_warnings, "_internal", None)
    if internal is not None and hasattr(internal, "is_controller"):
        monkeypatch.setattr(internal, "is_controller", False)

    def _run(main, args, check_mode=False, diff=False):
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        with set_module_args(args):
            try:
                main()
            except AnsibleExitJson as exc:
                return exc.args[0]
            except AnsibleFailJson as exc:
                return exc.args[0]
        raise AssertionError("the module returned without exit_json/fail_json")

    return _run


def write_script(path, body, executable=True):
    path = str(path)
    with open(path, "w") as handle:
        handle.write(body)
    mode = stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH
    if executable:
        mode |= stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
    os.chmod(path, mode)
    return path


# A stand-in for a vendor .run package that follows docs/sim-contract.md: it records each
# invocation (argv, and whether stdin was at EOF), enforces the flag rules, writes the version
# record of its kind on success and prints the vendor success line / [ERROR] lines.
FAKE_RUN = textwrap.dedent(r"""
    #!/bin/bash
    KIND='@KIND@'; VERSION='@VERSION@'; ARCH='@ARCH@'; RECORD='@RECORD@'; MODE='@MODE@'; CHECK_RC=@CHECK_RC@
    if read -r -t 2 _line; then stdin=data; else st=$?; if [ "$st" -gt 128 ]; then stdin=waiting; else stdin=eof; fi; fi
    line="$stdin"; for a in "$@"; do line="$line"$'\t'"$a"; done
    printf '%s\n' "$line" >> "$RECORD"
    action=""; path=/usr/local/Ascend; user=""; group=""; forall=""
    for a in "$@"; do
      case "$a" in
        --check)
          if [ "$CHECK_RC" -eq 0 ]; then
            echo "Verifying archive integrity...  100%   SHA256 checksums are OK. All good."
          else
            echo "Verifying archive integrity...Error in SHA256 checksums: 1a2b is different from 3c4d"
          fi
          exit "$CHECK_RC";;
        --full|--install|--upgrade) action=${a#--};;
        --install-path=*) path=${a#*=};;
        --install-username=*) user=${a#*=};;
        --install-usergroup=*) group=${a#*=};;
        --install-for-all) forall=y;;
        --nox11) if [ "$KIND" = docker_runtime ]; then echo "Unrecognized flag : $a" >&2; exit 1; fi;;
        --install-scene=*|--quiet) ;;
        *) echo "usage: $0 --full|--install|--upgrade [options]"; echo "[ERROR]unknown flag $a"; exit 1;;
      esac
    done
    case "$KIND" in
      driver|firmware) fresh=full;;
      *) fresh=install;;
    esac
    case "$KIND" in
      driver|firmware) rec="$path/$KIND/version.info";;
      toolkit) rec="$path/ascend-toolkit/latest/$ARCH-linux/ascend_toolkit_install.info"
               same="$path/ascend-toolkit/$VERSION/$ARCH-linux/ascend_toolkit_install.info";;
      kernels) rec="$path/ascend-toolkit/latest/opp_kernel/version.info";;
      docker_runtime) rec="$path/Ascend-Docker-Runtime/ascend_docker_runtime_install.info";;
    esac
    if [ "$action" != "$fresh" ] && [ "$action" != upgrade ]; then
      echo "usage: $0 --$fresh|--upgrade"; exit 1
    fi
    if [ "$KIND" = firmware ] && { [ -n "$user$group" ] || [ -n "$forall" ]; }; then
      echo "[ERROR]Unsupported parameter: the firmware package takes only --full or --upgrade"; exit 1
    fi
    if [ "$action" = upgrade ] && { [ -n "$user$group" ] || [ -n "$forall" ]; }; then
      echo "[ERROR]--upgrade cannot be used with --install-username, --install-usergroup or --install-for-all"; exit 1
    fi
    # CANN toolkit versions install side by side: only the same version counts as installed
    # the docker runtime accepts a second --install silently (as the vendor's does)
    if [ "$action" = "$fresh" ] && [ -f "${same:-$rec}" ] && [ "$KIND" != docker_runtime ]; then
      echo "[ERROR]$KIND is already installed, use --upgrade"; exit 1
    fi
    if [ "$action" = upgrade ] && [ ! -f "$rec" ]; then
      echo "[ERROR]$KIND is not installed, use --$fresh"; exit 1
    fi
    # The runtime's EULA question from 26.1.0 (Ascend/mind-cluster v26.1.0 run_main.sh check_eula): asked before
    # anything is installed, again on any other answer (end of input too: the real one loops for ever; bounded here).
    if [ "$MODE" = eula ]; then
      echo "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]"
      yn=""; if [ "$stdin" = data ]; then yn=$_line; fi; asked=1
      while true; do
        case "$yn" in
          [Yy]) echo "[INFO] user accepted EULA"; break;;
          [Nn]) echo "[INFO] install cancelled, user declined EULA"; exit 0;;
          *) asked=$((asked + 1)); if [ "$asked" -gt 20 ]; then exit 1; fi
             echo "Do you accept the EULA to install Ascend-docker-runtime?[Y/N]"; read -r yn || yn="";;
        esac
      done
    fi
    case "$MODE" in
      dkms) echo "[ERROR]Dkms install failed, details in : var/log/ascend_seclog/ascend_install.log."; exit 1;;
      missing_tools) echo "[ERROR]The list of missing tools: lspci,ifconfig,"; exit 1;;
      nosuccess) ;;
      rc1) exit 1;;
      error_rc0) echo "[Driver] [2025-07-17 10:35:21] [ERROR]Driver install failed"; exit 0;;
      prompt)
        printf 'Do you want to try build driver after input kernel absolute path? [y/n]'
        if read -r answer; then echo; fi
        echo "[ERROR]Dkms install failed, details in : var/log/ascend_seclog/ascend_install.log."; exit 1;;
    esac
    if [ "$KIND" = toolkit ]; then
      mkdir -p "$path/ascend-toolkit/$VERSION/$ARCH-linux"
      printf 'package_name=Ascend-cann-toolkit\nversion=%s\narch=%s\n' "$VERSION" "$ARCH" \
        > "$path/ascend-toolkit/$VERSION/$ARCH-linux/ascend_toolkit_install.info"
      ln -sfn "$VERSION" "$path/ascend-toolkit/latest"
    elif [ "$KIND" = docker_runtime ]; then
      mkdir -p "$(dirname "$rec")"
      printf 'version=v%s\narch=%s\nos=linux\n' "$VERSION" "$ARCH" > "$rec"
    else
      mkdir -p "$(dirname "$rec")"
      printf 'Version=%s\n' "$VERSION" > "$rec"
    fi
    case "$MODE" in
      nosuccess) exit 0;;
      rc3) exit 3;;
      immediate)
        echo "[Driver] [2025-07-17 10:35:22] [INFO]driver install type: DKMS"
        echo "[Driver] [2025-07-17 10:36:30] [INFO]upgradePercentage:100%"
        echo "Driver package installed successfully! The new version takes effect immediately."
        exit 0;;
    esac
    case "$KIND" in
      driver)
        echo "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!"
        exit 0;;
      firmware)
        printf '%s %s\n' "Firmware package installed successfully! Reboot now or after driver installation" \
          "for the installation/upgrade to take effect."
        if [ "$action" = upgrade ]; then exit 2; fi; exit 0;;
      toolkit) echo "[Toolkit] [INFO] Ascend-cann-toolkit $action success";;
      kernels) echo "[Kernels] [INFO] Ascend-cann-kernels-910b $action success";;
      docker_runtime) echo "[INFO] Ascend Docker Runtime $action success";;
    esac
    exit 0
""").lstrip()


class FakePackage:
    def __init__(self, path, record):
        self.path = path
        self.record = record

    def calls(self):
        """Each invocation as (stdin state, [argv...])."""
        if not os.path.exists(self.record):
            return []
        out = []
        with open(self.record) as handle:
            for line in handle.read().splitlines():
                parts = line.split("\t")
                out.append((parts[0], parts[1:]))
        return out

    def argvs(self):
        return [argv for _stdin, argv in self.calls()]


def package_maker(tmp_path):
    """make_package(file_name, kind, version, arch="aarch64", mode="ok", check_rc=0, executable=True)."""
    pkg_dir = tmp_path / "packages"
    pkg_dir.mkdir(exist_ok=True)

    def _make(name, kind, version, arch="aarch64", mode="ok", check_rc=0, executable=True):
        record = str(pkg_dir / (name + ".calls"))
        body = (FAKE_RUN.replace("@KIND@", kind).replace("@VERSION@", version).replace("@ARCH@", arch)
                .replace("@RECORD@", record).replace("@MODE@", mode).replace("@CHECK_RC@", str(check_rc)))
        path = write_script(pkg_dir / name, body, executable=executable)
        return FakePackage(path, record)

    return _make


def fixture_text(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()
