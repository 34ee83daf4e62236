"""One rank of a multi-rank run: reads its shard with ferry.Reader for some
epochs and, through torch.distributed (gloo), gathers every rank's sample
list on rank 0, which checks that all ranks together read every sample
exactly once per epoch. Run under torchrun:

    torchrun --nproc_per_node=N tests/multi/ranks_check.py DATASET_DIR EPOCHS

Each rank picks its GPU from LOCAL_RANK (FERRY_GPU overrides: set FERRY_GPU=0
to share one GPU among all ranks) and its shard from RANK / WORLD_SIZE.
Prints one JSON line on rank 0 and exits 1 if the check fails.
"""
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ferry  # noqa: E402
import torch.distributed as dist  # noqa: E402


def read_epochs(root, epochs):
    seen, nbytes = [], 0
    with ferry.Reader(file_root=root, batch_size=7, random_shuffle=True, seed=11,
                      epochs=epochs) as reader:
        for epoch in range(epochs):
            names = []
            for batch in reader:
                names += [os.path.basename(p) for p, pad in zip(batch.paths, batch.is_padding)
                          if not pad]
                nbytes += sum(int(getattr(a, "nbytes", 0)) for a in batch)
            seen.append(names)
    return seen, nbytes


def check(root, gathered, epochs):
    dataset = sorted(os.path.basename(p) for p in glob.glob(os.path.join(root, "*.npy")))
    problems = []
    for e in range(epochs):
        everything = sorted(n for rank_lists in gathered for n in rank_lists[e])
        if everything != dataset:
            problems.append("epoch %d: %d samples read, %d distinct, dataset has %d"
                            % (e, len(everything), len(set(everything)), len(dataset)))
    return problems


def main():
    root, epochs = sys.argv[1], int(sys.argv[2])
    dist.init_process_group("gloo")
    start = time.time()
    seen, nbytes = read_epochs(root, epochs)
    secs = time.time() - start
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, (seen, nbytes, secs))
    ok = True
    if dist.get_rank() == 0:
        problems = check(root, [g[0] for g in gathered], epochs)
        ok = not problems
        total = sum(g[1] for g in gathered)
        slowest = max(g[2] for g in gathered)
        print(json.dumps({"test": "ranks_check", "ranks": dist.get_world_size(),
                          "epochs": epochs, "device": ferry.default_context().device,
                          "ok": ok, "problems": problems, "bytes": total,
                          "gbps": total / slowest / 1e9 if slowest else None}))
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
