"""Server benchmarks (docs/server.md), printed side by side:

1. images/s through the standalone server (a `sglang-mm serve` process, 2 workers) vs the
   in-process `Pipeline.process_batch`, on the same 1080p JPEGs (target: overhead <= 15%);
   the same with compact answers (``?compact=1``, clients that do not expand) against the
   in-process ``process_batch`` full and compact (``--compact-only`` runs just that);
2. p50 / p99 latency at 1, 4 and 16 concurrent clients;
3. images/s of multi-image requests (4 JPEGs of 1080p each, 2 workers, 2 clients), where the
   workers' items share the pipeline's one pool;
4. `drain` of 256 parked requests of 4k ids each in embedded mode, in arrival and in completion
   order (target: < 1 ms host time);
5. the feature cache (``--cache-only`` runs just that): the latency of a repeated 1080p JPEG
   answered from the cache in both forms against a miss (a cache-less pipeline / server doing
   the same work), in process (`Pipeline.process`) and over the server (full and compact
   safetensors answers, one client); the rounds interleave hit and miss, medians and their
   ratio are printed (target: an in-process hit well under 1 ms in either form).

Clients run in this process, the server in its own, on the same machine: the answer of a 1080p
Qwen2-VL image is ~50 MB of float32 patches, so the transfer is part of what is measured.
Rounds of the two sides alternate, and medians are reported, so a noisy neighbour hurts both.

    python bench/bench_server.py [--spec examples/qwen2_vl/spec.json] [--quick] [--multi-only]
                                 [--compact-only] [--cache-only]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.client import Client
from sglang_mm_core.server.config import Order

REPO = Path(__file__).resolve().parents[1]
BUDGET_PIXELS = 1280 * 28 * 28  # a common serving budget for Qwen2-VL-class models


def jpegs_1080p(n: int) -> list[bytes]:
    """``n`` distinct 1920x1080 JPEGs made from scikit-image's sample photographs."""
    from skimage import data

    photos = [
        data.astronaut(),
        data.coffee(),
        data.chelsea(),
        data.rocket(),
        data.immunohistochemistry(),
    ]
    out = []
    for k in range(n):
        img = Image.fromarray(photos[k % len(photos)]).resize((1920, 1080), Image.LANCZOS)
        if k >= len(photos):
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


class ServerProcess:
    """`sglang-mm serve` on a free port of 127.0.0.1, stopped with SIGTERM."""

    def __init__(self, spec: dict[str, Any], workers: int) -> None:
        self._tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(spec, self._tmp)
        self._tmp.close()
        env = {k: v for k, v in os.environ.items() if "PROXY" not in k.upper()}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sglang_mm_core",
                "serve",
                "--spec",
                self._tmp.name,
                "--port",
                "0",
                "--workers",
                str(workers),
                "--queue-size",
                "256",
            ],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.url = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if "serving family" in line:
                self.url = line.split(" on ")[1].split()[0]
                break
        if not self.url:
            raise SystemExit("the server did not start")
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        os.unlink(self._tmp.name)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def run_clients(
    url: str, reqs: list[MmInput], concurrency: int, compact: bool = False
) -> tuple[float, list[float]]:
    """Post ``reqs`` from ``concurrency`` clients; wall time and per-request latencies.
    ``compact``: ask for compact answers, kept as they come (not expanded)."""
    latencies: list[float] = []
    lock = threading.Lock()
    shards = [reqs[k::concurrency] for k in range(concurrency)]

    def client(mine: list[MmInput]) -> None:
        with Client(url) as c:
            for r in mine:
                t = time.perf_counter()
                out = c.preprocess(r, compact=compact)
                dt = time.perf_counter() - t
                assert len(out.items) == len(r.images)
                with lock:
                    latencies.append(dt)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(client, s) for s in shards]:
            f.result()
    return time.perf_counter() - t0, latencies


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loopback_transfer_cpu(nbytes: int, times: int = 4) -> float:
    """CPU seconds (both ends) to move ``nbytes`` once over TCP on 127.0.0.1 into a fresh
    buffer, as any client receiving an answer of that size must: the floor of the transfer."""
    payload = np.ones(nbytes, dtype=np.uint8)
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def send() -> None:
        conn, _ = srv.accept()
        with conn:
            for _ in range(times):
                conn.recv(1)
                conn.sendall(payload.data)

    th = threading.Thread(target=send)
    th.start()
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(b"x")  # warm-up round
        buf = bytearray(nbytes)
        _recv_exact(c, memoryview(buf))
        t = os.times()
        for _ in range(times - 1):
            c.sendall(b"x")
            _recv_exact(c, memoryview(bytearray(nbytes)))
        t2 = os.times()
    th.join()
    srv.close()
    return (t2.user - t.user + t2.system - t.system) / (times - 1)


def _recv_exact(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("closed early")
        got += n


def bench_throughput(
    spec: dict[str, Any],
    images: list[bytes],
    rounds: int,
    per_round: int,
    compact: bool = False,
    latency: bool = True,
) -> None:
    pipe = pipeline_from_spec(spec)
    prompt = list(pipe.family.example_prompt(1))
    reqs = [MmInput(input_ids=prompt, images=[images[k % len(images)]]) for k in range(per_round)]
    out = pipe.process(reqs[0])
    nbytes = out.items[0].feature.array.nbytes
    print(
        f"1080p JPEG -> feature {list(out.items[0].feature.shape)} float32 "
        f"({nbytes / 1e6:.1f} MB per image)"
    )
    if compact:
        nbytes = pipe.process(reqs[0], compact=True).items[0].feature.nbytes
        print(f"            compact answers: {nbytes / 1e6:.2f} MB per image, not expanded")
    srv = ServerProcess(spec, workers=2)  # the server gives each worker cores // 2 threads
    try:
        run_clients(srv.url, reqs[:4], 2, compact)  # warm-up
        pipe.process_batch(reqs[:4])
        inproc, inproc_c, server, cpu_in, cpu_srv, cpu_cli = [], [], [], [], [], []
        for _ in range(rounds):
            c0, t = os.times(), time.perf_counter()
            for s in range(0, len(reqs), 8):
                pipe.process_batch(reqs[s : s + 8])
            inproc.append(len(reqs) / (time.perf_counter() - t))
            c1 = os.times()
            cpu_in.append((c1.user - c0.user + c1.system - c0.system) / len(reqs))
            if compact:  # the in-process compact side too, interleaved the same way
                t = time.perf_counter()
                for s in range(0, len(reqs), 8):
                    pipe.process_batch(reqs[s : s + 8], compact=True)
                inproc_c.append(len(reqs) / (time.perf_counter() - t))
                c1 = os.times()
            s0 = proc_cpu(srv.proc.pid)
            wall, _ = run_clients(srv.url, reqs, 4, compact)
            c2 = os.times()
            server.append(len(reqs) / wall)
            cpu_srv.append((proc_cpu(srv.proc.pid) - s0) / len(reqs))
            cpu_cli.append((c2.user - c1.user + c2.system - c1.system) / len(reqs))
        a, b = statistics.median(inproc), statistics.median(server)
        ci, cs, cc = (statistics.median(x) * 1e3 for x in (cpu_in, cpu_srv, cpu_cli))
        floor = loopback_transfer_cpu(nbytes) * 1e3
        answers = "compact answers" if compact else "full answers"
        print(
            f"throughput  in-process process_batch (threads={pipe.threads}): {a:6.2f} images/s"
            f"   server (2 workers, 4 clients, {answers}): {b:6.2f} images/s"
        )
        print(
            f"            server overhead, wall clock (clients on the same cores): "
            f"{(a / b - 1) * 100:5.1f}%  (target <= 15%)"
        )
        rin, rsv = [round(x, 2) for x in inproc], [round(x, 2) for x in server]
        print(f"            rounds: in-process {rin}, server {rsv}")
        if compact:
            ac = statistics.median(inproc_c)
            print(
                f"            in-process process_batch(compact=True): {ac:6.2f} images/s; "
                f"server overhead against it {(ac / b - 1) * 100:5.1f}%  "
                f"(rounds {[round(x, 2) for x in inproc_c]})"
            )
        print(
            f"cpu/image   in-process {ci:6.1f} ms   server process {cs:6.1f} ms "
            f"(+{(cs / ci - 1) * 100:.0f}%)   clients {cc:6.1f} ms"
        )
        print(
            f"            floor of the transfer alone: raw TCP loopback of {nbytes / 1e6:.1f} MB "
            f"into a fresh buffer costs {floor:.1f} ms CPU"
        )

        if not latency:
            return
        print("latency     (one 1080p JPEG per request)")
        t = time.perf_counter()
        for r in reqs[:6]:
            pipe.process(r)
        single = (time.perf_counter() - t) / 6
        print(f"            in-process process(), one at a time: {single * 1000:7.1f} ms")
        for conc, n in ((1, 12), (4, 24), (16, 48)):
            lreqs = [reqs[k % len(reqs)] for k in range(n)]
            _, lat = run_clients(srv.url, lreqs, conc)
            print(
                f"            {conc:2d} concurrent client(s): p50 {pct(lat, 50) * 1000:7.1f} ms"
                f"   p99 {pct(lat, 99) * 1000:7.1f} ms   ({len(lat)} requests)"
            )
    finally:
        srv.stop()
        pipe.close()


def bench_multi(
    spec: dict[str, Any], images: list[bytes], rounds: int, per_image: int = 4, clients: int = 2
) -> None:
    """Requests of ``per_image`` images each from ``clients`` clients to a 2-worker server."""
    pipe = pipeline_from_spec(spec)
    prompt = list(pipe.family.example_prompt(per_image))
    pipe.close()
    reqs = [
        MmInput(input_ids=prompt, images=[images[(k + j) % len(images)] for j in range(per_image)])
        for k in range(8)
    ]
    srv = ServerProcess(spec, workers=2)
    try:
        run_clients(srv.url, reqs[:2], clients)  # warm-up
        rates = []
        for _ in range(rounds):
            wall, _ = run_clients(srv.url, reqs, clients)
            rates.append(len(reqs) * per_image / wall)
    finally:
        srv.stop()
    print(
        f"multi-image {per_image} x 1080p JPEG per request, 2 workers, {clients} client(s): "
        f"median {statistics.median(rates):6.2f} images/s  (rounds {[round(r, 2) for r in rates]})"
    )


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_cache(spec: dict[str, Any], image: bytes, rounds: int) -> None:
    """Hit latency of one repeated 1080p JPEG in both forms against a miss: in process, a
    cached pipeline's hit against a cache-less pipeline's `process` (what a miss computes);
    over the server, a cached 2-worker server's answer against a cache-less one's."""
    cached_spec = {**spec, "cache": {"max_bytes": 1 << 30}}
    cached, plain = pipeline_from_spec(cached_spec), pipeline_from_spec(spec)
    req = MmInput(input_ids=list(plain.family.example_prompt(1)), images=[image])
    forms = ((False, "full"), (True, "compact"))
    for compact, _ in forms:  # fill the cache (and warm both pipelines)
        cached.process(req, compact=compact)
        plain.process(req, compact=compact)
    st = cached.cache_stats()
    assert st is not None
    print(
        f"cache       one 1080p JPEG ({len(image) / 1e3:.0f} kB), entries: full "
        f"{st.by_form['full'].bytes / 1e6:.1f} MB, compact {st.by_form['compact'].bytes / 1e6:.2f}"
        f" MB; {rounds} interleaved rounds, medians"
    )
    t: dict[str, list[float]] = {}
    for _ in range(rounds):
        for compact, form in forms:
            t.setdefault(f"hit {form}", []).append(
                _timed(lambda c=compact: cached.process(req, compact=c))
            )
            t.setdefault(f"miss {form}", []).append(
                _timed(lambda c=compact: plain.process(req, compact=c))
            )
    _print_cache("in-process Pipeline.process", t)
    after = cached.cache_stats()
    assert after is not None and after.misses == st.misses  # every timed request hit
    cached.close()
    plain.close()
    servers = ServerProcess(cached_spec, workers=2), ServerProcess(spec, workers=2)
    try:
        with Client(servers[0].url) as hit, Client(servers[1].url) as miss:
            for compact, _ in forms:
                hit.preprocess(req, compact=compact)
                miss.preprocess(req, compact=compact)
            t = {}
            for _ in range(rounds):
                for compact, form in forms:
                    t.setdefault(f"hit {form}", []).append(
                        _timed(lambda c=compact: hit.preprocess(req, compact=c))
                    )
                    t.setdefault(f"miss {form}", []).append(
                        _timed(lambda c=compact: miss.preprocess(req, compact=c))
                    )
    finally:
        for srv in servers:
            srv.stop()
    _print_cache("server, safetensors answers (1 client, 2 workers)", t)


def _print_cache(what: str, t: dict[str, list[float]]) -> None:
    med = {k: statistics.median(v) * 1e3 for k, v in t.items()}
    print(f"            {what}:")
    for form in ("full", "compact"):
        hit, miss = med[f"hit {form}"], med[f"miss {form}"]
        print(
            f"              {form:7s}  hit {hit:8.3f} ms   miss {miss:8.3f} ms   "
            f"miss / hit {miss / hit:7.1f}x"
        )


def _read_status(sock: socket.socket) -> int:
    buf = b""
    while b"\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            return -1
        buf += chunk
    return int(buf.split(b" ", 2)[1])


def bench_drain(spec: dict[str, Any], rounds: int, order: Order = "arrival") -> None:
    from sglang_mm_core.server import MmServer

    n, n_ids = 256, 4096
    srv = MmServer.launch(spec, "127.0.0.1:0", workers=2, queue_size=n, ring_size=n, order=order)
    prompt = list(srv.engine.pipeline.family.example_prompt(0))  # type: ignore[union-attr]
    body = json.dumps({"input_ids": (prompt * (n_ids // len(prompt) + 1))[:n_ids]}).encode()
    wire = (
        b"POST /v1/submit HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    wall, cpu, copied = [], [], []
    try:
        for _ in range(rounds):
            # 256 clients waiting at once (raw sockets: one request each, answered below).
            socks = [socket.create_connection((srv.host, srv.port)) for _ in range(n)]
            for s in socks:
                s.sendall(wire)
            while srv.engine.parked_count() < n:
                time.sleep(0.005)
            t, c = time.perf_counter(), time.thread_time()
            batch = srv.drain(n)
            wall.append(time.perf_counter() - t)
            cpu.append(time.thread_time() - c)
            assert len(batch) == n and len(batch.data) == n * n_ids
            copied.append(bool(batch.data.flags.owndata))
            for rid in batch.rids:
                srv.push_result(rid, b"ok", "text/plain")
            for s in socks:
                assert _read_status(s) == 200
                s.close()
    finally:
        srv.shutdown(10)
    print(
        f"drain       {n} parked requests x {n_ids} ids, {order} order: "
        f"median {statistics.median(wall) * 1e3:.3f} ms wall, "
        f"{statistics.median(cpu) * 1e3:.3f} ms host CPU (best {min(wall) * 1e3:.3f} ms; "
        f"{rounds} rounds; ids buffer {'copied' if any(copied) else 'a view, no copy'})"
        "  (target < 1 ms)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--spec", default=str(REPO / "examples" / "qwen2_vl" / "spec.json"))
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument(
        "--budget-pixels",
        type=int,
        default=BUDGET_PIXELS,
        help="also run with params.max_pixels set to this (0: skip)",
    )
    ap.add_argument("--multi-only", action="store_true", help="only the multi-image bench")
    ap.add_argument(
        "--compact-only", action="store_true", help="only the throughput with compact answers"
    )
    ap.add_argument("--cache-only", action="store_true", help="only the feature cache bench")
    ap.add_argument("--clients", type=int, default=2, help="clients of the multi-image bench")
    args = ap.parse_args()
    spec = json.loads(Path(args.spec).read_text())
    print(f"sglang-mm server benchmark: spec {args.spec}, {os.cpu_count()} cores")
    images = jpegs_1080p(8)
    # Rounds long enough that the clients' ramp up and down is a small part of each.
    rounds, per_round = (2, 16) if args.quick else (5, 64)
    budget = {
        **spec,
        "params": {**spec["params"], "max_pixels": args.budget_pixels or BUDGET_PIXELS},
    }
    if args.multi_only:
        bench_multi(budget, images, rounds, clients=args.clients)
        return
    cache_rounds = 7 if args.quick else 21
    if args.compact_only or args.cache_only:
        if args.compact_only:
            print(f"\n== compact answers (max_pixels {spec['params'].get('max_pixels')})")
            bench_throughput(spec, images, rounds, per_round, compact=True, latency=False)
        print(f"\n== feature cache (max_pixels {spec['params'].get('max_pixels')})")
        bench_cache(spec, images[0], cache_rounds)
        return
    print(f"\n== the spec as given (max_pixels {spec['params'].get('max_pixels')})")
    bench_throughput(spec, images, rounds, per_round)
    if args.budget_pixels:
        print(f"\n== the same with a serving pixel budget (max_pixels {args.budget_pixels})")
        bench_throughput(budget, images, rounds, per_round)
    print(f"\n== compact answers (max_pixels {spec['params'].get('max_pixels')})")
    bench_throughput(spec, images, rounds, per_round, compact=True, latency=False)
    print(f"\n== feature cache (max_pixels {spec['params'].get('max_pixels')})")
    bench_cache(spec, images[0], cache_rounds)
    print(f"\n== multi-image requests (max_pixels {budget['params']['max_pixels']})")
    bench_multi(budget, images, rounds)
    print()
    for order in ("arrival", "completion"):
        bench_drain(spec, rounds=3 if args.quick else 10, order=order)


if __name__ == "__main__":
    main()
