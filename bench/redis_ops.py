#!/usr/bin/env python3
"""bench/redis_ops.py: the SET/GET/DEL commands a process sent to a Redis server, from an strace log, as the OPS
file bench/redis_replay.c replays (docs/performance.md, "Remote tier: where the time goes").

usage: redis_ops.py STRACE_LOG > OPS
  STRACE_LOG: `strace -f -qq --seccomp-bpf -ttt -s 400 -e trace=writev,write,sendto -o STRACE_LOG CMD`. Each call
  whose buffer (writev: its first iovec) starts a RESP command SET, GET, GETEX or DEL becomes one line
  "T_S CONN OP KEY N": T_S seconds after the first command, CONN the file descriptor, N the SET value's bytes (its
  bulk length), 0 for a GET (the replay counts the reply's), the key count for a DEL (KEY its first key). Other
  commands (INFO, CONFIG, CLIENT, RPUSH...) and the later calls of a partial write are left out; a line it cannot
  read is an error naming the log's line."""
import re
import sys

CALL = re.compile(r'^\d+\s+(\d+\.\d+)\s+(?:writev|write|sendto)\((\d+),\s*(?:\[\{iov_base=)?"((?:[^"\\]|\\.)*)"')


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: redis_ops.py STRACE_LOG > OPS", file=sys.stderr)
        return 2
    t0 = None
    out = []
    with open(sys.argv[1], encoding="latin-1") as f:
        for n, line in enumerate(f, 1):
            m = CALL.match(line)
            if not m or not m.group(3).startswith("*"):
                continue
            t, fd, buf = float(m.group(1)), int(m.group(2)), m.group(3)
            parts = buf.split("\\r\\n")
            try:
                argc = int(parts[0][1:])
                verb = parts[2].upper()
            except (IndexError, ValueError):
                continue  # not a command's start (a value that begins with '*')
            if verb not in ("SET", "GET", "GETEX", "DEL"):
                continue
            try:
                key = parts[4]
                if verb == "SET":
                    size = int(parts[5][1:])
                elif verb == "DEL":
                    size = argc - 1
                else:
                    size = 0
            except (IndexError, ValueError):
                print(f"redis_ops: {sys.argv[1]}:{n}: {verb} cut short (strace -s too small?)", file=sys.stderr)
                return 1
            if t0 is None:
                t0 = t
            out.append(f"{t - t0:.6f} {fd} {'GET' if verb == 'GETEX' else verb} {key} {size}")
    sys.stdout.write("\n".join(out) + ("\n" if out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
