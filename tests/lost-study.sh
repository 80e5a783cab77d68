#!/usr/bin/env bash
# Reproduces and classifies lost completions (docs/formats.md, "Lost completions"): DistillPhases' two-phase
# workload (768 sequential 64 KiB writes at QD 1, then 4000 random 4 KiB reads at QD 4, libaio, direct) on a loop
# device traced with `kvio trace --events --json --stats`, beside `stress-ng --cpu $(nproc)`, while a tracefs
# instance of our own records block_rq_issue/insert/requeue/complete of every device (clock mono, the clock of
# bpf_ktime_get_ns) and `bpftool prog show` is read before and after the workload (run_cnt, recursion_misses).
#   tests/lost-study.sh [-n RUNS] [--no-stress] [--keep]
# Prints one line per run and, for each run that lost completions, a classification of every lost command:
#   kernel-skip   tracefs recorded its block_rq_complete and no completion program of the tracer ran for it
#                 (the tracer's runs of block_rq_complete_btf fell short of tracefs' completions by as many)
#   not-found     a program ran but did not find the request (unmatched_completes > 0)
#   dropped       the program ran and found it but the ring buffer had no room (dropped > 0)
#   userspace     tracefs has no completion for it at all (in flight at stop) or the counts do not add up
# Needs root, a built $BUILD/kvio, fio, bpftool; leaves nothing behind (loop device, instance, files) unless --keep.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
KVIO=${KVIO_BIN:-$PWD/$BUILD/kvio}
runs=4 stress=1 keep=0
while [ $# -gt 0 ]; do
    case $1 in
    -n) runs=$2; shift 2 ;;
    --no-stress) stress=0; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "lost-study: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "lost-study: -n takes a whole number >= 1, not '$runs'" >&2; exit 2; }
[ -x "$KVIO" ] || { echo "lost-study: $KVIO is not built" >&2; exit 2; }
for t in fio bpftool losetup python3; do
    command -v $t >/dev/null || { echo "lost-study: $t is missing (scripts/deps.sh)" >&2; exit 2; }
done

work=$(mktemp -d /var/tmp/kvio-lost-study.XXXXXX)
tr=/sys/kernel/tracing/instances/kvio-lost-$$
loop="" stress_pid=""
cleanup() {
    [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null && wait "$stress_pid" 2>/dev/null
    [ -d "$tr" ] && { echo 0 >"$tr/tracing_on"; rmdir "$tr"; }
    [ -n "$loop" ] && losetup -d "$loop"
    if [ $keep = 1 ]; then echo "lost-study: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

truncate -s 256M "$work/backing"
loop=$(losetup -f --show --direct-io=on "$work/backing") || exit 1
name=${loop##*/}
dd if=/dev/zero of="$loop" bs=1M count=64 oflag=direct status=none
cat >"$work/job.ini" <<EOF
[global]
filename=$loop
ioengine=libaio
direct=1
[w]
rw=write
bs=64k
iodepth=1
size=64M
io_size=48M
[r]
stonewall
rw=randread
bs=4k
iodepth=4
norandommap=1
size=64M
number_ios=4000
io_size=1G
EOF

mkdir "$tr" || exit 1
echo mono >"$tr/trace_clock"
echo 1 >"$tr/options/record-tgid"
echo 16384 >"$tr/buffer_size_kb"
for e in block_rq_issue block_rq_insert block_rq_requeue block_rq_complete; do
    echo 1 >"$tr/events/block/$e/enable"
done
if [ $stress = 1 ]; then
    stress-ng --cpu "$(nproc)" --timeout 3600 >/dev/null 2>&1 &
    stress_pid=$!
fi

for i in $(seq "$runs"); do
    d=$work/run$i
    mkdir -p "$d"
    echo 0 >"$tr/tracing_on"
    : >"$tr/trace"
    echo 1 >"$tr/tracing_on"
    # Markers on both sides of each bpftool read bound the tracefs window the program counts cover.
    wl="grep -h prog_id /proc/\$PPID/fdinfo/* >$d/prog_ids 2>/dev/null; echo A1 >$tr/trace_marker; bpftool prog show -j >$d/before.json; echo A2 >$tr/trace_marker;"
    wl+=" fio --output=/dev/null $work/job.ini;"
    wl+=" echo B1 >$tr/trace_marker; bpftool prog show -j >$d/after.json; echo B2 >$tr/trace_marker"
    load=$(cut -d' ' -f1 /proc/loadavg)
    nice -n -20 "$KVIO" trace -q -d "$name" --events "$d/ev.jsonl" --json "$d/t.json" --stats -- \
        chrt -f 10 sh -c "$wl" 2>"$d/trace.err"
    echo 0 >"$tr/tracing_on"
    cat "$tr/trace" >"$d/tracefs.txt"
    python3 - "$d" "$(cat "/sys/block/$name/dev")" "$i" "$load" <<'EOF'
import json, re, sys
d, majmin, run, load = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
t = json.load(open(d + "/t.json"))
ev = [json.loads(l) for l in open(d + "/ev.jsonl") if l.strip()]
cmds = [e for e in ev if e.get("type") == "cmd"]
lost = [e for e in cmds if e.get("complete_lost")]
line_re = re.compile(r"^\s*(.+?)-(\d+)\s+\(\s*(\d+|-+)\)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$")
tf, marks, dev_complete = [], {}, 0
for l in open(d + "/tracefs.txt"):
    m = line_re.match(l)
    if not m:
        continue
    comm, pid, tgid, cpu, flags, ts, ev_name, rest = m.groups()
    ts_ns = round(float(ts) * 1e9)
    if ev_name == "tracing_mark_write":
        marks[rest.strip()] = ts_ns
        continue
    f = rest.split()
    rec = dict(comm=comm, pid=int(pid), tgid=tgid, cpu=int(cpu), flags=flags, ts=ts_ns, ev=ev_name, dev=f[0], line=l.rstrip())
    if ev_name in ("block_rq_complete", "block_rq_issue", "block_rq_requeue", "block_rq_insert") and "+" in f:
        p = f.index("+")
        rec["sector"], rec["nsec"] = int(f[p - 1]), int(f[p + 1])
    tf.append(rec)
M, m_ = majmin.split(":")
mydev = "%s,%s" % (M, m_)
completes = [r for r in tf if r["ev"] == "block_rq_complete"]
dev_complete = sum(1 for r in completes if r["dev"] == mydev and r.get("nsec", 0) > 0)
inner = sum(1 for r in completes if marks.get("A2", 0) <= r["ts"] <= marks.get("B1", 0))
outer = sum(1 for r in completes if marks.get("A1", 0) <= r["ts"] <= marks.get("B2", 0))
on_init = [sum(1 for r in completes if r["tgid"] == "1" and marks.get(a, 0) <= r["ts"] <= marks.get(b, 0))
           for a, b in (("A2", "B1"), ("A1", "B2"))]

ours = {int(l.split()[1]) for l in open(d + "/prog_ids") if l.startswith("prog_id:")}

def progs(path):  # the tracer's completion programs (their ids from its fdinfo)
    out = {}
    for p in json.load(open(path)):
        if p["id"] in ours and p.get("name", "").startswith("block_rq_comp"):
            out[(p["name"], p["id"])] = (p.get("run_cnt", 0), p.get("recursion_misses", 0))
    return out

b, a = progs(d + "/before.json"), progs(d + "/after.json")
ran = {k: a[k][0] - b.get(k, (0, 0))[0] for k in a}
misses = {k: a[k][1] for k in a}
c = {k: t.get(k, 0) for k in ("lost_completes", "complete_runs", "unmatched_completes", "partial_completes",
                              "stale_entries", "map_full", "rq_table_spills", "dropped", "rescued_by_backup",
                              "in_flight_at_stop")}
print("run %s load %s: %d commands, lost %d; tracefs completes of %s %d, complete_runs %d (missing %d); "
      "unmatched %d partial %d stale %d map_full %d spills %d dropped %d rescued %d in flight at stop %d; "
      "all-device completes A2..B1 %d A1..B2 %d (on top of pid 1's threads %d, %d), program runs %s, recursion_misses %s; backups %s" %
      (run, load, len(cmds), len(lost), mydev, dev_complete, c["complete_runs"], dev_complete - c["complete_runs"],
       c["unmatched_completes"], c["partial_completes"], c["stale_entries"], c["map_full"], c["rq_table_spills"],
       c["dropped"], c["rescued_by_backup"], c["in_flight_at_stop"], inner, outer, on_init[0], on_init[1], {k[0]: v for k, v in ran.items()},
       {k[0]: v for k, v in misses.items()}, t.get("backups_attached", "?")))
skipped = dev_complete - c["complete_runs"]
on_top = {}
for e in lost:
    cand = [r for r in completes if r["dev"] == mydev and r.get("sector") == e["sector"] and r["ts"] >= e["ts_issue"]
            and (not e.get("ts_lost") or r["ts"] <= e["ts_lost"])]
    if not cand:
        why = "userspace (no tracefs completion: in flight at stop?)"
    elif c["unmatched_completes"]:
        why = "not-found? (unmatched %d)" % c["unmatched_completes"]
    elif c["dropped"]:
        why = "dropped? (ring buffer %d)" % c["dropped"]
    elif skipped >= len(lost):
        why = "kernel-skip"
    else:
        why = "userspace (counts do not add up)"
    key = "%s %s" % (re.sub(r"-\d+$", "", cand[0]["comm"]) if cand else "-", why)
    on_top[key] = on_top.get(key, 0) + 1
    if len(lost) <= 20:
        print("  lost %s sector %d +%d issued %d: %s; tracefs: %s" %
          (e.get("rwbs", ""), e["sector"], e["bytes"] // 512, e["ts_issue"], why, cand[0]["line"] if cand else "-"))
for k, n in sorted(on_top.items(), key=lambda x: -x[1]):
    print("  %d lost, completed on top of %s" % (n, k))
mine = [r for r in completes if r["dev"] == mydev]
tasks = {}
for r in mine:
    k = re.sub(r"-\d+$", "", r["comm"])
    tasks[k] = tasks.get(k, 0) + 1
print("  completions of %s on top of: %s" % (mydev, dict(sorted(tasks.items(), key=lambda x: -x[1]))))
with open(d + "/../totals", "a") as f:
    f.write("%d %d %d\n" % (len(lost), sum(n for k, n in on_top.items() if k.endswith("kernel-skip")), len(cmds)))
EOF
    [ $keep = 1 ] || rm -f "$d/tracefs.txt"
done
awk '{l += $1; k += $2; c += $3; if ($1) r++} END {printf "lost-study: %d runs, %d commands, %d lost (in %d runs), %d of them kernel-skip\n", NR, c, l, r, k}' "$work/totals"
