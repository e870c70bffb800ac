#!/bin/sh
# Entry point of the trainer image: load the CANN environment when present (Ascend variant), then
# run the command, e.g. `torchrun --nnodes 2 --node_rank 0 ... -m ascendops_trainer train ...`.
for f in /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/nnal/atb/set_env.sh; do
    # shellcheck disable=SC1090
    [ -f "$f" ] && . "$f"
done
exec "$@"
