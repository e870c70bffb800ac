#!/bin/bash
# Entry point of the trainer image: load the CANN environment when the image has it (the NPU variant),
# then run the command, e.g. `ascendops-train launch --grace-s 600 -- --nnodes 2 ... -m ascendops_trainer train ...`.
# bash, never sh: the vendor's set_env.sh scripts are bash ([[ ]], function, BASH_SOURCE). On the CPU
# image none of them exists and the command runs as it is.
#   toolkit: <install path>/ascend-toolkit/set_env.sh (up to CANN 8.3), <install path>/cann/set_env.sh (8.5+)
#   NNAL:    <install path>/nnal/atb/set_env.sh (after the toolkit: it reads the toolkit's environment)
# ASCENDOPS_ASCEND_PATH: the install path in the image (default /usr/local/Ascend).

ascend_path=${ASCENDOPS_ASCEND_PATH:-/usr/local/Ascend}

# Source one script with no positional parameters: a sourced script sees the caller's "$@", and the
# vendor's scripts read their own options from it (the ATB script takes --cxx_abi=).
_ascendops_source() {
    local script=$1
    set --
    # shellcheck disable=SC1090
    source "$script" || echo "ascendops-entrypoint: $script returned an error; continuing" >&2
}

for f in "$ascend_path/ascend-toolkit/set_env.sh" "$ascend_path/cann/set_env.sh"; do
    if [[ -f $f ]]; then
        _ascendops_source "$f"
        break
    fi
done
if [[ -f $ascend_path/nnal/atb/set_env.sh ]]; then
    _ascendops_source "$ascend_path/nnal/atb/set_env.sh"
fi
unset -f _ascendops_source
unset ascend_path f

exec "$@"
