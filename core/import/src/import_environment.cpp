#include "import_environment.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>

#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/nccl_env.hpp"
#include "stepsim/config/schema.hpp"

namespace stepsim::detail {
namespace {

/// A shell assignment: a name of letters, digits and underscores (not starting with a
/// digit), '=' and the value.
bool is_assignment(std::string_view word) {
  const auto eq = word.find('=');
  if (eq == 0 || eq == std::string_view::npos) return false;
  if (word.front() >= '0' && word.front() <= '9') return false;
  return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

/// NCCL's variables that change which algorithm, protocol, channels or transport a collective
/// or a transfer runs with (NCCL's docs, "Environment Variables"): stepsim prices collectives
/// as NCCL's own tuning chooses them.
/// (NCCL_ALGO and NCCL_PROTO, which restrict that choice, are the schema's keys.)
constexpr std::string_view kNcclTuning[] = {"NCCL_MIN_CTAS",
                                            "NCCL_MAX_CTAS",
                                            "NCCL_BUFFSIZE",
                                            "NCCL_NTHREADS",
                                            "NCCL_P2P_NVL_CHUNKSIZE",
                                            "NCCL_P2P_PCI_CHUNKSIZE",
                                            "NCCL_NCHANNELS_PER_NET_PEER",
                                            "NCCL_CROSS_NIC",
                                            "NCCL_P2P_LEVEL",
                                            "NCCL_P2P_DISABLE",
                                            "NCCL_SHM_DISABLE",
                                            "NCCL_IB_DISABLE",
                                            "NCCL_NET_GDR_LEVEL",
                                            "NCCL_COLLNET_ENABLE",
                                            "NCCL_IB_QPS_PER_CONNECTION",
                                            "NCCL_TOPO_FILE",
                                            "NCCL_GRAPH_FILE",
                                            "NCCL_TUNER_PLUGIN"};

/// Why a job with Transformer Engine's deterministic algorithms is refused: what they change
/// (transformer_engine/pytorch/attention/dot_product_attention/utils.py, get_attention_backend,
/// "Filter: Determinism") and what stepsim lacks to price them.
constexpr std::string_view kDeterministicKernels =
    ": Transformer Engine then keeps only attention backends whose backward is deterministic "
    "(flash-attn >= 2.4.1 in its deterministic mode; cuDNN fused attention's arbitrary-seqlen "
    "sub-backend on its workspace-optimised path, sm90 and later), and stepsim's profiles hold "
    "no measurement of those backward kernels";

/// The value Megatron-Core sets Transformer Engine's attention variable `name` to for the
/// attention backend `backend` (LanguageModule._set_attention_backend: it asserts that a
/// value already in the environment is that one).
char expected_attention_env(std::string_view name, std::string_view backend) {
  const std::optional<AttentionBackend> b = parse_enum<AttentionBackend>(backend);
  if (!b) return '0';
  switch (*b) {
    case AttentionBackend::kLocal:
      return '0';
    case AttentionBackend::kAuto:
      return '1';
    case AttentionBackend::kFlash:
      return name == "NVTE_FLASH_ATTN" ? '1' : '0';
    case AttentionBackend::kFused:
      return name == "NVTE_FUSED_ATTN" ? '1' : '0';
    case AttentionBackend::kUnfused:
      return name == "NVTE_UNFUSED_ATTN" ? '1' : '0';
  }
  return '0';
}

bool parse_int(const std::string& s, std::int64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

std::vector<Assignment> environment_of(const std::vector<std::string>& words, std::size_t end,
                                       bool leading_only) {
  std::vector<Assignment> out;
  for (std::size_t i = 0; i < end && i < words.size(); ++i) {
    if (!is_assignment(words[i])) {
      if (leading_only) break;
      continue;
    }
    const auto eq = words[i].find('=');
    out.emplace_back(words[i].substr(0, eq), words[i].substr(eq + 1));
  }
  return out;
}

ImportedEnvironment import_environment(const std::vector<Assignment>& environment,
                                       std::string_view attention_backend,
                                       const std::string& label) {
  ImportedEnvironment out;
  for (const Assignment& assignment : environment) {
    // Named copies: the lambda below compares with the name (clang 14 cannot capture a
    // structured binding).
    const std::string& name = assignment.first;
    const std::string& value = assignment.second;
    const std::string word = name + "=" + value;
    const auto row = std::find_if(scenario_schema().begin(), scenario_schema().end(),
                                  [&](const KeyInfo& k) { return k.env == name; });
    if (row != scenario_schema().end() && row->kind == KnobKind::kString) {
      // NCCL_ALGO / NCCL_PROTO: NCCL's own syntax, refused here as NCCL refuses it.
      NcclEnabled scratch;
      const std::string problem = apply_nccl_enable_list(value, name == "NCCL_ALGO", scratch);
      if (!problem.empty()) {
        out.errors.push_back(Error{label, name, "=" + value + problem + ": NCCL stops"});
      } else {
        out.training_text.emplace_back(std::string(row->key.substr(row->key.find('.') + 1)),
                                       value);
      }
      continue;
    }
    if (row != scenario_schema().end()) {
      std::int64_t v = 0;
      if (!parse_int(value, v) || v < 0) {
        out.errors.push_back(Error{label, name, "=" + value + " must be an integer >= 0"});
      } else {
        out.training.emplace_back(std::string(row->key.substr(row->key.find('.') + 1)), v);
      }
      continue;
    }
    if (name == "NVTE_FLASH_ATTN" || name == "NVTE_FUSED_ATTN" || name == "NVTE_UNFUSED_ATTN") {
      const char want = expected_attention_env(name, attention_backend);
      if (value != std::string(1, want)) {
        out.errors.push_back(
            Error{label, name,
                  "=" + value + " contradicts attention_backend=" + std::string(attention_backend) +
                      ": Megatron-Core expects " + name + "=" + want +
                      " and stops (\"unset NVTE_FLASH_ATTN, NVTE_FUSED_ATTN and NVTE_UNFUSED_ATTN. "
                      "Use the --attention-backend argument\")"});
      } else {
        out.ignored.push_back(word);  // what Megatron-Core sets anyway
      }
      continue;
    }
    if (name == "NVTE_ALLOW_NONDETERMINISTIC_ALGO") {
      if (value == "1") {
        out.ignored.push_back(word);  // Transformer Engine's default (it reads int(value))
      } else {
        out.unmodelled.emplace_back(word, std::string(kDeterministicKernels));
      }
      continue;
    }
    if (name.starts_with("NVTE_")) {
      out.unmodelled.emplace_back(word,
                                  " is a Transformer Engine setting that changes its kernels, "
                                  "and stepsim does not model it yet");
      continue;
    }
    if (std::find(std::begin(kNcclTuning), std::end(kNcclTuning), name) != std::end(kNcclTuning)) {
      out.unmodelled.emplace_back(word,
                                  " changes how NCCL runs collectives, and stepsim prices them "
                                  "as NCCL's own tuning chooses");
      continue;
    }
    if (name == "CUDA_DEVICE_MAX_CONNECTIONS" && value != "1") {
      out.unmodelled.emplace_back(word,
                                  ": kernels of several streams may then start out of the "
                                  "order the program issues them in; stepsim models one "
                                  "hardware queue (the 1 Megatron asks for with TP and "
                                  "sequence parallelism)");
      continue;
    }
    out.ignored.push_back(word);  // paths, logging, allocator and launcher settings
  }
  return out;
}

}  // namespace stepsim::detail
