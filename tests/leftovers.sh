#!/usr/bin/env bash
# What a test run leaves on the machine outside the clone: loop devices, mounts, network namespaces, processes of
# the tools the tests start, and entries in the temporary directories (mounts and entries: those named as ours).
#   tests/leftovers.sh snapshot FILE   records the machine's state before a run
#   tests/leftovers.sh check FILE      compares with it; prints each new thing and exits 1 if there is any
# .ci/run takes a snapshot first and checks at its end (docs/testing.md, "Leaving nothing behind").
set -uo pipefail

# The processes the tests start (a killed test binary can orphan them).
TOOLS='kvio|kvio_e2e_tests|kvio_unit_tests|fio|qemu-system-x86|redis-server|prometheus|stress-ng|mpirun|orted|xfs_io|dd'
# The temporary directories a test may write to, and the names kvio's tests, scripts and tools give what they make
# there (kvio-test-*, kvio-loop-*, kvio-mnt-*, kvio-guest.*, simulate's kv_cache_* ...). Other names are not ours:
# a machine's own services and whatever runs CI may write to /tmp during the run.
TMPDIRS=(/tmp /var/tmp /dev/shm)
OURS=('kvio*' 'kv_cache*' 'kv-cache*')

state() {
    losetup -n -O NAME,BACK-FILE 2>/dev/null | awk '{ print "loop " $1 " " $2 }'
    # Mount points of ours: every directory a test, script or run mounts on has kvio or kv_cache in its path.
    awk '$5 ~ /kvio|kv_cache/ { print "mount " $5 }' /proc/self/mountinfo
    ip netns list 2>/dev/null | awk '{ print "netns " $1 }'
    # Processes by name, not pid: a new pid of an old daemon is not a leftover, a new name is.
    ps -eo comm= | grep -Ex "$TOOLS" | sort | uniq -c | awk '{ print "proc " $2 " x" $1 }'
    local d p f
    for d in "${TMPDIRS[@]}"; do
        for p in "${OURS[@]}"; do
            for f in "$d"/$p; do { [ -e "$f" ] || [ -L "$f" ]; } && echo "file $f"; done
        done
    done
}

case "${1:-}" in
snapshot)
    [ -n "${2:-}" ] || { echo "usage: $0 snapshot FILE" >&2; exit 2; }
    state | sort > "$2"
    ;;
check)
    [ -r "${2:-}" ] || { echo "usage: $0 check FILE (a snapshot)" >&2; exit 2; }
    now=$(state | sort)
    # Processes by count: more of a tool than at the snapshot is a leftover; fewer (a process that was running before
    # and ended meanwhile) is not.
    new=$(comm -13 <(grep -v '^proc ' "$2") <(grep -v '^proc ' <<<"$now"))
    more=$(awk 'NR == FNR { if ($1 == "proc") was[$2] = substr($3, 2) + 0; next }
                $1 == "proc" && substr($3, 2) + 0 > was[$2] + 0 { print }' "$2" - <<<"$now")
    new=$(printf '%s\n%s\n' "$new" "$more" | sed '/^$/d')
    # The snapshot file itself, when it lives in a temporary directory.
    new=$(grep -vxF "file $2" <<<"$new")
    if [ -n "$new" ]; then
        echo "leftovers: the run left these behind:"
        sed 's/^/  /' <<<"$new"
        exit 1
    fi
    echo "leftovers: none (loop devices, mounts, netns, processes, $(IFS=' '; echo "${OURS[*]}") in $(IFS=,; echo "${TMPDIRS[*]}"))"
    ;;
*)
    echo "usage: $0 snapshot FILE | check FILE" >&2
    exit 2
    ;;
esac
