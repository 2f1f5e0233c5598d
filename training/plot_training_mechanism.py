"""The figure of plot_training.py that shows why a backward trains worse: per forward
convention, along training (mean over seeds of each measured step), the share of the exact
gradient that passes through the Sinkhorn logits, the part of the run's logits gradient that
lies in the forward's invariant subspace, and the logits' drift along that subspace (what no
forward sees, and what a gradient with an invariant part accumulates).

  <log>_mechanism_<forward>.png   one row per T, three panels each
"""
import os

import numpy as np

import plot_style as ps
from plot_style import plt
from training_results import ordered, seed_stack, select

PANELS = (("share through the Sinkhorn", lambda d: d["sinkhorn_share"], False),
          ("invariant part of the logits' gradient",
           lambda d: d["logits_grad_invariant_norm"] / np.maximum(d["logits_grad_norm"], 1e-300),
           True),
          ("logits' drift along the invariant side (RMS)", lambda d: d["logit_drift"], False))


def plot_mechanism(runs, forward, style, out, dpi, stamp):
    Ts = sorted({r["T"] for r in runs})
    fig, grid = plt.subplots(len(Ts), len(PANELS), figsize=(13.5, 3.0 * len(Ts) + 0.9),
                             squeeze=False)
    fig.suptitle(f"Forward {forward}: share of the exact gradient through the Sinkhorn, the "
                 "run's invariant gradient part and the logits' drift (mean over seeds)",
                 fontsize=12)
    for row, T in enumerate(Ts):
        for col, (label, value, log_y) in enumerate(PANELS):
            ax = grid[row][col]
            ax.set_title(f"T = {T}: {label}", fontsize=10)
            ax.set_xlabel("training step")
            if log_y:
                ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.35)
            for backward in ordered(r["backward"] for r in runs):
                chosen = select(runs, T=T, backward=backward)
                if not chosen:
                    continue
                for run in chosen:  # the derived series as a dataset, for seed_stack
                    run["data"]["_panel"] = value(run["data"])
                values = seed_stack(chosen, "_panel").mean(0)
                if log_y:
                    values = np.maximum(values, ps.FLOOR)
                steps = np.asarray(chosen[0]["data"]["measured_step"])[:len(values)]
                color, marker, line, face = style[backward]
                ax.plot(steps, values, color=color, marker=marker, linestyle=line,
                        markerfacecolor=face, label=backward)
    ps.stamp(fig, stamp)
    name = f"{out[1]}_mechanism_{ps.slug(forward)}.png"
    return ps.finish(fig, list(grid.flat), os.path.join(out[0], name), dpi)
