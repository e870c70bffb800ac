#!/bin/bash
# Entry point of the trainer image: load the CANN environment when present (Ascend variant), then run the
# command, e.g. `ascendops-train launch --grace-s 600 -- --nnodes 2 --node_rank 0 ... -m ascendops_trainer train ...`.
# bash, not sh: CANN's set_env.sh scripts use bash syntax ([[ ]], function, BASH_SOURCE).
for f in /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/nnal/atb/set_env.sh; do
    # shellcheck disable=SC1090
    [ -f "$f" ] && source "$f"
done
exec "$@"
