#!/usr/bin/env python3
"""Networks papaya was not tuned on, for bench/generated_accuracy.sh.

  generated_networks.py generate SEED COUNT DIR   # COUNT valid configs in DIR, one JSON file each
  generated_networks.py summarize CSV [CSV ...]   # the error distribution of prediction_accuracy.sh's CSVs

The configs cycle through the families (gpt, bert, vit, resnet, mlp) and
draw every other choice from the seed: depth, width, heads, MLP ratio,
activation, norm, dropout, sequence or image size, block type and stages,
within ranges that profile in seconds on a 2-core CPU.
"""
import csv
import json
import os
import random
import statistics
import sys

FAMILIES = ["gpt", "bert", "vit", "resnet", "mlp"]


def transformer(rng, family):
    d_model = rng.choice([32, 48, 64, 96, 128])
    head_dims = [h for h in (8, 16, 32) if d_model % h == 0]
    config = {
        "family": family,
        "layers": rng.randint(1, 4),
        "d_model": d_model,
        "heads": d_model // rng.choice(head_dims),
        "mlp_ratio": rng.choice([2, 4]),
        "activation": rng.choice(["gelu", "silu", "swiglu"]),
        "norm": rng.choice(["layernorm", "rmsnorm"]),
    }
    if rng.random() < 0.5:
        config["dropout"] = 0.1
    if family == "vit":
        config["image_size"] = rng.choice([16, 32])
        config["patch"] = rng.choice([4, 8])
        config["channels"] = 3
        config["classes"] = rng.choice([4, 10])
    else:
        config["seq_len"] = rng.choice([16, 32, 64])
        config["vocab"] = rng.choice([64, 128, 256])
        if family == "bert":
            config["classes"] = rng.choice([2, 4])
    return config


def resnet(rng):
    return {
        "family": "resnet",
        "block": rng.choice(["basic", "bottleneck"]),
        "stages": [rng.randint(1, 2) for _ in range(rng.randint(1, 3))],
        "width": rng.choice([8, 16, 24, 32, 48]),
        "image_size": rng.choice([16, 32]),
        "channels": 3,
        "classes": 10,
    }


def mlp(rng):
    config = {
        "family": "mlp",
        "input": rng.choice([32, 64, 128, 256]),
        "hidden": [rng.choice([64, 128, 256, 512]) for _ in range(rng.randint(1, 4))],
        "classes": rng.choice([4, 10]),
        "activation": rng.choice(["relu", "gelu", "silu"]),
    }
    if rng.random() < 0.5:
        config["dropout"] = 0.1
    return config


def generate(seed, count, directory):
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    for k in range(count):
        family = FAMILIES[k % len(FAMILIES)]
        body = resnet(rng) if family == "resnet" else mlp(rng) if family == "mlp" else transformer(rng, family)
        name = f"gen{seed}-{k:02d}-{family}"
        config = {"name": name, "description": f"generated (seed {seed}, #{k})", **body}
        path = os.path.join(directory, name + ".json")
        with open(path, "w") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
        print(path)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(paths, peak_target=0.03, peak_limit=0.05, rate_target=0.15):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += list(csv.DictReader(f))
    if not rows:
        sys.exit("summarize: no rows")
    for what, column, target in (("peak memory", "peak_error", peak_target), ("samples/s", "samples_per_s_error", rate_target)):
        errors = [abs(float(r[column])) for r in rows]
        within = sum(e <= target for e in errors)
        print(f"{what}: {within} of {len(rows)} cells within {target:.0%} ({within / len(rows):.1%}); "
              f"|error| median {statistics.median(errors):.2%}, 95th percentile {percentile(errors, 0.95):.2%}, "
              f"worst {max(errors):.2%}")
        if column == "peak_error":
            print(f"peak memory: {sum(e > peak_limit for e in errors)} cells worse than {peak_limit:.0%}")
        worst = sorted(rows, key=lambda r: -abs(float(r[column])))[:5]
        for r in worst:
            print(f"  {r['network']} {r['strategy']} batch {r['batch']}: {float(r[column]):+.2%}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "generate":
        generate(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == "summarize":
        summarize(sys.argv[2:])
    else:
        sys.exit(__doc__)
