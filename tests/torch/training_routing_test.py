"""The training study's routing settings (training/training_model.py, HyperConnection):
- post_select: b_post is exactly the post_spread-scaled noise the constructor draws when
  post_select = 0 (today's initialisation), and post_select * (2 e_k - 1) + the same noise for
  sublayer k otherwise; every other parameter is the same bits either way;
- fixed_routing: the forward is unchanged; after one training step (training_step.Stepper, the
  study's own update) b_pre, b_post, a_pre, a_post, W's pre and post rows and the head's read
  are exactly as they were while the other parameters moved; without it they move too;
- the command line: --post-select and --fixed-routing reach the log's study attribute and the
  trainable parameter count; a log written before the settings existed (no such lines) resumes
  with the defaults and is refused with --post-select 3, naming it.

    training_routing_test.py TRAINING_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import torch

N, D, BLOCKS, HEADS, CONTEXT = 4, 16, 2, 2, 16


def require(condition, message):
    if not condition:
        print(f"FAILED: {message}")
        sys.exit(1)


def build(seed, **changes):
    """(model, the (n,)-shaped draws of torch.randn while it was built: the post noise)."""
    from training_mixing import Mixing
    from training_model import StreamLM
    init = dict(alpha_res=3.0, identity=1.0, pre_select=2.0, post_spread=0.7, post_select=0.0,
                fixed_routing=False)
    init.update(changes)
    drawn, randn = [], torch.randn

    def recording(*args, **kwargs):
        out = randn(*args, **kwargs)
        if args == (N,):
            drawn.append(out.clone())
        return out
    torch.manual_seed(seed)
    torch.randn = recording
    try:
        model = StreamLM(256, CONTEXT, N, D, BLOCKS, HEADS,
                         Mixing(1, "unrolled", "tilekernels", "unrolled"), init)
    finally:
        torch.randn = randn
    return model, drawn


def check_post_select():
    plain, noise = build(5)
    selected, same_noise = build(5, post_select=3.0)
    require(len(noise) == 2 * BLOCKS and all(torch.equal(a, b)
                                             for a, b in zip(noise, same_noise)),
            "post_select changed the noise drawn")
    for k, (a, b) in enumerate(zip(plain.layers, selected.layers)):
        select = 2.0 * torch.eye(N)[k % N] - 1.0
        require(torch.equal(a.b_post.data, 0.7 * noise[k]),
                f"sublayer {k}: b_post is not the noise alone at post_select 0")
        require(torch.equal(b.b_post.data, 3.0 * select + 0.7 * noise[k]),
                f"sublayer {k}: b_post is not 3 (2 e_k - 1) + the noise")
        weights = 2 * torch.sigmoid(b.b_post.data)
        require(int(weights.argmax()) == k % N, f"sublayer {k} writes mainly elsewhere")
    others = dict(selected.named_parameters())
    for name, p in plain.named_parameters():
        if not name.endswith("b_post"):
            require(torch.equal(p, others[name]), f"post_select changed {name}")
    print("post_select: b_post = the noise at 0, 3 (2 e_k - 1) + the same noise at 3; "
          "nothing else changed: ok")


def routing(model):
    """{name: tensor} of the routing parameters fixed_routing keeps (copies)."""
    fixed = {"read": model.read.detach().clone()}
    for k, layer in enumerate(model.layers):
        fixed[f"{k}.b_pre"] = layer.b_pre.detach().clone()
        fixed[f"{k}.b_post"] = layer.b_post.detach().clone()
        fixed[f"{k}.a_pre_post"] = layer.scale[:2].detach().clone()
        fixed[f"{k}.W_pre_post"] = layer.project.weight[:2 * N].detach().clone()
    return fixed


def others(model):
    moving = {"embed": model.embed.weight, "head": model.head.weight}
    for k, layer in enumerate(model.layers):
        moving[f"{k}.a_res"] = layer.scale[2:]
        moving[f"{k}.W_res"] = layer.project.weight[2 * N:]
        moving[f"{k}.b_res"] = layer.b_res
        moving[f"{k}.sublayer"] = next(layer.sublayer.parameters())
    return {name: p.detach().clone() for name, p in moving.items()}


def check_fixed_routing():
    from training_step import Stepper, batch_loss
    device = torch.device("cpu")
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 256, (4, CONTEXT + 1), generator=generator)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    settings = dict(autocast="none", lr=1e-2, batch=4, context=CONTEXT)
    fixed, _ = build(2, post_select=3.0, fixed_routing=True)
    free, _ = build(2, post_select=3.0)
    require(torch.equal(fixed(inputs), free(inputs)), "fixed_routing changed the forward")
    grads = []
    for model in (fixed, free):
        params = [p for p in model.parameters() if p.requires_grad]
        loss = batch_loss(model, inputs, targets, device, "none")
        grads.append(dict(zip([n for n, p in model.named_parameters() if p.requires_grad],
                              torch.autograd.grad(loss, params))))
    for name, g in grads[0].items():
        if name.endswith("project.weight"):
            require(torch.equal(g[:2 * N], torch.zeros_like(g[:2 * N])),
                    f"{name}: the pre and post rows have a gradient")
            g, other = g[2 * N:], grads[1][name][2 * N:]
        elif name.endswith("scale"):
            require(torch.equal(g[:2], torch.zeros(2)), f"{name}: a_pre or a_post has one")
            g, other = g[2:], grads[1][name][2:]
        else:
            other = grads[1][name]
        require(torch.allclose(g, other, rtol=1e-5, atol=1e-7),
                f"{name}: fixed_routing changed the gradient of a trained parameter")
    require(len(grads[1]) - len(grads[0]) == 2 * len(fixed.layers) + 1,
            "fixed_routing: b_pre, b_post and read should leave the trained parameters")
    for model, kept in ((fixed, True), (free, False)):
        params = [p for p in model.parameters() if p.requires_grad]
        before, moving = routing(model), others(model)
        Stepper(model, params, settings, device, True, False).step(inputs, targets)
        after, moved = routing(model), others(model)
        for name in before:
            require(torch.equal(before[name], after[name]) == kept,
                    f"fixed_routing {kept}: {name} {'moved' if kept else 'did not move'}")
        for name in moving:
            require(not torch.equal(moving[name], moved[name]),
                    f"fixed_routing {kept}: {name} did not move")
    print("fixed_routing: the same forward and trained gradients, zero routing gradients; "
          "after a step the routing is unchanged with it and moved without it: ok")


def check_command_line(training, work):
    study = os.path.join(training, "training_study.py")
    help_text = subprocess.run([sys.executable, study, "--help"], check=True,
                               capture_output=True, text=True).stdout
    require("--post-select" in help_text and "--fixed-routing" in help_text, "--help")
    corpus = os.path.join(work, "corpus")
    subprocess.run([sys.executable, os.path.join(training, "make_corpus.py"), "--out", corpus,
                    "--megabytes", "0.03", "--held-out", "4"], check=True, capture_output=True)
    tiny = [sys.executable, study, "--smoke", "--corpus", corpus, "--backwards", "unrolled",
            "--T", "1", "--steps", "2", "--quiet"]
    logs, studies, counts = {}, {}, {}
    for name, flags in (("default", []), ("routed", ["--post-select", "3",
                                                      "--fixed-routing"])):
        logs[name] = os.path.join(work, name + ".h5")
        subprocess.run(tiny + flags + ["--output", logs[name]], check=True, capture_output=True)
        with h5py.File(logs[name], "r") as f:
            studies[name] = f.attrs["study"].splitlines()
            counts[name] = [int(r.attrs["parameters"]) for r in f["runs"].values()][0]
    require("post_select=0.0" in studies["default"] and "fixed_routing=False"
            in studies["default"], f"the default study: {studies['default']}")
    require("post_select=3.0" in studies["routed"] and "fixed_routing=True" in studies["routed"],
            f"the routed study: {studies['routed']}")
    require(counts["default"] - counts["routed"] == 2 * 2 * N + N,
            f"trained parameters {counts}: b_pre, b_post of 2 sublayers and read should go")
    with h5py.File(logs["default"], "a") as f:  # as a log written before the settings
        f.attrs["study"] = "".join(line + "\n" for line in studies["default"]
                                   if not line.startswith(("post_select=", "fixed_routing=")))
    resumed = subprocess.run(tiny + ["--output", logs["default"], "--resume"],
                             capture_output=True, text=True)
    require(resumed.returncode == 0, f"an older log with the defaults: {resumed.stderr}")
    refused = subprocess.run(tiny + ["--post-select", "3", "--output", logs["default"],
                                     "--resume"], capture_output=True, text=True)
    require(refused.returncode == 1 and "post_select: '0.0' in the log, '3.0' now"
            in refused.stderr, f"--post-select 3 on an older log: {refused.stderr!r}")
    print("command line: the flags reach the study and the trained parameters; an older log "
          "resumes with the defaults only: ok")


def main(training, work):
    sys.path.insert(0, training)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.set_num_threads(1)
    check_post_select()
    check_fixed_routing()
    check_command_line(training, work)
    print("training_routing_test: ok")


if __name__ == "__main__":
    main(*sys.argv[1:3])
