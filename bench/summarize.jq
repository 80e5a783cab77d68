# bench/summarize.jq — raw.jsonl (slurped: one object per measurement) -> results.json (kvio.bench/2).
# Called by bench/run.sh as: jq -s --slurpfile m machine.json -f bench/summarize.jq raw.jsonl
# Every overhead is paired: a traced run against the untraced run of the same round, so machine drift
# between rounds cancels; min/median/max are over rounds.
def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                   else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def stats: if length == 0 then null else {min: min, median: median, max: max} end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;

# verdict(target): on {min, median, max} of per-round values: "met" when every round is within the target, "missed"
# when none is, else by the median, except "inside noise" when the rounds spread wider than the target itself
def verdict($t): if . == null or .median == null then null
    elif .max <= $t then "met" elif .min > $t then "missed"
    elif (.max - .min) > $t then "inside noise"
    elif .median <= $t then "met" else "missed" end;
def modes: ["untraced", "kvio_hist", "kvio_child", "kvio_comm", "kvio_pid", "kvio_events", "kvio_events_bin", "bpftrace", "kvio_listen"];

. as $raw
| [$raw[] | select(.stage == "overhead")] as $o
| [$raw[] | select(.stage == "gen")] as $g
| ([$o[] | .engine] | unique) as $engines
| {
    schema: "kvio.bench/2",
    machine: $m[0],
    overhead: (reduce $engines[] as $e ({};
        [$o[] | select(.engine == $e)] as $oe
        | ([$oe[] | select(.mode == "untraced")] | map({key: (.round | tostring), value: .iops}) | from_entries) as $base
        | ([$oe[] | select(.mode == "bpftrace" and .ns_per_cmd != null)] | map({key: (.round | tostring), value: .ns_per_cmd}) | from_entries) as $btns
        | . + {($e): (reduce modes[] as $mode ({};
            [$oe[] | select(.mode == $mode)] as $runs
            | if ($runs | length) == 0 then . else . + {($mode): {
                runs: ($runs | length),
                iops: ([$runs[].iops] | stats),
                overhead_pct: ([$runs[] | select($base[.round | tostring]) | (1 - .iops / $base[.round | tostring]) * 100] | stats),
                cmds_per_s: ([$runs[] | .cmds_per_s // empty] | stats),
                dropped: ([$runs[] | .dropped // empty] | stats),
                lost_completes: ([$runs[] | .lost_completes // empty] | stats),
                ns_per_cmd: ([$runs[] | .ns_per_cmd // empty] | stats),
                ns_vs_bpftrace: ([$runs[] | select(.ns_per_cmd != null and $btns[.round | tostring]) | .ns_per_cmd / $btns[.round | tostring]] | stats),
                programs: ([$runs[] | .programs // [] | .[]] | group_by(.name) |
                           map({name: .[0].name, ns_per_run: ([.[].ns_per_run] | median), ns_per_cmd: ([.[].ns_per_cmd // empty] | median),
                                runs_per_cmd: (if ([.[].ns_per_cmd // empty] | median) then (([.[].ns_per_cmd // empty] | median) / ([.[].ns_per_run] | median)) else null end)}) |
                           sort_by(-(.ns_per_cmd // 0)))
              }} end))}
        )),
    # --listen scraped every second vs the same trace unscraped (kvio_hist), paired by round: IOPS ratio
    scrape_cost: (reduce $engines[] as $e ({};
        [$o[] | select(.engine == $e)] as $oe
        | ([$oe[] | select(.mode == "kvio_hist")] | map({key: (.round | tostring), value: .iops}) | from_entries) as $hist
        | [$oe[] | select(.mode == "kvio_listen" and $hist[.round | tostring])] as $runs
        | if ($runs | length) == 0 then . else . + {($e): {
            rounds: ($runs | length), scrapes: ([$runs[].scrapes // empty] | stats),
            iops_ratio: ([$runs[] | .iops / $hist[.round | tostring]] | stats)}} end)),
    gen: (reduce ("posix", "io_uring") as $e ({};
        [$g[] | select(.mode == $e)] as $runs
        | if ($runs | length) == 0 then . else . + {($e): {
            runs: ($runs | length), qd: $runs[0].qd, fio_engine: $runs[0].fio_engine, bs: $runs[0].bs,
            bytes: $runs[0].gen_bytes,
            gen_mbps: ([$runs[].gen_mbps] | stats), fio_mbps: ([$runs[].fio_mbps] | stats),
            ratio: ([$runs[].ratio] | stats)
          }} end)),
    validate: ([$raw[] | select(.stage == "validate") | {key: .mode, value: (del(.stage, .mode))}] | from_entries),
    distill: ([$raw[] | select(.stage == "distill")] | first // null | if . then del(.stage, .mode) else null end),
    simulate: ([$raw[] | select(.stage == "simulate") | {key: .mode, value: (del(.stage, .mode))}] | from_entries)
  }
| . as $r
| .targets = ([$engines[] as $e | $r.overhead[$e] as $x |
    {("kernel_ns_hist_" + $e): {value: ($x.kvio_hist.ns_vs_bpftrace.median | r3), spread: $x.kvio_hist.ns_vs_bpftrace,
        target: "<= 0.5 x bpftrace (BPF ns per command, kvio trace -d / kvio_equiv.bt)", verdict: ($x.kvio_hist.ns_vs_bpftrace | verdict(0.5))}},
    ({("kernel_ns_filter_" + $e): {value: ([$x.kvio_child, $x.kvio_comm, $x.kvio_pid | .ns_vs_bpftrace.median // empty] | max | r3),
        spread: {child: $x.kvio_child.ns_vs_bpftrace, comm: $x.kvio_comm.ns_vs_bpftrace, pid: $x.kvio_pid.ns_vs_bpftrace},
        target: "<= 0.75 x bpftrace with a task filter (-- fio, -c fio, -p PID; the worst of the three)",
        verdict: ([$x.kvio_child, $x.kvio_comm, $x.kvio_pid | .ns_vs_bpftrace | verdict(0.75)] |
                  if any(. == "missed") then "missed" elif any(. == "inside noise") then "inside noise" elif length > 0 and all(. == "met") then "met" else null end)}}),
    {("kernel_ns_events_bin_" + $e): {value: ($x.kvio_events_bin.ns_vs_bpftrace.median | r3), spread: $x.kvio_events_bin.ns_vs_bpftrace,
        target: "<= 1 x bpftrace (binary capture of -- fio)", verdict: ($x.kvio_events_bin.ns_vs_bpftrace | verdict(1))}},
    {("iops_hist_" + $e): {value: ($x.kvio_hist.overhead_pct.median | r3), spread: $x.kvio_hist.overhead_pct,
        target: "<= 2 % (histograms, no task filter)", verdict: ($x.kvio_hist.overhead_pct | verdict(2))}},
    {("iops_filter_" + $e): {value: ([$x.kvio_child, $x.kvio_comm, $x.kvio_pid | .overhead_pct.median // empty] | max | r3),
        spread: {child: $x.kvio_child.overhead_pct, comm: $x.kvio_comm.overhead_pct, pid: $x.kvio_pid.overhead_pct},
        target: "<= 5 % with a task filter (the worst of -- fio, -c fio, -p PID)",
        verdict: ([$x.kvio_child, $x.kvio_comm, $x.kvio_pid | .overhead_pct | verdict(5)] |
                  if any(. == "missed") then "missed" elif any(. == "inside noise") then "inside noise" elif length > 0 and all(. == "met") then "met" else null end)}},
    {("iops_events_bin_" + $e): {value: ($x.kvio_events_bin.overhead_pct.median | r3), spread: $x.kvio_events_bin.overhead_pct,
        target: "<= 8 % with 0 drops (binary capture of -- fio)",
        verdict: (if $x.kvio_events_bin == null then null elif $x.kvio_events_bin.dropped.max > 0 then "missed (drops)" else ($x.kvio_events_bin.overhead_pct | verdict(8)) end)}}
  ] | add // {}) + {
    gen_vs_fio_posix: {value: ($r.gen.posix.ratio.median | r3), target: ">= 0.97",
                       met: (if $r.gen.posix then $r.gen.posix.ratio.median >= 0.97 else null end)},
    gen_vs_fio_io_uring: {value: ($r.gen.io_uring.ratio.median | r3), target: ">= 0.97",
                          met: (if $r.gen.io_uring then $r.gen.io_uring.ratio.median >= 0.97 else null end)},
    validate_cmds_per_cpu_s: {value: ($r.validate.big.cmds_per_cpu_s | if . then floor else null end), target: ">= 5000000 on one core (kvio.events/1 JSONL)",
                              met: (if $r.validate.big then $r.validate.big.cmds_per_cpu_s >= 5e6 else null end)},
    validate_bin_cmds_per_cpu_s: {value: ($r.validate.big_bin.cmds_per_cpu_s | if . then floor else null end),
                                  target: ">= 5000000 on one core (kvio.events.bin/1 capture)",
                                  met: (if $r.validate.big_bin then $r.validate.big_bin.cmds_per_cpu_s >= 5e6 else null end)},
    simulate_vs_fio_tmpfs: {value: ($r.simulate.tmpfs.ratio | r3), target: ">= 0.9 (storage bytes/s, same I/O as fio)",
                            met: (if $r.simulate.tmpfs then $r.simulate.tmpfs.ratio >= 0.9 else null end)},
    simulate_vs_fio_loop: {value: ($r.simulate.loop.ratio | r3), target: ">= 0.9 (ext4 on a loop device)",
                           met: (if $r.simulate.loop then $r.simulate.loop.ratio >= 0.9 else null end)},
    validate_rss_vs_commands: {value: (if $r.validate.big and $r.validate.few_cmds then
                                         ($r.validate.big.peak_rss_kib / $r.validate.few_cmds.peak_rss_kib | r3) else null end),
                               target: "~1 (peak RSS, 10x the commands on the same objects)",
                               met: (if $r.validate.big and $r.validate.few_cmds then
                                       $r.validate.big.peak_rss_kib <= 1.25 * $r.validate.few_cmds.peak_rss_kib else null end)}
  }
