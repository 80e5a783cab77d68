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
# atleast(target; noise): verdict() for a floor: "met" when every round is at or above it, "missed" when none is,
# "inside noise" when the rounds straddle it and spread wider than `noise` (for a ratio target of 0.9: 0.1, the
# margin the target allows below 1), else by the median
def atleast($t; $noise): if . == null or .median == null then null
    elif .min >= $t then "met" elif .max < $t then "missed"
    elif (.max - .min) > $noise then "inside noise"
    elif .median >= $t then "met" else "missed" end;
# atmost(target; noise): verdict() for a ceiling near 1 (a ratio against a peer): "met" when every round is within
# it, "missed" when none is, "inside noise" when the rounds straddle it and spread wider than `noise`, else by the median
def atmost($t; $noise): if . == null or .median == null then null
    elif .max <= $t then "met" elif .min > $t then "missed"
    elif (.max - .min) > $noise then "inside noise"
    elif .median <= $t then "met" else "missed" end;
def t_peer: 1.1;
def modes: ["untraced", "kvio_hist", "kvio_child", "kvio_comm", "kvio_comm_block", "kvio_pid", "kvio_events", "kvio_events_bin", "bpftrace", "kvio_listen", "kvio_files", "peer_hist"];

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
        | ([$oe[] | select(.mode == "peer_hist" and .ns_per_cmd != null)] | map({key: (.round | tostring), value: .ns_per_cmd}) | from_entries) as $peerns
        | ([$oe[] | select(.mode == "untraced" and .syscall_ns != null)] | map({key: (.round | tostring), value: .syscall_ns}) | from_entries) as $basesc
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
                # this binary's BPF ns per command over KVIO_BENCH_PEER's (peer_hist) in the same round
                ns_vs_peer: ([$runs[] | select(.ns_per_cmd != null and $peerns[.round | tostring]) | .ns_per_cmd / $peerns[.round | tostring]] | stats),
                # ns per getppid more than the untraced run of the round (bench/syscall_cost.c, after fio, tracer attached)
                syscall_added_ns: ([$runs[] | select(.syscall_ns != null and $basesc[.round | tostring]) | .syscall_ns - $basesc[.round | tostring]] | stats),
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
    # --files vs the same trace without it, paired by round: BPF ns per command added, IOPS ratio. From the files
    # stage (a file of ext4 over the loop device: direct I/O has a file to attribute) where it ran, else from the
    # overhead stage's kvio_files against kvio_hist (the raw loop device)
    files_cost: (reduce (([$o[] | .engine] + [$raw[] | select(.stage == "files") | .engine]) | unique)[] as $e ({};
        [$raw[] | select(.stage == "files" and .engine == $e)] as $fs
        | if ($fs | length) > 0 then
            ([$fs[] | select(.mode == "plain")] | map({key: "\(.round) \(.rw)", value: .}) | from_entries) as $plain
            | [$fs[] | select(.mode == "files" and $plain["\(.round) \(.rw)"] and .ns_per_cmd != null)] as $runs
            | if ($runs | length) == 0 then . else . + {($e): {
                rounds: ($runs | length), workload: "files stage: randread and randwrite on a file of ext4",
                ns_added_per_cmd: ([$runs[] | .ns_per_cmd - $plain["\(.round) \(.rw)"].ns_per_cmd] | stats),
                iops_ratio: ([$runs[] | .iops / $plain["\(.round) \(.rw)"].iops] | stats)}} end
          else
            [$o[] | select(.engine == $e)] as $oe
            | ([$oe[] | select(.mode == "kvio_hist")] | map({key: (.round | tostring), value: .}) | from_entries) as $hist
            | [$oe[] | select(.mode == "kvio_files" and $hist[.round | tostring] and .ns_per_cmd != null)] as $runs
            | if ($runs | length) == 0 then . else . + {($e): {
                rounds: ($runs | length), workload: "overhead stage: randread on the raw loop device",
                ns_added_per_cmd: ([$runs[] | .ns_per_cmd - $hist[.round | tostring].ns_per_cmd] | stats),
                iops_ratio: ([$runs[] | .iops / $hist[.round | tostring].iops] | stats)}} end
          end)),
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
    simulate: ([$raw[] | select(.stage == "simulate")] | group_by(.mode) | map({key: .[0].mode, value: (
        if .[0].ratio != null then {
            runs: length, sim_mbps: ([.[].sim_mbps] | stats), fio_mbps: ([.[].fio_mbps] | stats), ratio: ([.[].ratio] | stats),
            cpu_per_byte_fio_over_sim: ([.[].cpu_per_byte_fio_over_sim] | stats),
            write_streams: ([.[].write_streams] | stats), read_streams: ([.[].read_streams] | stats),
            mean_in_flight: ([.[].mean_in_flight] | stats), load1: ([.[].load1 // empty] | stats),
            large_write_overhead_p50: ([.[].large_write_overhead.p50 // empty] | stats),
            large_read_overhead_p50: ([.[].large_read_overhead.p50 // empty] | stats),
            write_host_over_device_p50: ([.[].write_host_over_device_p50 // empty] | stats),
            read_host_over_device_p50: ([.[].read_host_over_device_p50 // empty] | stats)}
        else {runs: length, py_mbps: ([.[].py_mbps] | stats), kvio_mbps: ([.[].kvio_mbps] | stats),
              kvio_over_python: ([.[].kvio_over_python] | stats), kvio_over_python_wall: ([.[].kvio_over_python_wall // empty] | stats),
              python_cpu_per_byte_over_kvio: ([.[].python_cpu_per_byte_over_kvio // empty] | stats)} end)}) | from_entries),
    clients: ([$raw[] | select(.stage == "clients")] as $c | if ($c | length) == 0 then null else {
        rounds: ($c | length), secs: $c[0].secs,
        single_mbps: ([$c[].single_mbps] | stats), procs2_mbps: ([$c[].procs2_mbps] | stats), mpi2_mbps: ([$c[].mpi2_mbps] | stats),
        procs2_over_single: ([$c[].procs2_over_single] | stats), mpi2_over_single: ([$c[].mpi2_over_single] | stats),
        mpi2_over_procs2: ([$c[].mpi2_over_procs2] | stats)} end),
    verify: ([$raw[] | select(.stage == "verify")] as $c | if ($c | length) == 0 then null else {
        rounds: ($c | length), secs: $c[0].secs, load1: ([$c[].load1] | stats),
        plain_read_mbps: ([$c[].plain_read_mbps] | stats), verify_read_mbps: ([$c[].verify_read_mbps] | stats),
        read_ratio: ([$c[].read_ratio] | stats), total_ratio: ([$c[].total_ratio] | stats),
        check_gb_per_cpu_s: ([$c[].check_gb_per_cpu_s] | stats),
        check_share_of_read_time: ([$c[].check_share_of_read_time] | stats)} end),
    remote: ([$raw[] | select(.stage == "remote")] as $c | if ($c | length) == 0 then null else {
        rounds: ($c | length), secs: $c[0].secs, load1: ([$c[].load1] | stats), chunk_bytes: $c[0].chunk_bytes,
        connections: ([$c[].connections] | stats), kvio_mbps: ([$c[].kvio_mbps] | stats),
        mix_set_connections: ([$c[].mix_set_connections // empty] | stats),
        mix_get_connections: ([$c[].mix_get_connections // empty] | stats),
        rb_set_mbps: ([$c[].rb_set_mbps] | stats), rb_get_mbps: ([$c[].rb_get_mbps] | stats),
        rb_mbps: ([$c[].rb_mbps] | stats), kvio_conn_mbps: ([$c[].kvio_conn_mbps // empty] | stats),
        rb_conn_mbps: ([$c[].rb_conn_mbps // empty] | stats), elapsed_ratio: ([$c[].elapsed_ratio // empty] | stats),
        conn_ratio: ([$c[].conn_ratio // empty] | stats), kvio_in_flight_mbps: ([$c[].kvio_in_flight_mbps // empty] | stats),
        kvio_in_flight_share: ([$c[].kvio_in_flight_share // empty] | stats),
        kvio_concurrency: ([$c[].kvio_concurrency // empty] | stats), mix_mbps: ([$c[].mix_mbps // empty] | stats),
        kvio_srv_cpu_ms_per_mb: ([$c[].kvio_srv_cpu_ms_per_mb // empty] | stats),
        mix_srv_cpu_ms_per_mb: ([$c[].mix_srv_cpu_ms_per_mb // empty] | stats),
        kvio_srv_faults_per_mb: ([$c[].kvio_srv_faults_per_mb // empty] | stats),
        mix_srv_faults_per_mb: ([$c[].mix_srv_faults_per_mb // empty] | stats),
        kvio_srv_purged_per_mb: ([$c[].kvio_srv_purged_per_mb // empty] | stats),
        mix_srv_purged_per_mb: ([$c[].mix_srv_purged_per_mb // empty] | stats),
        replay_mbps: ([$c[].replay_mbps // empty] | stats), replay_srv_cpu_ms_per_mb: ([$c[].replay_srv_cpu_ms_per_mb // empty] | stats),
        replay_srv_faults_per_mb: ([$c[].replay_srv_faults_per_mb // empty] | stats),
        replay_srv_purged_per_mb: ([$c[].replay_srv_purged_per_mb // empty] | stats),
        exact_ratio: ([$c[].exact_ratio // empty] | stats),
        separate_ratio: ([$c[].separate_ratio // empty] | stats), ratio: ([$c[].ratio] | stats)} end),
    fidelity: ([$raw[] | select(.stage == "fidelity")] | group_by(.mode) | map({key: .[0].mode, value: {rounds: length,
        qd_tv: ([.[].qd_tv] | stats), worst_depth_tv: ([.[].worst_depth_tv] | stats), rwmix_err_points: ([.[].rwmix_err_points] | stats),
        size_tv_max: ([.[] | [.size_tv_read, .size_tv_write] | max] | stats)}}) | from_entries),
    drives: ([$raw[] | select(.stage == "drives")] | group_by(.mode) | map({key: .[0].mode, value: (. as $c | {
        rounds: ($c | length), load1: ([$c[].load1] | stats), plain_iops: ([$c[].plain_iops] | stats),
        bwlog_iops: ([$c[].bwlog_iops] | stats), trace_iops: ([$c[].trace_iops] | stats),
        drives_iops: ([$c[].drives_iops] | stats), bwlog_cost_pct: ([$c[].bwlog_cost_pct] | stats),
        trace_cost_pct: ([$c[].trace_cost_pct] | stats), cost_pct: ([$c[].cost_pct] | stats),
        trace_ns_per_cmd: ([$c[].trace_ns_per_cmd // empty] | stats),
        trace_before_iops: ([$c[].trace_before_iops // empty] | stats), trace_before_cost_pct: ([$c[].trace_before_cost_pct // empty] | stats),
        trace_before_ns_per_cmd: ([$c[].trace_before_ns_per_cmd // empty] | stats), saving_ns: ([$c[].saving_ns // empty] | stats),
        bpftrace_cost_pct: ([$c[].bpftrace_cost_pct // empty] | stats), bpftrace_ns_per_cmd: ([$c[].bpftrace_ns_per_cmd // empty] | stats),
        ns_vs_bpftrace: ([$c[].ns_vs_bpftrace // empty] | stats),
        programs: ([$c[] | ((.trace_programs // [])[] | {mode: "trace", name, ns_per_run, ns_per_cmd}),
                                ((.trace_before_programs // [])[] | {mode: "trace_before", name, ns_per_run, ns_per_cmd}),
                                ((.bpftrace_programs // [])[] | {mode: "bpftrace", name, ns_per_run, ns_per_cmd})]
                   | group_by([.mode, .name]) | map({key: (.[0].mode + " " + .[0].name), value: {ns_per_run: ([.[].ns_per_run] | stats), ns_per_cmd: ([.[].ns_per_cmd] | stats)}}) | from_entries),
        fio_cpu_us_per_cmd: ([$c[0].fio_cpu_us_per_cmd | keys[]] | map({key: ., value: (. as $k | [$c[].fio_cpu_us_per_cmd[$k] // empty] | stats)}) | from_entries),
        busy_us_per_cmd: ({plain: ([$c[].busy_us_per_cmd.plain // empty] | stats), bwlog: ([$c[].busy_us_per_cmd.bwlog // empty] | stats),
                           trace: ([$c[].busy_us_per_cmd.trace // empty] | stats),
                           trace_before: ([$c[].busy_us_per_cmd.trace_before // empty] | stats),
                           bpftrace: ([$c[].busy_us_per_cmd.bpftrace // empty] | stats)})})}) | from_entries),
    audit: ([$raw[] | select(.stage == "audit")] | map({key: .mode, value: (del(.stage, .mode))}) | from_entries)
  }
| . as $r
| .targets = ([$engines[] as $e | $r.overhead[$e] as $x |
    {("kernel_ns_hist_" + $e): {value: ($x.kvio_hist.ns_vs_bpftrace.median | r3), spread: $x.kvio_hist.ns_vs_bpftrace,
        target: "<= 0.5 x bpftrace (BPF ns per command, kvio trace -d / kvio_equiv.bt)", verdict: ($x.kvio_hist.ns_vs_bpftrace | verdict(0.5))}},
    (if $x.kvio_hist.ns_vs_peer then {("kernel_ns_vs_peer_" + $e): {value: ($x.kvio_hist.ns_vs_peer.median | r3), spread: $x.kvio_hist.ns_vs_peer,
        target: "<= 1.1 x the KVIO_BENCH_PEER binary (BPF ns per command, kvio trace -d, same rounds)",
        verdict: ($x.kvio_hist.ns_vs_peer | atmost(t_peer; t_peer - 1))}} else {} end),
    ({("kernel_ns_filter_" + $e): {value: ([$x.kvio_child, $x.kvio_comm, $x.kvio_pid | .ns_vs_bpftrace.median // empty] | max | r3),
        spread: {child: $x.kvio_child.ns_vs_bpftrace, comm: $x.kvio_comm.ns_vs_bpftrace, pid: $x.kvio_pid.ns_vs_bpftrace},
        target: "<= 0.75 x bpftrace with a task filter (-- fio, -c fio, -p PID; the worst of the three)",
        verdict: ([$x.kvio_child, $x.kvio_comm, $x.kvio_pid | .ns_vs_bpftrace | verdict(0.75)] |
                  if any(. == "missed") then "missed" elif any(. == "inside noise") then "inside noise" elif length > 0 and all(. == "met") then "met" else null end)}}),
    {("kernel_ns_events_bin_" + $e): {value: ($x.kvio_events_bin.ns_vs_bpftrace.median | r3), spread: $x.kvio_events_bin.ns_vs_bpftrace,
        target: "<= 1 x bpftrace (binary capture of -- fio)", verdict: ($x.kvio_events_bin.ns_vs_bpftrace | verdict(1))}},
    (if $r.files_cost[$e] then {("files_ns_added_" + $e): {value: ($r.files_cost[$e].ns_added_per_cmd.median | r3),
        spread: $r.files_cost[$e].ns_added_per_cmd,
        target: "<= 150 ns per command added by --files (BPF ns, paired with kvio trace -d of the same round; \($r.files_cost[$e].workload))",
        verdict: ($r.files_cost[$e].ns_added_per_cmd | verdict(150))}} else {} end),
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
  ] | add // {}) + ([($r.drives // {}) | to_entries[] |
    {("drives_cost_" + .key): {value: (.value.cost_pct.median | r3), spread: .value.cost_pct,
        target: "<= 2 % (fio IOPS inside kvio drives vs plain fio, paired per round; \(.key) device)",
        verdict: (.value.cost_pct | verdict(2))}},
     {("drives_tracer_ns_vs_bpftrace_" + .key): {value: (.value.ns_vs_bpftrace.median | r3), spread: .value.ns_vs_bpftrace,
        target: "< 1: kvio drives tracer BPF ns per command / bpftrace drives_equiv.bt, paired per round (\(.key) device)",
        met: (if .value.ns_vs_bpftrace.median then .value.ns_vs_bpftrace.median < 1 else null end)}}] | add // {}) + {
    gen_vs_fio_posix: {value: ($r.gen.posix.ratio.median | r3), target: ">= 0.97",
                       met: (if $r.gen.posix then $r.gen.posix.ratio.median >= 0.97 else null end)},
    gen_vs_fio_io_uring: {value: ($r.gen.io_uring.ratio.median | r3), target: ">= 0.97",
                          met: (if $r.gen.io_uring then $r.gen.io_uring.ratio.median >= 0.97 else null end)},
    validate_cmds_per_cpu_s: {value: ($r.validate.big.cmds_per_cpu_s | if . then floor else null end), target: ">= 5000000 on one core (kvio.events/1 JSONL)",
                              met: (if $r.validate.big then $r.validate.big.cmds_per_cpu_s >= 5e6 else null end)},
    validate_bin_cmds_per_cpu_s: {value: ($r.validate.big_bin.cmds_per_cpu_s | if . then floor else null end),
                                  target: ">= 5000000 on one core (kvio.events.bin/1 capture)",
                                  met: (if $r.validate.big_bin then $r.validate.big_bin.cmds_per_cpu_s >= 5e6 else null end)},
    simulate_vs_fio_tmpfs: {value: ($r.simulate.tmpfs.ratio.median | r3), spread: $r.simulate.tmpfs.ratio,
                            target: ">= 0.9 x fio (storage bytes/s; same streams, entry sizes, bytes)", verdict: ($r.simulate.tmpfs.ratio | atleast(0.9; 0.1))},
    simulate_vs_fio_loop: {value: ($r.simulate.loop.ratio.median | r3), spread: $r.simulate.loop.ratio,
                           target: ">= 0.9 x fio (ext4 on a loop device)", verdict: ($r.simulate.loop.ratio | atleast(0.9; 0.1))},
    simulate_own_time_large: {value: ([$r.simulate.tmpfs, $r.simulate.loop | .large_write_overhead_p50.median // empty, .large_read_overhead_p50.median // empty] | max | r3),
                              spread: {tmpfs_write: $r.simulate.tmpfs.large_write_overhead_p50, tmpfs_read: $r.simulate.tmpfs.large_read_overhead_p50,
                                       loop_write: $r.simulate.loop.large_write_overhead_p50, loop_read: $r.simulate.loop.large_read_overhead_p50},
                              target: "<= 0.05 x syscall time per storage op >= 16 MiB (p50; worst of tmpfs/loop, write/read)",
                              verdict: ([$r.simulate.tmpfs, $r.simulate.loop | .large_write_overhead_p50 // empty, .large_read_overhead_p50 // empty | verdict(0.05)] |
                                        if length == 0 then null elif any(. == "missed") then "missed" elif any(. == "inside noise") then "inside noise" else "met" end)},
    remote_vs_redis_benchmark: {value: ($r.remote.ratio.median | r3), spread: $r.remote.ratio,
                                 target: ">= 0.8 x redis-benchmark (remote bytes/s while a request was in flight vs two redis-benchmark at once, SET of new keys on kvio's write connections and GET on its read connections, kvio's command counts; same server and value size)",
                                 verdict: ($r.remote.ratio | atleast(0.8; 0.2))},
    validate_rss_vs_commands: {value: (if $r.validate.big and $r.validate.few_cmds then
                                         ($r.validate.big.peak_rss_kib / $r.validate.few_cmds.peak_rss_kib | r3) else null end),
                               target: "~1 (peak RSS, 10x the commands on the same objects)",
                               met: (if $r.validate.big and $r.validate.few_cmds then
                                       $r.validate.big.peak_rss_kib <= 1.25 * $r.validate.few_cmds.peak_rss_kib else null end)}
  }
