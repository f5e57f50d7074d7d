#!/usr/bin/python3
"""Defines a small decoder-only transformer over bytes (GPT-style: token and
learned position embeddings, pre-LayerNorm blocks of causal multi-head
self-attention and a 4x GELU MLP, a final LayerNorm and a linear head over
the 256 byte values) and saves it as TorchScript for murmur
(docs/torchscript.md):

    python3 examples/lm/make_corpus.py corpus.txt
    python3 examples/lm/make_transformer.py lm.pt
    murmur sim --dataset text:128:corpus.txt --model torchscript:lm.pt \\
        --nodes 8 --rounds 200 --algorithm diloco --local-steps 50 ...

The module's forward(x, y) returns its own loss: x holds windows of context
+ 1 byte values (murmur's text:T:FILE dataset gathers them as floats holding
the ids 0..255); positions 0..T-1 are the input, positions 1..T the targets,
and the loss is the mean next-byte cross-entropy in nats, so murmur reports
exp(loss) as the perplexity. The label y (the window's last byte) is unused.
With the defaults (width 256, 4 layers, 8 heads, context 128) the model has
3,323,392 parameters. LayerNorm, not BatchNorm: nothing in it is a running
statistic, so averaging models averages only parameters.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x, mask):
        b, t, c = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class ByteTransformer(nn.Module):
    def __init__(self, context: int = 128, width: int = 256, layers: int = 4, heads: int = 8):
        super().__init__()
        self.token = nn.Embedding(256, width)
        self.position = nn.Parameter(torch.zeros(context, width))
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, 256, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, x, y):
        tokens = x.long()
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        t = inputs.size(1)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        h = self.token(inputs) + self.position[:t]
        for block in self.blocks:
            h = block(h, mask)
        logits = self.head(self.ln(h))
        return F.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="lm.pt")
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = ByteTransformer(args.context, args.width, args.layers, args.heads)
    torch.jit.script(model).save(args.out)
    print(f"saved {args.out}: {sum(p.numel() for p in model.parameters())} parameters, "
          f"context {args.context}")
