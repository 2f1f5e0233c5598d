"""The mixing matrix R = Sinkhorn_T(logits) of the training study, with the study's backwards:
the layer's solvers, the stop-gradient control and cg_plain projected off the forward's
invariant subspace, and an observer of the logits and their gradient on measured steps.

The invariant subspace (docs/math.md, "The forward's invariant subspace"): R does not change
when a constant is added to every entry of one line of the logits along the side the forward
normalises first, a column for columns_first and magi2 (eps = 0), a row for rows_first (eps = 0),
tilekernels and megatron_main (any eps: a softmax over rows, or exp(logits - row max), comes
before eps); mhc_triton's |logits| has none. The exact gradient sums to zero
along that side. The projection here is the Frobenius-orthogonal one, g - mean along the side,
applied to the layer's gradient as it flows back (an autograd function around the layer); the
library's own project=true is the 1/R-weighted one, kept off for both plain backwards here so
that cg_plain is the plain formula as written."""
import sinkgrad.torch as sgt
import torch

EPS = {name: sgt.default_eps(name) for name in sgt.FORWARDS}  # the library's own values
STATUS_NAMES = list(sgt.STATUS_NAMES)
LAYER_BACKWARDS = ["unrolled", "cg_corrected", "cg_plain", "direct", "auto"]
BACKWARDS = ["unrolled", "cg_corrected", "cg_plain", "cg_plain_projected", "direct", "auto",
             "stop_gradient"]
# What each study backward asks of the layer: (solver, options).
LAYER_CALL = {"cg_plain": ("cg_plain", {"project": False}),
              "cg_plain_projected": ("cg_plain", {"project": False}),
              "stop_gradient": ("unrolled", None)}


def invariant_dim(forward, eps):
    """The dimension of an (..., n, n) logits tensor that the invariant shift runs along (the
    sum that the exact gradient has zero), or None where there is no invariant side."""
    if forward in ("tilekernels", "maxtext", "megatron_dev", "megatron_main"):
        return -1  # a row softmax or exp(logits - row max): rows shift out whatever eps
    if eps != 0 or forward == "mhc_triton":
        return None
    return -2 if forward in ("columns_first", "magi2") else -1


def invariant_part(g, dim):
    """The component of g in the invariant subspace: its mean along dim, repeated."""
    if dim is None:
        return torch.zeros_like(g)
    return g.mean(dim, keepdim=True).expand_as(g)


def project(g, dim):
    """g minus its invariant component: zero sums along dim, orthogonal to every shift."""
    return g if dim is None else g - g.mean(dim, keepdim=True)


class ProjectGradient(torch.autograd.Function):
    """Identity forward; the backward projects the incoming gradient off the invariant
    subspace."""

    @staticmethod
    def forward(ctx, logits, dim):
        ctx.dim = dim
        return logits.view_as(logits)

    @staticmethod
    def backward(ctx, grad):
        return project(grad, ctx.dim), None


class Probe:
    """Device-side sums a measured step collects (no host sync): squared norms of the logits'
    gradient and of its invariant component, and of the logits' double-centred part (what R
    sees at convergence: the logits minus their best fit a_i + b_j) and their invariant-side
    mean, with the number of matrices."""

    NAMES = ("grad_sq", "grad_invariant_sq", "spread_sq", "drift_sq", "matrices")

    def __init__(self, device):
        self.sums = torch.zeros(len(self.NAMES), dtype=torch.float64, device=device)


class Observe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, dim, probe):
        ctx.dim, ctx.probe = dim, probe
        m = logits.detach().double()
        centred = (m - m.mean(-1, keepdim=True) - m.mean(-2, keepdim=True)
                   + m.mean((-2, -1), keepdim=True))
        drift = invariant_part(m, dim)
        matrices = m.numel() // (m.shape[-1] * m.shape[-2])
        probe.sums[2] += centred.pow(2).sum() / m.shape[-1] ** 2
        probe.sums[3] += drift.pow(2).sum() / m.shape[-1] ** 2
        probe.sums[4] += matrices
        return logits.view_as(logits)

    @staticmethod
    def backward(ctx, grad):
        g = grad.double()
        ctx.probe.sums[0] += g.pow(2).sum()
        ctx.probe.sums[1] += invariant_part(g, ctx.dim).pow(2).sum()
        return grad, None, None


class Mixing:
    """The call every HyperConnection makes. `backward` may be switched between calls (a
    measured step computes the same weights' gradient with unrolled and stop_gradient too);
    `probe` is set only on measured steps."""

    def __init__(self, T, backward, forward, on_failure):
        self.T, self.backward, self.forward, self.on_failure = T, backward, forward, on_failure
        self.eps = EPS[forward]
        self.dim = invariant_dim(forward, self.eps)
        self.probe = None

    def __call__(self, logits, stats):
        solver, options = LAYER_CALL.get(self.backward, (self.backward, None))
        if self.backward == "stop_gradient":
            logits = logits.detach()  # R is a constant for the gradient: no path through it
        if self.backward == "cg_plain_projected":
            logits = ProjectGradient.apply(logits, self.dim)
        if self.probe is not None:  # after the detach and the projection: the layer's own gradient
            logits = Observe.apply(logits, self.dim, self.probe)
        return sgt.sinkhorn(logits, self.T, backward=solver, options=options,
                            forward=self.forward, eps=self.eps,
                            stats=stats if logits.requires_grad else None,
                            on_failure=self.on_failure)
