"""The text of training/training_study.py: a corpus directory of training/make_corpus.py
(train.txt, eval.txt: held out by whole manual pages), read as bytes (a 256-token vocabulary)
and kept on the training device, with every run's batch positions drawn up front."""
import hashlib
import os

import numpy as np
import torch

VOCABULARY = 256  # bytes: the corpus is ASCII, so one token is one character


class Corpus:
    def __init__(self, directory, context, eval_windows, device):
        self.directory, self.context = directory, context
        parts, digest = {}, hashlib.sha256()
        for split in ("train", "eval"):
            path = os.path.join(directory, f"{split}.txt")
            if not os.path.isfile(path):
                raise SystemExit(f"training_study.py: '{path}' is missing; make the corpus with "
                                 f"python3 training/make_corpus.py --out {directory}")
            with open(path, "rb") as f:
                raw = f.read()
            digest.update(hashlib.sha256(raw).digest())
            parts[split] = raw
        # The hash of the two texts' hashes names the corpus in the log.
        self.sha256 = digest.hexdigest()
        self.train_chars, self.eval_chars = len(parts["train"]), len(parts["eval"])
        for split, raw in parts.items():
            if len(raw) < context + 2:
                raise SystemExit(f"training_study.py: {directory}/{split}.txt is too short for "
                                 f"context {context}")
        # uint8 on the device (16 MB for the default corpus): a batch is gathered there.
        self.train = torch.from_numpy(np.frombuffer(parts["train"], np.uint8).copy()).to(device)
        self.held_out = torch.from_numpy(np.frombuffer(parts["eval"], np.uint8).copy()).to(device)
        self.offsets = torch.arange(context + 1, device=device)
        # Evaluation windows evenly spaced over the whole held-out text (every page).
        starts = np.linspace(0, len(parts["eval"]) - context - 1, eval_windows).astype(np.int64)
        self.eval_batch = self.windows(self.held_out, torch.from_numpy(starts).to(device))

    def windows(self, tokens, starts):
        chunk = tokens[starts[:, None] + self.offsets].long()
        return chunk[:, :-1], chunk[:, 1:]

    def starts(self, seed, batch, steps):
        """(steps, batch) start positions of one seed's training windows, drawn on the cpu (so
        the batches are the same on every device) and moved to the device once: the same for
        every backward, T and forward convention."""
        generator = torch.Generator().manual_seed(1_000_003 * seed + 17)
        starts = torch.randint(0, self.train_chars - self.context - 1, (steps, batch),
                               generator=generator)
        return starts.to(self.train.device)
