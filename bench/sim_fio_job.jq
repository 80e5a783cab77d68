# bench/sim_fio_job.jq — the fio peer of one `kvio simulate` run (make bench, simulate stage), from its results
# JSON (kvio.storage_ops): for each kind (write, read) as many fio jobs as the simulation had ops of that kind
# in flight on average (Little's law: Σ op wall time / elapsed, rounded, at least 1 if it had any), all running at
# once as the simulation's did. Job j of a kind takes the j-th of those equal-count slices of the kind's entry-size
# distribution (its 5 % quantiles): files of the slice's mean size (over 10 points of it), rounded to 4 MiB (fio rounds file sizes to
# whole blocks; its random filesize ranges came out as 0 and 2 MiB files here). Writes:
# whole-file sequential buffered writes from a fresh file each time (unlink_each_loop), fsync at each close
# (openfiles=1 closes each file before the next); reads: whole-file sequential reads after POSIX_FADV_DONTNEED
# (invalidate=1). Each job moves its share of the kind's bytes (loops over its files).
# thread=1: fio's jobs are threads of one process, as the simulation's workers are. fio's default, a process per
# job, calls setsid(), which gives every job its own scheduler autogroup (sched_autogroup_enabled=1): on the shared
# bench VM that gave 8 fio jobs ~1 CPU against the simulation's ~0.28 at the same CPU time per byte.
# Args: --arg dir DIR, --argjson budget BYTES (room for fio's files), --arg part main|prep (prep: the read files
# only, create_only=1, laid out before the timed run so that layout does not overlap the timed writes).
def at($q; $f): ($f * 20) as $x | ($x | floor) as $i | if $i >= 20 then $q[20] else $q[$i] + ($q[$i + 1] - $q[$i]) * ($x - $i) end;
def streams($k): if $k.ops > 0 then ([($k.mean_in_flight | round), 1] | max) else 0 end;
.kvio.storage_ops as $s
| (streams($s.write)) as $cw | (streams($s.read)) as $cr
| ($budget / ([$cw + $cr, 1] | max)) as $per_job
| [ (if $part == "main" then {kind: "write", c: $cw, k: $s.write} else empty end), {kind: "read", c: $cr, k: $s.read} ]
| map(select(.c > 0) | . as $g | range(0; $g.c) as $j
      | ([range(0; 10) as $i | at($g.k.size_quantiles_bytes; ($j + ($i + 0.5) / 10) / $g.c)] | add / 10) as $m
      | ([($m / 4194304 | round) * 4194304, 4194304] | max) as $mean
      | ([([($per_job / $mean | floor), 1] | max), ([($g.k.bytes / $g.c / $mean | floor), 1] | max)] | min) as $n
      | ([(($g.k.bytes / $g.c) / ($n * $mean) | round), 1] | max) as $loops
      | "[\($g.kind)\($j)]\nrw=\($g.kind)\nfilesize=\($mean)\nnrfiles=\($n)\n"
        + "filename_format=kv\($g.kind)\($j).$filenum\nloops=\($loops)\n"
        + (if $g.kind == "write" then "bs=2M\nfsync_on_close=1\nunlink_each_loop=1\n" else "bs=4M\ninvalidate=1\n" end)
        + (if $part == "prep" then "create_only=1\n" else "" end))
| "# fio peer of a kvio simulate run: \($cw) write and \($cr) read streams\n[global]\ndirectory=\($dir)\nioengine=psync\n"
  + "openfiles=1\nfile_service_type=sequential\nthread=1\n\n" + join("\n")
