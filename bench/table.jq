# bench/table.jq — results.json (kvio.bench/2) -> the human tables `make bench` prints at the end.
def f(d): if . == null then "-" else (. * pow(10; d) | round / pow(10; d) | tostring) end;
def mmm(d): if . == null then "-" else "\(.min | f(d)) / \(.median | f(d)) / \(.max | f(d))" end;
def pad(n): tostring | if length < n then . + (" " * (n - length)) else . end;

"machine: \(.machine.nproc) CPUs (\(.machine.cpu)), \(.machine.mem_kib / 1048576 | f(1)) GiB, kernel \(.machine.kernel), \(.machine.kvio_version) (source HEAD \(.machine.git_head)), \(.machine.date)",
"",
"tracer overhead: fio randread 4 KiB QD 32, \(.machine.rounds) rounds x \(.machine.fio_secs) s; min / median / max over rounds.",
"  BPF ns/cmd: every program of the tracer (kvio: --stats; bpftrace: bpftool with kernel.bpf_stats_enabled) over the",
"  device commands traced. The machine is shared: IOPS swing between rounds, the ns per command is the stable figure.",
(.overhead | to_entries[] | .key as $e |
  "  \($e):",
  "    \("mode" | pad(16)) \("IOPS" | pad(26)) \("IOPS cost % (paired)" | pad(24)) \("BPF ns/cmd" | pad(20)) \("x bpftrace" | pad(20)) \("dropped" | pad(12)) +ns per syscall",
  (.value | to_entries[] |
    "    \(.key | pad(16)) \(.value.iops | mmm(0) | pad(26)) \(.value.overhead_pct | mmm(2) | pad(24)) \(.value.ns_per_cmd | mmm(0) | pad(20)) \(.value.ns_vs_bpftrace | mmm(2) | pad(20)) \(.value.dropped | mmm(0) | pad(12)) \(.value.syscall_added_ns | mmm(0))"),
  "    (+ns per syscall: getppid with the tracer attached minus untraced, paired by round; bench/syscall_cost.c)",
  "    per program (medians: ns per run, runs per command, ns per command):",
  (.value | to_entries[] | select(.value.programs | length > 0) |
    "      \(.key | pad(16)) " + ([.value.programs[] | select((.ns_per_cmd // 0) >= 1) | "\(.name) \(.ns_per_run | f(0)) x \(.runs_per_cmd | f(2)) = \(.ns_per_cmd | f(0))"] | join(", ")))),
"",
(if (.scrape_cost // {}) != {} then "scrape cost: kvio trace --listen scraped every second vs the same trace unscraped (kvio_hist), IOPS ratio paired by round (1 = no cost); min / median / max" else empty end),
(.scrape_cost // {} | to_entries[] |
  "  \(.key | pad(9)) \(.value.rounds) rounds, \(.value.scrapes | mmm(0)) scrapes per run, IOPS ratio \(.value.iops_ratio | mmm(3))"),
"",
"workload driver: kvio gen vs fio, same bytes / block size / QD / engine; MB/s min / median / max",
(.gen | to_entries[] |
  "  \(.key | pad(9)) QD \(.value.qd) bs \(.value.bs)  kvio gen \(.value.gen_mbps | mmm(0))  fio (\(.value.fio_engine)) \(.value.fio_mbps | mmm(0))  ratio \(.value.ratio | mmm(3))"),
"",
"validate (offset join, synthetic): one run each",
(.validate | to_entries[] |
  "  \(.key | pad(9)) \(.value.commands) cmds / \(.value.objects) objects: \(.value.elapsed_s) s wall, \(.value.cmds_per_s | floor) cmds/s, \(.value.cmds_per_cpu_s | floor) cmds per CPU-s, peak RSS \(.value.peak_rss_kib / 1024 | f(1)) MiB"),
"",
(if .distill then "distill: \(.distill.records) records (\(.distill.file_bytes / 1048576 | floor) MiB) in \(.distill.elapsed_s) s (\(.distill.records_per_s | floor) records/s), peak RSS \(.distill.peak_rss_kib / 1024 | f(1)) MiB" else empty end),
"",
(if (.simulate // {}) != {} then "simulate (storage baseline) vs fio at the same streams / entry sizes / bytes; min / median / max over rounds" else empty end),
((.simulate // {}) | to_entries[] |
  if .value.ratio then "  \(.key | pad(9)) load \(.value.load1 | mmm(1))  kvio simulate \(.value.sim_mbps | mmm(0)) MB/s  fio \(.value.fio_mbps | mmm(0)) MB/s (\(.value.write_streams.median)+\(.value.read_streams.median) streams)  ratio \(.value.ratio | mmm(3))  CPU per byte fio/kvio \(.value.cpu_per_byte_fio_over_sim | mmm(2))  own/syscall time >= 16 MiB p50: write \(.value.large_write_overhead_p50 | mmm(4)) read \(.value.large_read_overhead_p50 | mmm(4))  (benchmark host/device p50: write \(.value.write_host_over_device_p50 | mmm(2)), read \(.value.read_host_over_device_p50 | mmm(2)))"
  else "  \(.key | pad(9)) Python benchmark \(.value.py_mbps | mmm(0)) MB/s (its elapsed_time), kvio/Python \(.value.kvio_over_python | mmm(2))x; over process wall time \(.value.kvio_over_python_wall | mmm(2))x; Python CPU per byte / kvio \(.value.python_cpu_per_byte_over_kvio | mmm(2))x" end),
"",
(if .clients then
  "simulate clients on one tmpfs, \(.clients.rounds) rounds x \(.clients.secs) s (storage MB/s and paired ratios; min / median / max)",
  "  1 client \(.clients.single_mbps | mmm(0))  --num-clients 2 \(.clients.procs2_mbps | mmm(0))  mpirun -np 2 \(.clients.mpi2_mbps | mmm(0))",
  "  --num-clients 2 / 1 client \(.clients.procs2_over_single | mmm(2))  mpirun -np 2 / 1 client \(.clients.mpi2_over_single | mmm(2))  mpirun / --num-clients \(.clients.mpi2_over_procs2 | mmm(2))",
  "" else empty end),
(if .verify then
  "simulate --verify-reads on tmpfs, \(.verify.rounds) rounds x \(.verify.secs) s (min / median / max; load \(.verify.load1 | mmm(1)))",
  "  storage reads \(.verify.plain_read_mbps | mmm(0)) MB/s, with --verify-reads \(.verify.verify_read_mbps | mmm(0)) MB/s; paired ratio reads \(.verify.read_ratio | mmm(3)), reads+writes \(.verify.total_ratio | mmm(3))",
  "  the check itself (thread CPU time): \(.verify.check_gb_per_cpu_s | mmm(1)) GB per CPU second, \(.verify.check_share_of_read_time | mmm(3)) of the storage read time",
  "" else empty end),
(if .remote then
  "simulate --remote-tier vs redis-benchmark, \(.remote.rounds) rounds x \(.remote.secs) s, \(.remote.chunk_bytes)-byte values (min / median / max; load \(.remote.load1 | mmm(1)))",
  "  kvio \(.remote.kvio_mbps | mmm(0)) MB/s; redis-benchmark SET \(.remote.rb_set_mbps | mmm(0)) GET \(.remote.rb_get_mbps | mmm(0)) MB/s, at kvio's mix \(.remote.rb_mbps | mmm(0)) MB/s",
  "  kvio while a request was in flight \(.remote.kvio_in_flight_mbps | mmm(0)) MB/s (\(.remote.kvio_in_flight_share | mmm(2)) of the run, \(.remote.kvio_concurrency | mmm(2)) in flight); paired ratio \(.remote.ratio | mmm(3)); per connection \(.remote.conn_ratio | mmm(3))",
  (if .remote.exact_ratio then "  kvio's own commands replayed through hiredis \(.remote.replay_mbps | mmm(0)) MB/s in flight: ratio \(.remote.exact_ratio | mmm(3)); server CPU-ms per MB kvio \(.remote.kvio_srv_cpu_ms_per_mb | mmm(2)), replay \(.remote.replay_srv_cpu_ms_per_mb | mmm(2)), redis-benchmark \(.remote.mix_srv_cpu_ms_per_mb | mmm(2)); jemalloc pages purged per MB kvio \(.remote.kvio_srv_purged_per_mb | mmm(0)), replay \(.remote.replay_srv_purged_per_mb | mmm(0)), redis-benchmark \(.remote.mix_srv_purged_per_mb | mmm(0))" else empty end),
  "" else empty end),
(if (.drives // {}) != {} then "kvio drives around fio (4 KiB randread QD 32); cost % paired with plain fio by round (min / median / max)" else empty end),
((.drives // {}) | to_entries[] |
  "  \(.key | pad(9)) \(.value.rounds) rounds, load \(.value.load1 | mmm(1)): fio \(.value.plain_iops | mmm(0)) IOPS, inside kvio drives \(.value.drives_iops | mmm(0))",
  "        cost: bandwidth log \(.value.bwlog_cost_pct | mmm(2)) %, tracer \(.value.trace_cost_pct | mmm(2)) % (\(.value.trace_ns_per_cmd | mmm(0)) BPF ns/cmd), kvio drives \(.value.cost_pct | mmm(2)) %",
  "        tracer before (--qd-sample 16): \(.value.trace_before_cost_pct | mmm(2)) %, \(.value.trace_before_ns_per_cmd | mmm(0)) BPF ns/cmd; --d2c-sample 16 saves \(.value.saving_ns | mmm(0)) ns/cmd",
  "        bpftrace drives_equiv.bt: \(.value.bpftrace_cost_pct | mmm(2)) %, \(.value.bpftrace_ns_per_cmd | mmm(0)) BPF ns/cmd; kvio / bpftrace ns per command \(.value.ns_vs_bpftrace | mmm(3))",
  "        fio's CPU per command (us): plain \(.value.fio_cpu_us_per_cmd.plain | mmm(2)), bandwidth log \(.value.fio_cpu_us_per_cmd.bwlog | mmm(2)), traced \(.value.fio_cpu_us_per_cmd.trace | mmm(2)), inside kvio drives \(.value.fio_cpu_us_per_cmd.drives | mmm(2))",
  "        machine CPU per command (us): plain \(.value.busy_us_per_cmd.plain | mmm(2)), bandwidth log \(.value.busy_us_per_cmd.bwlog | mmm(2)), traced \(.value.busy_us_per_cmd.trace | mmm(2))"),
(if (.drives // {}) != {} then "" else empty end),
"targets:",
(.targets | to_entries[] | "  \(.key | pad(32)) \(.value.value | tostring | pad(10)) target \(.value.target): \(
  if .value | has("verdict") then (.value.verdict // "not measured") + (if .value.spread.min then " (rounds \(.value.spread | mmm(2)))" else "" end)
  elif .value.met == null then "not measured" elif .value.met then "met" else "MISSED" end)")
