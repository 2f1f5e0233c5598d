"""training/training_mixing.py's invariant subspace and projection, per forward convention
(columns_first, rows_first, tilekernels, megatron_main; magi2 and mhc_triton have no side with
their eps), in float64:
- the forward is invariant to a shift along the side invariant_dim names (R equal to rounding)
  and not to one along the other side, so the subspace is the right one and not too large;
- project(g) sums to zero along that side, g - project(g) is a shift (constant along it), the
  projection is idempotent and leaves the exact (unrolled) gradient unchanged to rounding;
- the autograd wrapper gives exactly project(the layer's cg_plain gradient), removing a
  non-zero invariant component, and Observe's invariant norm is that component's norm; under
  tilekernels (eps > 0) the layer's cg_plain gradient, carried to the logits through the row
  softmax, has no such component.

    training_projection_test.py TRAINING_DIR
"""
import sys

import torch


def require(condition, message):
    if not condition:
        print(f"FAILED: {message}")
        sys.exit(1)


def main(training):
    sys.path.insert(0, training)
    import sinkgrad.torch as sgt
    from training_mixing import (EPS, Mixing, Observe, Probe, ProjectGradient, invariant_dim,
                                 invariant_part, project)

    torch.manual_seed(3)
    B, n, T = 64, 5, 1
    M = 4.0 * torch.rand(B, n, n, dtype=torch.float64)
    G = torch.randn(B, n, n, dtype=torch.float64)
    for forward in ("columns_first", "rows_first", "tilekernels", "megatron_main"):
        eps = EPS[forward]
        dim = invariant_dim(forward, eps)
        require(dim is not None, f"{forward}: no invariant side")
        other = -1 if dim == -2 else -2
        shift = torch.randn(B, n, dtype=torch.float64).unsqueeze(dim)  # constant along dim
        other_shift = torch.randn(B, n, dtype=torch.float64).unsqueeze(other)

        def R(logits):
            return sgt.sinkhorn(logits, T, forward=forward, eps=eps)
        base = R(M)
        require(torch.allclose(R(M + shift), base, rtol=0, atol=1e-13),
                f"{forward}: R changed under a shift along dim {dim}")
        require((R(M + other_shift) - base).abs().max() > 1e-3,
                f"{forward}: R did not change under a shift along the other side")

        g = torch.randn(B, n, n, dtype=torch.float64)
        p = project(g, dim)
        require(p.sum(dim).abs().max() < 1e-13, f"{forward}: projected sums not zero")
        removed = g - p
        require(torch.allclose(removed, invariant_part(g, dim), rtol=0, atol=1e-15),
                f"{forward}: the removed part is not the invariant component")
        require((removed - removed.mean(dim, keepdim=True)).abs().max() < 1e-14,
                f"{forward}: the removed part is not constant along dim {dim}")
        require(torch.allclose(project(p, dim), p, rtol=0, atol=1e-15),
                f"{forward}: the projection is not idempotent")
        require(abs(float((p * removed).sum())) < 1e-10, f"{forward}: not orthogonal")

        def gradient(backward, options=None, wrap=False, probe=None):
            logits = M.clone().requires_grad_()
            x = ProjectGradient.apply(logits, dim) if wrap else logits
            if probe is not None:
                x = Observe.apply(x, dim, probe)
            out = sgt.sinkhorn(x, T, backward=backward, options=options, forward=forward,
                               eps=eps)
            (out * G).sum().backward()
            return logits.grad
        exact = gradient("unrolled")
        require(exact.sum(dim).abs().max() < 1e-12 * exact.abs().max(),
                f"{forward}: the unrolled gradient has non-zero sums along the side")
        require(torch.allclose(project(exact, dim), exact, rtol=0, atol=1e-12),
                f"{forward}: the projection moved the exact gradient")
        plain = gradient("cg_plain", {"project": False})
        if forward == "tilekernels":
            # Its eps > 0: the implicit gradient is carried from log B to M through the row
            # softmax (core/log_base_chain.hpp), which leaves no component along the rows.
            require(invariant_part(plain, dim).norm() < 1e-12 * plain.norm(),
                    f"{forward}: the carried cg_plain gradient has an invariant component")
            print(f"{forward}: invariant dim {dim}, the carried cg_plain gradient has none")
            continue
        require(invariant_part(plain, dim).norm() > 1e-3 * plain.norm(),
                f"{forward}: cg_plain has no invariant component at T = {T} (test is void)")
        probe = Probe(torch.device("cpu"))
        wrapped = gradient("cg_plain", {"project": False}, wrap=True, probe=probe)
        require(torch.equal(wrapped, project(plain, dim)),
                f"{forward}: the wrapper's gradient is not project(cg_plain's)")
        grad_sq, invariant_sq = probe.sums[0].item(), probe.sums[1].item()
        require(abs(invariant_sq ** 0.5 - invariant_part(plain, dim).norm().item())
                < 1e-12 * plain.norm().item(), f"{forward}: Observe's invariant norm")
        require(abs(grad_sq ** 0.5 - plain.norm().item()) < 1e-12 * plain.norm().item(),
                f"{forward}: Observe's gradient norm")
        # Through the study's own Mixing, cg_plain_projected gives the same bits.
        mixing = Mixing(T, "cg_plain_projected", forward, "unrolled")
        logits = M.clone().requires_grad_()
        (mixing(logits, None) * G).sum().backward()
        require(torch.equal(logits.grad, wrapped), f"{forward}: Mixing's cg_plain_projected")
        stopped = Mixing(T, "stop_gradient", forward, "unrolled")(M.clone().requires_grad_(),
                                                                 None)
        require(not stopped.requires_grad, f"{forward}: stop_gradient lets a gradient through")
        print(f"{forward}: invariant dim {dim}, cg_plain's invariant part "
              f"{(invariant_part(plain, dim).norm() / plain.norm()).item():.3f} of its norm, "
              "removed exactly")
    require(invariant_dim("columns_first", 1e-3) is None, "columns_first with eps has no side")
    require(invariant_dim("magi2", EPS["magi2"]) is None, "magi2 with its eps has no side")
    require(invariant_dim("mhc_triton", 0.0) is None, "mhc_triton has no side")
    print("training_projection_test: ok")


if __name__ == "__main__":
    main(sys.argv[1])
