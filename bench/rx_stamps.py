#!/usr/bin/env python3
# What the kernel's receive stamps (SO_TIMESTAMPNS, Linux) can tell once a
# client falls behind (issue 30; docs/metrics.md, "What a stamp promises").
# A server thread writes N events GAP seconds apart on loopback, with Nagle
# off; the client sleeps STOP seconds (as a stopped or starved client would
# not read), then reads with recvmsg, READ bytes at a time (0: one event's
# size), and prints each event's stamp against the time it was written.
# QUICKACK=1 acknowledges every segment at once; 0 (the default) asks for
# delayed ACKs, as goodput's own HTTP/1.1 client does.
#   bench/rx_stamps.py [N] [GAP] [STOP] [READ] [QUICKACK]
# Standard library only. On kernel 6.18: segments that arrive while the one
# before waits unread are merged into it, and the merged one keeps the later
# stamp, so the events of a read after a stall carry the last one's time
# however small the reads are.
import socket, struct, sys, threading, time

SO_TIMESTAMPNS = 35  # also SCM_TIMESTAMPNS
n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
gap = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
stop = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
read_size = int(sys.argv[4]) if len(sys.argv) > 4 else 0
quickack = int(sys.argv[5]) if len(sys.argv) > 5 else 0


def event(i):
    return b'data: {"i":%03d,"x":"' % i + b"y" * 60 + b'"}\n\n'


size = len(event(0))
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
written = []


def serve():
    c, _ = listener.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.recv(100)
    t0 = time.time()
    for i in range(n):
        while time.time() < t0 + i * gap:
            pass
        c.send(event(i))
        written.append(time.time())
    time.sleep(1)
    c.close()


threading.Thread(target=serve, daemon=True).start()
client = socket.create_connection(listener.getsockname())
client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
if not quickack:
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
client.send(b"go")
time.sleep(stop)
got, reads = 0, []
while got < n * size:
    data, ancillary, _, _ = client.recvmsg(read_size or size, 256)
    now = time.time()
    stamp = None
    for level, kind, d in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            s, ns = struct.unpack("qq", d[:16])
            stamp = s + ns * 1e-9
    got += len(data)
    reads.append((got, stamp, now))
print("event  written_ms  stamp_ms  late_ms  read_lag_ms   (the event that ends each read)")
for end, stamp, now in reads:
    i = (end - 1) // size
    t0 = written[0]
    if stamp is None:
        print(f"{i:5d} {(written[i] - t0) * 1e3:11.1f}  (no stamp)")
        continue
    print(
        f"{i:5d} {(written[i] - t0) * 1e3:11.1f} {(stamp - t0) * 1e3:9.1f} {(stamp - written[i]) * 1e3:8.1f}"
        f" {(now - stamp) * 1e3:12.1f}"
    )
