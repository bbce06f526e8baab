#!/usr/bin/python3
"""Real PyTorch models as TorchScript archives, for bench/torchscript_accuracy.sh.

  torchscript_models.py save DIR [MODEL...]          # DIR/<model>.pt with papaya.json, and DIR/parameters.csv
  torchscript_models.py eager DIR B STEPS [MODEL...] # PyTorch eager's training step on each model, as CSV
  torchscript_models.py names                        # the models, one a line

Needs Debian's python3-torch and python3-torchvision (a benchmark's
reference, never papaya's dependency). Image models take 64x64 images and
give 10 classes; language models take 64 tokens of a 512-token vocabulary
and give logits at every position. Each is scripted (torch.jit.script), or
traced where the model says so (torch.jit.trace), and saved with its input
spec in the extra file papaya.json. torchvision's ResNet-18,
MobileNetV3-Small, ShuffleNetV2 and a small ConvNeXt and ViT; written here:
a small UNet (per-pixel classes), a siamese pair (one encoder applied to an
image and its mirror), an ALBERT-like network (one transformer layer applied
four times), a nanoGPT (positions from torch.arange, tied embeddings), an
LSTM language model and a traced MLP-Mixer. `eager` trains the same models
in eager PyTorch as papaya trains the archives: AdamW (lr 1e-3, weight
decay 0.01), cross-entropy against random labels (one per position for
[B, T, C] outputs), on as many threads as papaya uses
(torch.get_num_threads()), and reports the median step.
"""
import csv
import json
import os
import statistics
import sys
import time

import torch
import torchvision
from torchvision.models.convnext import CNBlockConfig

IMAGE = 64
TOKENS = 64
VOCABULARY = 512


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


class Siamese(torch.nn.Module):
    """One encoder applied to an image and to its mirror (a siamese or
    contrastive pair: one set of weights, two calls), the two embeddings and
    their distance classified."""

    def __init__(self, width=32, classes=10):
        super().__init__()
        self.encoder = torch.nn.Sequential(
            torch.nn.Conv2d(3, width, 3, stride=2, padding=1), torch.nn.BatchNorm2d(width), torch.nn.ReLU(),
            torch.nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), torch.nn.BatchNorm2d(2 * width), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(2 * width, 64))
        self.head = torch.nn.Linear(3 * 64, classes)

    def forward(self, x):
        a = self.encoder(x)
        b = self.encoder(torch.flip(x, [3]))
        return self.head(torch.cat([a, b, (a - b).abs()], 1))


class AlbertLike(torch.nn.Module):
    """ALBERT's sharing: one transformer layer applied `depth` times."""

    def __init__(self, width=128, heads=4, depth=4):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCABULARY, width)
        self.layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True,
                                                      activation="gelu")
        self.depth = depth
        self.head = torch.nn.Linear(width, VOCABULARY)

    def forward(self, ids):
        x = self.embedding(ids)
        for _ in range(self.depth):
            x = self.layer(x)
        return self.head(x)


class CausalSelfAttention(torch.nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(TOKENS, TOKENS)).view(1, 1, TOKENS, TOKENS))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        scores = scores.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(torch.nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGpt(torch.nn.Module):
    """nanoGPT's layout: token and position embeddings (positions from
    torch.arange, no batch), blocks in a ModuleList, the LM head tied to the
    token embedding."""

    def __init__(self, width=128, heads=4, depth=2):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCABULARY, width)
        self.wpe = torch.nn.Embedding(TOKENS, width)
        self.h = torch.nn.ModuleList([Block(width, heads) for _ in range(depth)])
        self.ln_f = torch.nn.LayerNorm(width)
        self.lm_head = torch.nn.Linear(width, VOCABULARY, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        positions = torch.arange(0, ids.size(1), dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class LstmLm(torch.nn.Module):
    """An LSTM language model: embedding, a one-layer LSTM, logits."""

    def __init__(self, width=128):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCABULARY, width)
        self.lstm = torch.nn.LSTM(width, width, batch_first=True)
        self.head = torch.nn.Linear(width, VOCABULARY)

    def forward(self, ids):
        out, _ = self.lstm(self.embedding(ids))
        return self.head(out)


class MixerBlock(torch.nn.Module):
    def __init__(self, tokens, width):
        super().__init__()
        self.norm_1 = torch.nn.LayerNorm(width)
        self.tokens = torch.nn.Sequential(torch.nn.Linear(tokens, 2 * tokens), torch.nn.GELU(), torch.nn.Linear(2 * tokens, tokens))
        self.norm_2 = torch.nn.LayerNorm(width)
        self.channels = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.tokens(self.norm_1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.norm_2(x))


class MlpMixer(torch.nn.Module):
    """A small MLP-Mixer: 8x8 patches, 4 blocks of width 128."""

    def __init__(self, width=128, depth=4, classes=10):
        super().__init__()
        tokens = (IMAGE // 8) ** 2
        self.patches = torch.nn.Conv2d(3, width, 8, stride=8)
        self.blocks = torch.nn.Sequential(*[MixerBlock(tokens, width) for _ in range(depth)])
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, classes)

    def forward(self, x):
        x = self.blocks(self.patches(x).flatten(2).transpose(1, 2))
        return self.head(self.norm(x).mean(1))


IMAGES = f"float32[B,3,{IMAGE},{IMAGE}]"
IDS = f"int64[B,{TOKENS}]<{VOCABULARY}"
# name: (constructor, input spec, traced rather than scripted)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), IMAGES, False),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(num_classes=10), IMAGES, False),
    # torchvision's ViT made small: 8x8 patches (64 tokens and a class token),
    # 4 layers of width 128, 4 heads, MLP 512 with nn.GELU.
    "vit_tiny": (lambda: torchvision.models.VisionTransformer(image_size=IMAGE, patch_size=8, num_layers=4, num_heads=4,
                                                              hidden_dim=128, mlp_dim=512, num_classes=10), IMAGES, False),
    "unet_small": (UNet, IMAGES, False),
    "siamese": (Siamese, IMAGES, False),
    "albert_like": (AlbertLike, IDS, False),
    "nanogpt": (NanoGpt, IDS, False),
    "shufflenet_v2": (lambda: torchvision.models.shufflenet_v2_x0_5(num_classes=10), IMAGES, False),
    "lstm_lm": (LstmLm, IDS, False),
    # torchvision's ConvNeXt made small: two stages of two blocks, widths 48 and 96.
    "convnext_small": (lambda: torchvision.models.convnext.ConvNeXt([CNBlockConfig(48, 96, 2), CNBlockConfig(96, None, 2)],
                                                                    num_classes=10), IMAGES, False),
    "mlp_mixer": (MlpMixer, IMAGES, True),
}


def example(spec, batch):
    if spec == IDS:
        return torch.randint(0, VOCABULARY, (batch, TOKENS))
    return torch.randn(batch, 3, IMAGE, IMAGE)


def chosen(names):
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"torchscript_models: unknown model {unknown[0]} (models: {', '.join(MODELS)})")
    return names or list(MODELS)


def save(directory, names):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "parameters.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["model", "parameters"])
        for name in names:
            make, spec, traced = MODELS[name]
            torch.manual_seed(0)
            model = make()
            archive = torch.jit.trace(model, example(spec, 2)) if traced else torch.jit.script(model)
            torch.jit.save(archive, os.path.join(directory, f"{name}.pt"), _extra_files={"papaya.json": json.dumps({"inputs": [spec]})})
            out.writerow([name, sum(p.numel() for p in model.parameters())])


def eager(batch, steps, names):
    out = csv.writer(sys.stdout)
    torch.set_flush_denormal(True)  # as papaya's process does (cli/process/denormals.h)
    out.writerow(["model", "batch", "threads", "median_step_s", "samples_per_s"])
    for name in names:
        make, spec, _ = MODELS[name]
        torch.manual_seed(0)
        model = make().train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        x = example(spec, batch)
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
    if len(sys.argv) >= 3 and sys.argv[1] == "save":
        save(sys.argv[2], chosen(sys.argv[3:]))
    elif len(sys.argv) >= 5 and sys.argv[1] == "eager":
        eager(int(sys.argv[3]), int(sys.argv[4]), chosen(sys.argv[5:]))
    elif len(sys.argv) == 2 and sys.argv[1] == "names":
        print("\n".join(MODELS))
    else:
        sys.exit(__doc__)
