"""A short PyTorch training loop fed by ferry.Reader.

Writes a synthetic regression dataset (one .npy file per sample: 16 features
and a target, float32) into a temporary directory, unless --data names one,
then trains a linear model on the GPU for a few epochs. Every batch goes from
storage to GPU memory through ferry and into torch without a copy
(torch.as_tensor reads ferry's __cuda_array_interface__).

    python3 examples/train_torch.py [--data DIR] [--epochs 5] [--batch-size 64]

Needs numpy, torch with a CUDA GPU, and libferry (built with `make`, or
FERRY_LIBRARY); it exits with a message saying what is missing otherwise.
"""
import argparse
import os
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    sys.exit("train_torch.py needs numpy and torch: %s" % e)
try:
    import ferry
except ImportError:  # straight from the checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import ferry
from synthetic import FEATURES, make_dataset  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="a directory of samples (default: generate one)")
    p.add_argument("--samples", type=int, default=2048, help="samples to generate")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("train_torch.py needs a CUDA GPU: torch.cuda.is_available() is False")
    with tempfile.TemporaryDirectory(prefix="ferry-train-") as tmp:
        root = args.data or tmp
        if not args.data:
            make_dataset(root, args.samples)
        try:
            reader = ferry.Reader(file_root=root, batch_size=args.batch_size,
                                  random_shuffle=True, seed=1, device="cuda")
        except (OSError, NotImplementedError) as e:  # FerryError is an OSError
            sys.exit("train_torch.py: ferry cannot read on the GPU: %s" % e)
        model = torch.nn.Linear(FEATURES, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        with reader:
            print("%d samples, %d batches an epoch, shard %d" % (
                reader.epoch_info()["real_samples"], len(reader), reader.epoch_info()["shard_id"]))
            for epoch in range(args.epochs):
                total, count = 0.0, 0
                for batch in reader:  # one epoch; batches are ready on the current stream
                    rows = torch.as_tensor(batch, device="cuda")  # one [B, ...] tensor, no copy
                    x, y = rows[:, :FEATURES], rows[:, FEATURES:]
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += loss.item() * len(batch)
                    count += len(batch)
                print("epoch %d: mean loss %.5f" % (epoch, total / count))


if __name__ == "__main__":
    main()
