"""The model and data of training/training_study.py: a character-level language model whose
residual streams are mixed by mHC hyper-connections through sgt.sinkhorn, and the GPL-3 text
it learns (see training_study.py's docstring and docs/results.md)."""
import hashlib

import numpy as np
import sinkgrad.torch as sgt
import torch
from torch import nn

EPS = {name: sgt.default_eps(name) for name in sgt.FORWARDS}  # the library's own values
STATUS_NAMES = list(sgt.STATUS_NAMES)


# ------------------------------------------------------------------------------- the model

class RMSNorm(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Attention(nn.Module):
    """Causal multi-head self-attention with a pre-norm."""

    def __init__(self, d, heads):
        super().__init__()
        self.norm, self.heads = RMSNorm(d), heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        B, L, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(B, L, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, heads, L, d/heads)
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        causal = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(causal, float("-inf")).softmax(-1)
        return self.out((weights @ v).transpose(1, 2).reshape(B, L, d))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(RMSNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return self.net(x)


class HyperConnection(nn.Module):
    """One sublayer F wrapped as mHC does: from the normalised n*d state of each token,
    pre = sigmoid(a_pre * x W_pre + b_pre), post = 2 sigmoid(a_post * x W_post + b_post) and
    R = Sinkhorn_T(a_res * x W_res + b_res); the streams become R x + post F(pre . x).
    b_res starts as data/logits.h5's mhc_like_n4, 2 I + N(0, 0.5^2): identity-dominant, and
    not doubly stochastic after one normalisation as exp(2 I) would be, so T matters."""

    def __init__(self, n, d, sublayer, sinkhorn):
        super().__init__()
        self.n, self.sublayer, self.sinkhorn = n, sublayer, sinkhorn
        self.norm = RMSNorm(n * d)
        self.project = nn.Linear(n * d, 2 * n + n * n, bias=False)
        self.scale = nn.Parameter(torch.full((3,), 0.01))  # a_pre, a_post, a_res
        self.b_pre = nn.Parameter(torch.zeros(n))
        self.b_post = nn.Parameter(torch.zeros(n))
        self.b_res = nn.Parameter(2.0 * torch.eye(n) + 0.5 * torch.randn(n, n))
        self.stats = sgt.SolveStats()

    def forward(self, x):  # x: (B, L, n, d)
        B, L, n, d = x.shape
        h = self.project(self.norm(x.reshape(B, L, n * d)))
        pre = torch.sigmoid(self.scale[0] * h[..., :n] + self.b_pre)
        post = 2 * torch.sigmoid(self.scale[1] * h[..., n:2 * n] + self.b_post)
        logits = self.scale[2] * h[..., 2 * n:].reshape(B, L, n, n) + self.b_res
        R = self.sinkhorn(logits, self.stats)
        out = self.sublayer(torch.einsum("bln,blnd->bld", pre, x))
        return R @ x + post.unsqueeze(-1) * out.unsqueeze(-2)


class StreamLM(nn.Module):
    """Character-level language model: embedding copied into n streams, `blocks` x (attention,
    MLP) each wrapped by a HyperConnection, then the streams' mean to the logits."""

    def __init__(self, vocabulary, context, n, d, blocks, heads, sinkhorn, stream_offsets):
        super().__init__()
        self.n = n
        self.embed = nn.Embedding(vocabulary, d)
        self.position = nn.Parameter(0.02 * torch.randn(context, d))
        # See forward(); without offsets the streams are exact copies, as mHC expands them.
        self.stream = nn.Parameter(torch.randn(n, d) if stream_offsets else torch.zeros(n, d),
                                   requires_grad=bool(stream_offsets))
        layers = []
        for _ in range(blocks):
            layers += [HyperConnection(n, d, Attention(d, heads), sinkhorn),
                       HyperConnection(n, d, MLP(d), sinkhorn)]
        self.layers = nn.ModuleList(layers)
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocabulary)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[:tokens.shape[1]]
        # n copies of the embedding, each plus its own learned offset: with exact copies
        # dL/dR = (dL/dy) x^T has equal columns, the gradient w.r.t. the logits is zero up to
        # rounding and the CG backwards fail on it (docs/results.md).
        x = x.unsqueeze(2) + self.stream
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x.mean(2)))

    def status_counts(self):
        """Matrices per status in the last backward, summed over the sublayers."""
        counts = np.zeros(len(STATUS_NAMES), dtype=np.int64)
        for layer in self.layers:
            if layer.stats.status is not None:
                counts += np.array(list(layer.stats.counts().values()), dtype=np.int64)
        return counts


class Sinkhorn:
    """The layer call every HyperConnection makes; `backward` can be switched between calls
    (the reference gradient of a measured step is the same model with backward = unrolled)."""

    def __init__(self, T, backward, forward, on_failure):
        self.T, self.backward, self.forward, self.on_failure = T, backward, forward, on_failure

    def __call__(self, logits, stats):
        return sgt.sinkhorn(logits, self.T, backward=self.backward, forward=self.forward,
                            eps=EPS[self.forward], stats=stats, on_failure=self.on_failure)


# -------------------------------------------------------------------------------- the data

class Text:
    def __init__(self, path, context, eval_windows):
        with open(path, "rb") as f:
            raw = f.read()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.vocabulary = bytes(sorted(set(raw)))
        lookup = np.zeros(256, dtype=np.int64)
        lookup[np.frombuffer(self.vocabulary, dtype=np.uint8)] = np.arange(len(self.vocabulary))
        tokens = torch.from_numpy(lookup[np.frombuffer(raw, dtype=np.uint8)])
        split = len(tokens) * 9 // 10
        self.train, self.held_out = tokens[:split], tokens[split:]
        self.context = context
        if len(self.held_out) < context + 2:
            raise SystemExit(f"training_study.py: {path} is too short for context {context}")
        starts = np.linspace(0, len(self.held_out) - context - 1, eval_windows).astype(np.int64)
        self.eval_batch = self.windows(self.held_out, torch.from_numpy(starts))

    def windows(self, tokens, starts):
        index = starts[:, None] + torch.arange(self.context + 1)
        chunk = tokens[index]
        return chunk[:, :-1], chunk[:, 1:]

    def batches(self, seed, batch, steps):
        """The training batches of one seed: the same for every backward, T and convention."""
        generator = torch.Generator().manual_seed(1_000_003 * seed + 17)
        for _ in range(steps):
            starts = torch.randint(0, len(self.train) - self.context - 1, (batch,),
                                   generator=generator)
            yield self.windows(self.train, starts)
