"""scripts/torch_layer_host_cost.py runs on the cpu as a user runs it (few steps) and prints its
table: a row per backward with the layer, raw, layer - raw and chain columns, the two torch
floors, and with --profile the profiler's table naming the layer's ranges.

    PYTHONPATH=build/python python3 tests/torch/host_cost_test.py scripts/torch_layer_host_cost.py
"""
import subprocess
import sys
import unittest

SCRIPT = None


class HostCost(unittest.TestCase):
    def test_table_and_profile(self):
        done = subprocess.run([sys.executable, SCRIPT, "--steps", "40", "--repeats", "1",
                               "--chain", "4", "--backwards", "cg_corrected", "unrolled",
                               "--profile"], capture_output=True, text=True, timeout=240)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        rows = {}
        for line in done.stdout.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| ") and len(cells) == 5 and cells[0] not in ("backward", "---"):
                rows[cells[0]] = cells[1:]
        for backward in ("cg_corrected", "unrolled"):
            layer, raw, difference, chain = (float(c) for c in rows[backward])
            self.assertGreater(layer, 0)
            self.assertGreater(raw, 0)
            self.assertGreater(chain, 0)
            self.assertAlmostEqual(difference, layer - raw, delta=0.11)
        floors = [name for name in rows if name.startswith("torch floor")]
        self.assertEqual(len(floors), 2, rows)
        for name in floors:
            self.assertGreater(float(rows[name][0]), 0)
            self.assertEqual(rows[name][1:3], ["-", "-"])
            self.assertGreater(float(rows[name][3]), 0)
        self.assertIn("torch.profiler, 200 layer steps (cg_corrected)", done.stdout)
        self.assertIn("sinkgrad::sinkhorn_backward[cg_corrected]", done.stdout)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
