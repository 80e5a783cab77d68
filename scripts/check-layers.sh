#!/usr/bin/env bash
# The layering check (`make check-layers`, run first by `make test` and `make check`): every source folder sits on a
# floor, and a file may include headers of its own folder and of folders on lower floors only — never a higher floor,
# never another folder of its own floor. The floors and what each folder owns: README.md, "Source map".
#
#   scripts/check-layers.sh [ROOT]   checks the tree at ROOT (default: the repository); on a violation prints
#                                    "FILE:LINE: ..." for each and exits 1
#   scripts/check-layers.sh --self-test
#                                    checks a copy of the tree with an upward include planted: the check must fail
#                                    and name the planted line (and pass on the copy before the plant)
# tests/ and bench/ are not on a floor: they may include anything.
set -euo pipefail

# Lowest first. Folders on one line are peers (none includes another). A file belongs to the longest folder that
# prefixes its path (workload/serving/mpi/x.cpp is serving's).
FLOORS=(
    "bpf"
    "common"
    "workload redis"
    "workload/serving distiller validate importer replay audit diagnose"
    "trace"
    "report"
    "run drives"
    "cli"
)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

check() {
    local root=$1 spec="" i f
    for i in "${!FLOORS[@]}"; do
        for f in ${FLOORS[$i]}; do spec+="$f=$i "; done
    done
    local folders
    folders=$(printf '%s\n' $spec | cut -d= -f1)
    # One awk over every file of every floor: a folder is the longest listed one that prefixes a path.
    (cd "$root" && find $folders -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) 2>/dev/null | sort -u |
        xargs -r awk -v spec="$spec" '
        function folder_of(p,   d, best) {
            best = ""
            for (d in floor) if (index(p, d "/") == 1 && length(d) > length(best)) best = d
            return best
        }
        BEGIN {
            n = split(spec, kv, " ")
            for (i = 1; i <= n; i++) { split(kv[i], x, "="); floor[x[1]] = x[2] }
        }
        FNR == 1 { own = folder_of(FILENAME) }
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
            theirs = folder_of(inc)
            if (own == "" || theirs == "" || theirs == own) next
            if (floor[theirs] + 0 > floor[own] + 0) {
                printf "%s:%d: %s (floor %d) includes %s of %s (floor %d): a lower floor may not include a higher one\n",
                       FILENAME, FNR, own, floor[own], inc, theirs, floor[theirs]
                bad = 1
            } else if (floor[theirs] == floor[own]) {
                printf "%s:%d: %s includes %s of %s, a folder of its own floor %d: peers do not include each other\n",
                       FILENAME, FNR, own, inc, theirs, floor[own]
                bad = 1
            }
        }
        END { exit bad }')
}

self_test() {
    local tmp
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvio-layers.XXXXXX")
    trap 'rm -rf "$tmp"' RETURN
    local root f
    root=$(cd "$here/.." && pwd)
    for f in "${FLOORS[@]}"; do
        for f in $f; do
            [[ -d $root/$f && $f != */* ]] && cp -r "$root/$f" "$tmp/"
        done
    done
    if ! check "$tmp" >/dev/null; then
        echo "check-layers self-test: the unplanted copy fails" >&2
        return 1
    fi
    # The plant: a line in common/ that includes the CLI.
    local target=common/error.h
    [[ -f $tmp/$target ]] || { echo "check-layers self-test: $target is missing" >&2; return 1; }
    echo '#include "cli/commands.h"' >> "$tmp/$target"
    local planted_line out
    planted_line=$(wc -l < "$tmp/$target")
    if out=$(check "$tmp"); then
        echo "check-layers self-test: an upward include (common -> cli) was not caught" >&2
        return 1
    fi
    if ! grep -q "^$target:$planted_line: " <<<"$out"; then
        echo "check-layers self-test: the report does not name $target:$planted_line:" >&2
        echo "$out" >&2
        return 1
    fi
    echo "check-layers self-test: ok (an upward include in $target was caught)"
}

if [[ ${1:-} == --self-test ]]; then
    self_test
else
    root=${1:-$(cd "$here/.." && pwd)}
    if check "$root"; then echo "check-layers: ok"; else exit 1; fi
fi
