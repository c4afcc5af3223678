#!/usr/bin/env python3
"""Self-test of core/config/tools/megatron_arguments.py on a small made-up Megatron-LM tree:
add_argument flags (several names, an explicit dest), ArgumentGroupFactory over a dataclass
with a base class (a bool that does not default to False gives --no-x and --disable-x, one
that does --x, argparse_meta's arg_names and dest win, init=False and the exclude list give no
flag, an exclude list bound to a name first). Exit 1 showing the difference."""

import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "core", "config", "tools",
                    "megatron_arguments.py")

ARGUMENTS = '''
from megatron.training.argument_utils import ArgumentGroupFactory
from megatron.core.transformer import TransformerConfig

def _add_network_size_args(parser):
    exclude = ["activation_func", "params_dtype"]
    ArgumentGroupFactory(TransformerConfig, exclude=exclude).build_group(parser, "t")
    group = parser.add_argument_group(title="network size")
    group.add_argument("--num-layers", type=int, default=None)
    group.add_argument("--ffn-hidden-size", "--ffn-size", type=int)
    group.add_argument("--no-masked-softmax-fusion", action="store_false",
                       dest="masked_softmax_fusion")
    return parser

def _add_logging_args(parser):
    from megatron.training.config import LoggerConfig
    ArgumentGroupFactory(LoggerConfig, exclude=["skipped"]).build_group(parser, "logging")
    return parser
'''

BASE = '''
from dataclasses import dataclass, field

@dataclass
class ModelParallelConfig:
    tensor_model_parallel_size: int = 1
    sequence_parallel: bool = False
    gradient_accumulation_fusion: bool = True
    params_dtype: str = "fp32"
'''

TRANSFORMER = '''
from dataclasses import dataclass, field
from typing import Optional
from megatron.core.model_parallel_config import ModelParallelConfig

@dataclass
class TransformerConfig(ModelParallelConfig):
    num_attention_heads: int = 0
    add_bias_linear: bool = field(default=True,
                                  metadata={"argparse_meta": {"arg_names": ["--disable-bias-linear"]}})
    apply_rope_fusion: Optional[bool] = None
    activation_func: str = "gelu"
    derived: int = field(default=0, init=False)
'''

CONFIG = '''
from dataclasses import dataclass, field

@dataclass
class LoggerConfig:
    log_interval: int = 100
    use_nsys_profiler: bool = field(default=False, metadata={"argparse_meta": {"arg_names": ["--profile"], "dest": "profile"}})
    skipped: int = 0
'''

WANT = """--disable-apply-rope-fusion apply_rope_fusion
--disable-bias-linear add_bias_linear
--disable-gradient-accumulation-fusion gradient_accumulation_fusion
--ffn-hidden-size ffn_hidden_size
--ffn-size ffn_hidden_size
--log-interval log_interval
--no-apply-rope-fusion apply_rope_fusion
--no-gradient-accumulation-fusion gradient_accumulation_fusion
--no-masked-softmax-fusion masked_softmax_fusion
--num-attention-heads num_attention_heads
--num-layers num_layers
--profile profile
--sequence-parallel sequence_parallel
--tensor-model-parallel-size tensor_model_parallel_size
"""


def main():
    with tempfile.TemporaryDirectory() as root:
        files = {
            "megatron/training/arguments.py": ARGUMENTS,
            "megatron/core/model_parallel_config.py": BASE,
            "megatron/core/transformer/transformer_config.py": TRANSFORMER,
            "megatron/training/config/training_config.py": CONFIG,
        }
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        out = subprocess.run([sys.executable, TOOL, root], check=True, capture_output=True,
                             text=True).stdout
    got = "".join(line + "\n" for line in out.splitlines() if not line.startswith("#"))
    # Optional[bool] = None is a store_false flag too ("store_true" if default == False else
    # "store_false"): --no-apply-rope-fusion and --disable-apply-rope-fusion, no --apply-rope-fusion.
    want = WANT
    if got != want:
        import difflib
        sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                   "want", "got"))
        return 1
    header = out.splitlines()[1]
    if "NVIDIA/Megatron-LM" not in header:
        print("no header naming the source:", header)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
