#!/bin/sh
# Never becomes ready, three ways ($2): `silent` serves nothing and prints nothing; `wrong-contract`
# prints a ready line of another contract version; `exits` says why on stderr and exits (code 3)
# before any ready line. Each breaks the ready line's rule (CONTRACT.md §2-6), not a later one.
export KILLPOINT_HOSTILE_MARKER="$1"
case "$2" in
silent) exec sleep 600 ;;
wrong-contract)
    echo 'KILLPOINT_READY {"contract":"killpoint-contract/5","api":"http://127.0.0.1:9","probe":false}'
    exec sleep 600
    ;;
exits)
    echo "never_ready: cannot open my store; exiting before the ready line" >&2
    exit 3
    ;;
esac
echo "never_ready: expected silent, wrong-contract or exits as the second argument, found '$2'" >&2
exit 2
