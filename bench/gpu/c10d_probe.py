"""What torch.distributed records on this machine's PyTorch, under ringprof.

A look, not a check: WORLD processes (gloo on CPU, and nccl on GPU 0 when
WORLD is 1) run a few all_reduce/broadcast calls and a tiny DDP step, each
under ringprof at the always_on operator level, into OUT/rankN. The tools
read those directories afterwards (on a machine without a GPU).

    python3 bench/gpu/c10d_probe.py OUT [--world 2] [--backend gloo]
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world, backend, out, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    os.environ["RINGPROF_DIR"] = os.path.join(out, "%s_rank%d" % (backend, rank))
    import ringprof
    import ringprof.torch
    ringprof.start()
    ringprof.torch.set_ops_level("always_on")
    dev = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
    dist.init_process_group(backend, rank=rank, world_size=world)
    t = torch.ones(1 << 16, device=dev)
    hooks = [n for n in dir(dist.distributed_c10d._get_default_group()) if "hook" in n.lower()]
    if rank == 0:
        print("process group hooks:", hooks, flush=True)
    for i in range(10):
        ringprof.step(i)
        dist.all_reduce(t)
        dist.broadcast(t, 0)
        w = dist.all_reduce(t, async_op=True)
        w.wait()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(256, 256).to(dev))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(10, 15):
        ringprof.step(i)
        opt.zero_grad()
        model(torch.randn(32, 256, device=dev)).sum().backward()
        opt.step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()
    ringprof.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--backend", default="gloo")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    port = 29500 + (os.getpid() % 1000)
    t0 = time.time()
    mp.spawn(rank_main, args=(a.world, a.backend, a.out, port), nprocs=a.world, join=True)
    print("c10d probe %s x%d: %.1f s" % (a.backend, a.world, time.time() - t0))
    sys.exit(0)
