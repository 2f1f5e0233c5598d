"""The model of training/training_study.py: a byte-level language model whose residual
streams are mixed by mHC hyper-connections through sgt.sinkhorn (training_mixing.Mixing)."""
import sinkgrad.torch as sgt
import torch
from torch import nn
from torch.nn import functional as F

from training_mixing import STATUS_NAMES


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
        if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0: fused kernels
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
            causal = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
            attended = scores.masked_fill(causal, float("-inf")).softmax(-1) @ v
        return self.out(attended.transpose(1, 2).reshape(B, L, d))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(RMSNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return self.net(x)


class HyperConnection(nn.Module):
    """One sublayer F wrapped as mHC does (dynamic + static parameterisation): from the
    RMS-normalised n*d state x~ of each token, h = x~ W (W's entries N(0, 1/(n d)), so h's are
    about N(0, 1)), pre = sigmoid(a_pre h_pre + b_pre), post = 2 sigmoid(a_post h_post + b_post),
    R = Sinkhorn_T(a_res h_res + b_res); the streams become R x + post F(pre . x).

    Initialisation (the `init` dict, settings alpha_res, identity, pre_select, post_spread,
    post_select, fixed_routing):
    a_pre = a_post = 0.01 as mHC's gates; a_res = alpha_res, so that the dynamic logits are
    O(alpha_res) and the Sinkhorn carries a real share of the gradient (at 0.01 it carried under
    1 %); b_res = identity * I, so that R's static part leans to the identity (e against 1 at
    identity = 1) while its dynamic part decides: with identity = 3 the fixed R of the
    stop-gradient control was close enough to the identity to cost nothing, with 1 (and 0) it
    cost about 0.013 nats on every seed of the cpu preset at T = 1; b_pre = pre_select * (2 e_k
    - 1) for sublayer k, so that it reads mainly stream k mod n, as hyper-connections initialise
    their input weights (with pre = 1/n every sublayer would read the streams' mean, which a
    doubly stochastic R does not change: R would barely matter); b_post = post_select * (2 e_k
    - 1) + N(0, post_spread^2) noise per stream: the noise makes streams that start as copies
    differ after the first sublayer (with equal post weights and a forward whose last step
    leaves the rows exact, copies stay copies and dL/dlogits is zero for ever). With
    post_select = 0 (the default) every sublayer writes into every stream (weights mostly
    0.5..1.5), so the streams stay near-copies, which a doubly stochastic R barely changes;
    with 3 sublayer k writes ~1.9 into stream k mod n and ~0.1 elsewhere, so that its output
    reaches the other sublayers' reads and the head's mainly through R.

    fixed_routing: b_pre, b_post, a_pre, a_post and W's pre and post rows are not trained (the
    b's have no gradient; the a's and W's rows share tensors with a_res and W's R rows and are
    detached in the forward, so their gradient is zero and AdamW leaves them as they are), and
    neither is the head's read (StreamLM.read): the model cannot learn to write into or read
    from every stream and so route around R."""

    def __init__(self, n, d, sublayer, mixing, init, index):
        super().__init__()
        self.n, self.sublayer, self.mixing = n, sublayer, mixing
        self.fixed_routing = bool(init["fixed_routing"])
        self.norm = RMSNorm(n * d)
        self.project = nn.Linear(n * d, 2 * n + n * n, bias=False)
        nn.init.normal_(self.project.weight, std=(n * d) ** -0.5)
        self.scale = nn.Parameter(torch.tensor([0.01, 0.01, float(init["alpha_res"])]))
        select = 2.0 * torch.eye(n)[index % n] - 1.0
        self.b_pre = nn.Parameter(float(init["pre_select"]) * select)
        self.b_post = nn.Parameter(float(init["post_select"]) * select
                                   + float(init["post_spread"]) * torch.randn(n))
        self.b_res = nn.Parameter(float(init["identity"]) * torch.eye(n))
        self.stats = sgt.SolveStats()
        if self.fixed_routing:
            self.b_pre.requires_grad_(False)
            self.b_post.requires_grad_(False)

    def forward(self, x):  # x: (B, L, n, d)
        B, L, n, d = x.shape
        state, scale = self.norm(x.reshape(B, L, n * d)), self.scale
        if self.fixed_routing:  # W's pre/post rows, a_pre, a_post detached (x's path is kept)
            weight = self.project.weight
            h = F.linear(state, torch.cat([weight[:2 * n].detach(), weight[2 * n:]]))
            scale = torch.cat([scale[:2].detach(), scale[2:]])
        else:
            h = self.project(state)
        pre = torch.sigmoid(scale[0] * h[..., :n] + self.b_pre)
        post = 2 * torch.sigmoid(scale[1] * h[..., n:2 * n] + self.b_post)
        logits = scale[2] * h[..., 2 * n:].reshape(B, L, n, n) + self.b_res
        R = self.mixing(logits, self.stats).to(x.dtype)
        out = self.sublayer((pre.unsqueeze(-1).to(x.dtype) * x).sum(2))
        return R @ x + post.unsqueeze(-1).to(out.dtype) * out.unsqueeze(-2)


class StreamLM(nn.Module):
    """Byte-level language model: the embedding copied into n streams (mHC's expansion),
    `blocks` x (attention, MLP) each wrapped by a HyperConnection, then the head: a weighted
    sum of the streams, weights sigmoid(read) with read = pre_select (2 e_j - 1), j = 2 blocks
    mod n (mainly one stream: 0.88 against 0.12 at pre_select = 2; not their mean, which R
    would not change), RMS-normalised, to the logits. With fixed_routing the read is fixed."""

    def __init__(self, vocabulary, context, n, d, blocks, heads, mixing, init):
        super().__init__()
        self.n = n
        self.embed = nn.Embedding(vocabulary, d)
        self.position = nn.Parameter(0.02 * torch.randn(context, d))
        layers = []
        for block in range(blocks):
            layers += [HyperConnection(n, d, Attention(d, heads), mixing, init, 2 * block),
                       HyperConnection(n, d, MLP(d), mixing, init, 2 * block + 1)]
        self.layers = nn.ModuleList(layers)
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocabulary)
        # The head reads the streams as a sublayer does (mainly stream 2 * blocks mod n): with
        # their mean, a doubly stochastic R would not change what it reads.
        select = 2.0 * torch.eye(n)[(2 * blocks) % n] - 1.0
        self.read = nn.Parameter(float(init["pre_select"]) * select,
                                 requires_grad=not init["fixed_routing"])

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[:tokens.shape[1]]
        x = x.unsqueeze(2).expand(-1, -1, self.n, -1)
        for layer in self.layers:
            x = layer(x)
        weights = torch.sigmoid(self.read).to(x.dtype)
        return self.head(self.norm((weights.unsqueeze(-1) * x).sum(2)))

    def status_counts(self, solved=True):
        """(6,) int64 on the device: matrices per status in the last backward, summed over the
        sublayers; no host sync (a CUDA graph captures it). Zeros when nothing was solved."""
        device = self.head.weight.device
        counts = torch.zeros(len(STATUS_NAMES), dtype=torch.int64, device=device)
        codes = torch.arange(len(STATUS_NAMES), device=device)
        for layer in self.layers:
            if solved and layer.stats.status is not None:
                counts += (layer.stats.status.reshape(-1, 1) == codes).sum(0)
        return counts
