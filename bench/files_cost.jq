# bench/files_cost.jq — the summary of bench/files_cost.sh's runs (jq -s): per engine and rw, per mode, each program's
# median ns per device command over the rounds, the median total, and the median of the per-round difference
# against `plain` of the same round (what --files adds; for a `base_` mode, against `base_plain`: the other build's). Loads: min and max of the runs' 1-minute load average.
def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                                          else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def total: [.programs[].ns_per_cmd] | add // 0;

[.[] | select(.stage == "files")] as $runs
| [$runs[] | {engine, rw}] | unique | map(. as $k |
    [$runs[] | select(.engine == $k.engine and .rw == $k.rw)] as $rs
    | ([$rs[].mode] | unique) as $modes
    | {engine: $k.engine, rw: $k.rw,
       load1: {min: ([$rs[].load1] | min), max: ([$rs[].load1] | max)},
       modes: ($modes | map(. as $m |
         [$rs[] | select(.mode == $m)] as $ms
         | {mode: $m, rounds: ($ms | length),
            ns_per_cmd: ([$ms[] | total] | median),
            added_vs_plain: ([$ms[] | . as $x | (if ($m | startswith("base_")) then "base_plain" else "plain" end) as $pm
                             | ($rs[] | select(.mode == $pm and .round == $x.round) | total) as $p
                             | ($x | total) - $p] | median),
            programs: ([$ms[].programs[].name] | unique | map(. as $n |
                {name: $n, ns_per_cmd: ([$ms[] | ([.programs[] | select(.name == $n) | .ns_per_cmd] | add // 0)] | median),
                 ns_per_run: ([$ms[].programs[] | select(.name == $n) | .ns_per_run] | median)}))}))})
