# bench/summarize.jq — raw.jsonl (slurped: one object per measurement) -> results.json (kvio.bench/1).
# Called by bench/run.sh as: jq -s --slurpfile m machine.json -f bench/summarize.jq raw.jsonl
# Every overhead is paired: a traced run against the untraced run of the same round, so machine drift
# between rounds cancels; min/median/max are over rounds.
def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                   else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def stats: if length == 0 then null else {min: min, median: median, max: max} end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;

. as $raw
| [$raw[] | select(.stage == "overhead")] as $o
| [$raw[] | select(.stage == "gen")] as $g
| ([$o[] | select(.mode == "untraced")] | map({key: (.round | tostring), value: .iops}) | from_entries) as $base
| {
    schema: "kvio.bench/1",
    machine: $m[0],
    overhead: (reduce ("untraced", "kvio_hist", "kvio_events", "kvio_events_bin", "bpftrace") as $mode ({};
        [$o[] | select(.mode == $mode)] as $runs
        | if ($runs | length) == 0 then . else . + {($mode): {
            runs: ($runs | length),
            iops: ([$runs[].iops] | stats),
            overhead_pct: ([$runs[] | select($base[.round | tostring]) | (1 - .iops / $base[.round | tostring]) * 100] | stats),
            events_per_s: ([$runs[] | .events_per_s // empty] | stats),
            events: ([$runs[] | .events // empty] | stats),
            dropped: ([$runs[] | .dropped // empty] | stats)
          }} end)),
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
| .targets = {
    hist_overhead_pct: {value: ($r.overhead.kvio_hist.overhead_pct.median | r3), target: "<= 2",
                        met: (if $r.overhead.kvio_hist then $r.overhead.kvio_hist.overhead_pct.median <= 2 else null end)},
    hist_vs_bpftrace: {value: (if $r.overhead.bpftrace and $r.overhead.kvio_hist then
                                 ($r.overhead.kvio_hist.overhead_pct.median / $r.overhead.bpftrace.overhead_pct.median | r3) else null end),
                       target: "<= 0.5 (kvio histogram overhead / bpftrace overhead, medians)",
                       met: (if $r.overhead.bpftrace and $r.overhead.kvio_hist then
                               $r.overhead.kvio_hist.overhead_pct.median <= 0.5 * $r.overhead.bpftrace.overhead_pct.median else null end)},
    events_overhead_pct: {value: ($r.overhead.kvio_events.overhead_pct.median | r3), target: "<= 8 with 0 drops",
                          met: (if $r.overhead.kvio_events then
                                  $r.overhead.kvio_events.overhead_pct.median <= 8 and $r.overhead.kvio_events.dropped.max == 0 else null end)},
    gen_vs_fio_posix: {value: ($r.gen.posix.ratio.median | r3), target: ">= 0.97",
                       met: (if $r.gen.posix then $r.gen.posix.ratio.median >= 0.97 else null end)},
    gen_vs_fio_io_uring: {value: ($r.gen.io_uring.ratio.median | r3), target: ">= 0.97",
                          met: (if $r.gen.io_uring then $r.gen.io_uring.ratio.median >= 0.97 else null end)},
    events_bin_overhead_pct: {value: ($r.overhead.kvio_events_bin.overhead_pct.median | r3), target: "<= 8 with 0 drops (--events-format bin)",
                              met: (if $r.overhead.kvio_events_bin then
                                      $r.overhead.kvio_events_bin.overhead_pct.median <= 8 and $r.overhead.kvio_events_bin.dropped.max == 0 else null end)},
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
