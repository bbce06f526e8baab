#!/usr/bin/python3
"""Real PyTorch models as TorchScript archives, for bench/torchscript_accuracy.sh.

  torchscript_models.py save DIR          # DIR/<model>.pt with papaya.json, and DIR/parameters.csv
  torchscript_models.py eager DIR B STEPS # PyTorch eager's training step on each archive's model, as CSV

Needs Debian's python3-torch and python3-torchvision (a benchmark's
reference, never papaya's dependency). The models are torchvision's, at
64x64 images and 10 classes, scripted (torch.jit.script) and saved with
their input spec in the extra file papaya.json (ViT: a small one of
torchvision's VisionTransformer; UNet: a small one written here, per-pixel
classes). `eager` trains the same
models in eager PyTorch as papaya trains the archives: AdamW (lr 1e-3,
weight decay 0.01), cross-entropy against random labels (one per
position for the UNet's [B, pixels, classes]), on as many threads
as papaya uses (torch.get_num_threads()), and reports the median step.
"""
import csv
import json
import os
import statistics
import sys
import time

import torch
import torchvision

IMAGE = 64


class UNet(torch.nn.Module):
    """A small UNet (two levels down, two up, skip connections by concatenation),
    classifying each pixel into 10 classes; returns [B, pixels, classes], which
    papaya takes, as [B, T, V], for one cross-entropy per position."""

    def __init__(self, width=16, classes=10):
        super().__init__()

        def double(cin, cout):
            return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
                                       torch.nn.Conv2d(cout, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU())

        self.down0 = double(3, width)
        self.down1 = double(width, 2 * width)
        self.bottom = double(2 * width, 4 * width)
        self.pool = torch.nn.MaxPool2d(2)
        self.up1 = torch.nn.ConvTranspose2d(4 * width, 2 * width, 2, stride=2)
        self.merge1 = double(4 * width, 2 * width)
        self.up0 = torch.nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.merge0 = double(2 * width, width)
        self.head = torch.nn.Conv2d(width, classes, 1)

    def forward(self, x):
        d0 = self.down0(x)
        d1 = self.down1(self.pool(d0))
        b = self.bottom(self.pool(d1))
        u1 = self.merge1(torch.cat([self.up1(b), d1], 1))
        u0 = self.merge0(torch.cat([self.up0(u1), d0], 1))
        return self.head(u0).flatten(2).transpose(1, 2)


MODELS = {
    "resnet18": lambda: torchvision.models.resnet18(num_classes=10),
    "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(num_classes=10),
    # torchvision's ViT made small: 8x8 patches (64 tokens and a class token),
    # 4 layers of width 128, 4 heads, MLP 512 with nn.GELU.
    "vit_tiny": lambda: torchvision.models.VisionTransformer(image_size=IMAGE, patch_size=8, num_layers=4, num_heads=4,
                                                             hidden_dim=128, mlp_dim=512, num_classes=10),
    "unet_small": UNet,
}


def save(directory):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "parameters.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["model", "parameters"])
        for name, make in MODELS.items():
            torch.manual_seed(0)
            model = make()
            spec = {"inputs": [f"float32[B,3,{IMAGE},{IMAGE}]"]}
            torch.jit.save(torch.jit.script(model), os.path.join(directory, f"{name}.pt"),
                           _extra_files={"papaya.json": json.dumps(spec)})
            out.writerow([name, sum(p.numel() for p in model.parameters())])


def eager(directory, batch, steps):
    out = csv.writer(sys.stdout)
    out.writerow(["model", "batch", "threads", "median_step_s", "samples_per_s"])
    for name, make in MODELS.items():
        torch.manual_seed(0)
        model = make().train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        x = torch.randn(batch, 3, IMAGE, IMAGE)
        logits = model(x).detach()
        labels = torch.randint(0, logits.size(-1), logits.shape[:-1])
        times = []
        for step in range(steps + 3):
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=False)
            logits = model(x)
            torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1)).backward()
            optimizer.step()
            if step >= 3:
                times.append(time.perf_counter() - start)
        median = statistics.median(times)
        out.writerow([name, batch, torch.get_num_threads(), f"{median:.6f}", f"{batch / median:.1f}"])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "save":
        save(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "eager":
        eager(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
