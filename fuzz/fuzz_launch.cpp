// Megatron-LM launch lines built from a vocabulary rather than raw bytes: each input byte picks
// a piece (a real flag name or value, a Unicode dash or quote lookalike, a shell quote,
// escape, continuation, redirection or pipe, an assignment), so the fuzzer reaches mangled
// flags and shell quoting at once instead of after millions of random bytes (issue 41). The
// line goes through scenario_from_megatron_args and, when imported, through the loader as
// `stepsim predict --megatron-args` does.
#include <iterator>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "stepsim/import/import.hpp"

namespace {

constexpr std::string_view kPieces[] = {
    // Flags' bodies and values (the importer's own and ones it ignores).
    "--", "-", "bf16", "fp16", "swiglu", "num-layers", "hidden-size", "num-attention-heads",
    "tensor-model-parallel-size", "pipeline-model-parallel-size", "seq-length",
    "global-batch-size", "micro-batch-size", "vocab-size", "data-path", "lr", "cp-comm-type",
    "hierarchical-context-parallel-sizes", "8", "2", "010", "-1e-4", "a2a", "/data/x",
    // Dash and hyphen lookalikes, as pasted from web pages and word processors.
    "\u2014", "\u2013", "\u2212", "\u2010", "\u2011", "\u2012", "\u2015", "\uFE58", "\uFE63",
    "\uFF0D", "\u00AD",
    // Typographic quotes, and the shell's own quoting.
    "\u201C", "\u201D", "\u2018", "\u2019", "\u00AB", "'", "\"", "\\", "\\\n", "$", "`",
    // Word separators, the launcher, the environment and the shell's operators.
    " ", " ", "\t", "\n", "=", "pretrain_gpt.py", "torchrun --nproc_per_node 8",
    "NVTE_FWD_LAYERNORM_SM_MARGIN=8", "CUDA_DEVICE_MAX_CONNECTIONS=1", "|", "2>&1", ">",
    "&&", ";", "\xE2\x80", "\xC2",  // and cut UTF-8 sequences
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  // A job the pieces then mangle or extend: a valid line on its own.
  std::string line =
      "pretrain_gpt.py --num-layers 8 --hidden-size 512 --num-attention-heads 8 "
      "--seq-length 256 --micro-batch-size 1 --global-batch-size 8 --vocab-size 1000 ";
  for (std::size_t i = 0; i < size && line.size() < 65536; ++i) {
    const std::uint8_t b = data[i];
    if (b < std::size(kPieces)) {
      line += kPieces[b];
    } else if (b >= 0x80 && i + 1 < size) {
      line += static_cast<char>(data[++i]);  // a raw byte
    } else {
      line += static_cast<char>(b);  // printable ASCII beyond the table
    }
  }
  MegatronImportOptions import;
  import.world_size = 8;
  import.system = "systems/dgx-a100-80gb.json";
  Result<ImportedScenario> s = scenario_from_megatron_args(line, import);
  if (!s.ok()) return 0;
  const auto options = fuzz::load_options();
  (void)load_scenario_text(s->scenario_json, "--megatron-args", STEPSIM_SCENARIOS_DIR, options);
  return 0;
}
