#include "stepsim/config/ub_cfg.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

#include "stepsim/base/yaml_lines.hpp"

// What the settings of Transformer Engine's add_ub do, and which stepsim prices.
// Details: docs/models.md, "Userbuffers settings".

namespace stepsim::detail {

namespace {

class Reader final : public MappingReader {
 public:
  Reader(const std::string& file, std::array<UbGemmSettings, kUbGemmNames.size()>& gemms,
         Errors& errors)
      : MappingReader(file, errors, "GEMM names"), gemms_(gemms) {}

 private:
  bool at_start() const override { return gemm_ < 0 && !seen_gemm_; }
  void top(const std::string& key, std::string_view value) override { gemm_line(key, value); }
  void nested(std::size_t indent, const std::string& key, std::string_view value) override {
    setting_line(indent, key, value);
  }

  /// The rules that need the whole block of a GEMM (its settings in any order).
  void finish_block() {
    if (gemm_ < 0) return;
    const std::string name(kUbGemmNames[static_cast<std::size_t>(gemm_)]);
    const UbGemmSettings& s = gemms_[static_cast<std::size_t>(gemm_)];
    const std::size_t line = line_;
    if (s.ring_exchange == 1 && use_ce_false_line_ > 0) {
      line_ = use_ce_false_line_;
      fail(name + ".use_ce",
           "=false is not modelled yet (the ring exchange's transfers by SM kernels instead of "
           "the copy engine)");
    }
    if (s.ring_exchange == 1 && atomic_gemm_line_ > 0) {
      line_ = atomic_gemm_line_;
      fail(name + ".atomic_gemm",
           "=true is not modelled yet with method ring_exchange (Transformer Engine's atomic "
           "ring-exchange reduce-scatter; stepsim models atomic_gemm with method pipeline)");
    }
    if (s.ring_exchange == 1 && num_splits_line_ > 0) {
      line_ = num_splits_line_;
      fail(name + ".num_splits",
           "=" + std::to_string(s.num_splits) +
               " changes nothing with method ring_exchange (Transformer Engine's CommOverlapP2P "
               "splits the GEMM in tensor_model_parallel_size chunks)");
    }
    line_ = line;
  }

 public:
  void finish() { finish_block(); }

 private:
  void gemm_line(const std::string& name, std::string_view value) {
    finish_block();
    use_ce_false_line_ = 0;
    num_splits_line_ = 0;
    atomic_gemm_line_ = 0;
    gemm_ = -1;
    seen_gemm_ = true;
    block_indent_ = 0;
    const auto* found = std::find(kUbGemmNames.begin(), kUbGemmNames.end(), name);
    if (found == kUbGemmNames.end()) {
      fail(name,
           " is not one of Transformer Engine's userbuffers GEMMs (qkv_fprop, qkv_dgrad, "
           "qkv_wgrad, proj_fprop, proj_dgrad, proj_wgrad, fc1_fprop, fc1_dgrad, "
           "fc1_wgrad, fc2_fprop, fc2_dgrad, fc2_wgrad)");
      return;
    }
    if (!value.empty()) {
      fail(name, "=" + std::string(value) + " must be a mapping of settings (on the lines below)");
      return;
    }
    const auto index = static_cast<std::size_t>(found - kUbGemmNames.begin());
    if (given_[index]) {
      fail(name, " is given twice");
      return;
    }
    given_[index] = true;
    gemm_ = static_cast<int>(index);
    settings_.clear();
  }

  void setting_line(std::size_t indent, const std::string& setting, std::string_view raw) {
    if (!seen_gemm_) {
      fail("", "a setting before any GEMM name");
      return;
    }
    if (gemm_ < 0) return;  // the GEMM line was wrong: reported once
    if (block_indent_ == 0) block_indent_ = indent;
    const std::string name(kUbGemmNames[static_cast<std::size_t>(gemm_)]);
    const std::string key = name + "." + setting;
    if (indent != block_indent_) {
      fail(key, " is indented unlike the settings above it (nested mappings are not read)");
      return;
    }
    if (std::find(settings_.begin(), settings_.end(), setting) != settings_.end()) {
      fail(key, " is given twice");
      return;
    }
    settings_.push_back(setting);
    const auto value = unquote(raw);
    if (!value || value->empty()) {
      fail(key, "=" + std::string(raw) + " must be a scalar");
      return;
    }
    apply(name, key, setting, *value);
  }

  std::optional<bool> want_bool(const std::string& key, const std::string& value) {
    const auto b = as_bool(value);
    if (!b) fail(key, "=" + value + " must be true or false (or 1 or 0)");
    return b;
  }

  std::optional<std::int64_t> want_int(const std::string& key, const std::string& value,
                                       std::int64_t min) {
    const auto i = as_int(value);
    if (!i || *i < min) {
      fail(key, "=" + value + " must be an integer >= " + std::to_string(min));
      return std::nullopt;
    }
    return i;
  }

  /// `method`: Transformer Engine's default for `gemm`, or ring_exchange for a pipelined
  /// reduce-scatter; the rest is rejected.
  void apply_method(UbGemmSettings& s, const std::string& gemm, const std::string& key,
                    const std::string& value) {
    const std::string_view method = ub_default_method(gemm);
    const bool reduce_scatter =
        gemm == "proj_fprop" || gemm == "fc2_fprop" || gemm == "qkv_wgrad" || gemm == "fc1_wgrad";
    const bool ring_ag = method == "ring_exchange";
    if (value == "ring_exchange" && method == "pipeline") {
      s.ring_exchange = 1;  // CommOverlapP2PBase::split_overlap_rs
    } else if (value == "pipeline" && ring_ag) {
      // add_ub: "`pipeline` overlap method is not supported for AllGather."
      fail(key, "=pipeline: Transformer Engine rejects it (" + gemm +
                    " is an all-gather: \"`pipeline` overlap method is not supported for "
                    "AllGather\")");
    } else if (value != method) {
      fail(key, "=" + value + " is not modelled yet (stepsim runs " + gemm + " with " +
                    (reduce_scatter && method == "pipeline" ? "pipeline or ring_exchange"
                                                            : "Transformer Engine's default "
                                                              "method, " +
                                                                  std::string(method)) +
                    ")");
    }
  }

  /// `aggregate`: read only in an all-gather ring exchange.
  void apply_aggregate(UbGemmSettings& s, const std::string& gemm, const std::string& key,
                       const std::string& value, bool ring_ag) {
    if (const auto b = want_bool(key, value)) {
      if (*b && !ring_ag) {
        fail(key, "=true changes nothing on " + gemm +
                      " (Transformer Engine reads aggregate only in an all-gather ring "
                      "exchange, CommOverlapP2PBase::split_overlap_ag: qkv_fprop, fc1_fprop, "
                      "proj_dgrad, fc2_dgrad)");
      } else {
        s.aggregate = *b ? 1 : 0;
      }
    }
  }

  /// `atomic_gemm`: modelled on the pipelined reduce-scatters.
  void apply_atomic_gemm(UbGemmSettings& s, const std::string& gemm, const std::string& key,
                         const std::string& value, std::string_view method) {
    if (const auto b = want_bool(key, value); b && *b) {
      if (method == "pipeline") {
        s.atomic_gemm = 1;  // an error in finish_block if the block makes it a ring exchange
        atomic_gemm_line_ = line_;
      } else if (method == "bulk") {
        // add_ub: "atomic GEMM not is supported for a bulk overlap. Defaulting to
        // `atomic_gemm=False`."
        fail(key, "=true changes nothing on " + gemm +
                      " (Transformer Engine turns it off for a bulk overlap: \"atomic GEMM not "
                      "is supported for a bulk overlap\")");
      } else {
        fail(key, "=true is not modelled yet on " + gemm +
                      " (Transformer Engine's atomic all-gather ring exchange; stepsim "
                      "models atomic_gemm on proj_fprop and fc2_fprop with method pipeline)");
      }
    } else if (b) {
      s.atomic_gemm = 0;
    }
  }

  /// `use_ce` false: modelled except on a ring exchange.
  void apply_use_ce(const std::string& key, const std::string& value, bool ring_ag) {
    if (const auto b = want_bool(key, value); b && !*b) {
      if (ring_ag) {
        fail(key,
             "=false is not modelled yet (the ring exchange's transfers by SM kernels "
             "instead of the copy engine)");
      } else {
        use_ce_false_line_ = line_;  // an error if the block makes it a ring exchange
      }
    }
  }

  void apply(const std::string& gemm, const std::string& key, const std::string& setting,
             const std::string& value) {
    UbGemmSettings& s = gemms_[static_cast<std::size_t>(gemm_)];
    const std::string_view method = ub_default_method(gemm);
    const bool reduce_scatter =
        gemm == "proj_fprop" || gemm == "fc2_fprop" || gemm == "qkv_wgrad" || gemm == "fc1_wgrad";
    if (method == "external" && setting != "method") {
      fail(key, "=" + value + ": " + gemm + " has no userbuffers kernel of its own (it reuses " +
                    gemm.substr(0, gemm.find('_')) +
                    "_dgrad's gathered gradient): the setting changes nothing stepsim models");
      return;
    }
    const bool ring_ag = method == "ring_exchange";
    if (setting == "method") {
      apply_method(s, gemm, key, value);
    } else if (setting == "is_reduce_scatter") {
      if (const auto b = want_bool(key, value); b && *b != reduce_scatter) {
        fail(key, "=" + value + " is not " + gemm + "'s direction (" +
                      (reduce_scatter ? "a reduce-scatter" : "an all-gather") + ")");
      }
    } else if (setting == "num_sm") {
      if (const auto i = want_int(key, value, 1)) s.num_sm = *i;
    } else if (setting == "num_splits") {
      if (const auto i = want_int(key, value, 1)) {
        s.num_splits = *i;
        num_splits_line_ = line_;
      }
    } else if (setting == "cga_size") {
      want_int(key, value, 1);
    } else if (setting == "comm_priority" || setting == "gemm_priority") {
      if (!as_int(value)) fail(key, "=" + value + " must be an integer");
    } else if (setting == "set_sm_margin") {
      if (const auto b = want_bool(key, value)) s.set_sm_margin = *b ? 1 : 0;
    } else if (setting == "fp8_buf") {
      if (const auto b = want_bool(key, value)) s.fp8_buf = *b ? 1 : 0;
    } else if (setting == "aggregate") {
      apply_aggregate(s, gemm, key, value, ring_ag);
    } else if (setting == "atomic_gemm") {
      apply_atomic_gemm(s, gemm, key, value, method);
    } else if (setting == "pipeline_rs_overlap_first_gemm") {
      if (const auto b = want_bool(key, value); b && *b) {
        fail(key, "=true is not modelled yet (Transformer Engine's " + setting + ")");
      }
    } else if (setting == "use_ce") {
      apply_use_ce(key, value, ring_ag);
    } else {
      fail(key,
           " is not a setting of Transformer Engine's initialize_ub (method, "
           "is_reduce_scatter, num_sm, cga_size, set_sm_margin, num_splits, aggregate, "
           "atomic_gemm, use_ce, fp8_buf, comm_priority, gemm_priority, "
           "pipeline_rs_overlap_first_gemm)");
    }
  }

  std::array<UbGemmSettings, kUbGemmNames.size()>& gemms_;
  int gemm_ = -1;
  bool seen_gemm_ = false;
  std::size_t block_indent_ = 0;
  std::array<bool, kUbGemmNames.size()> given_{};
  std::size_t use_ce_false_line_ = 0;  ///< the block's "use_ce: false" (0: none)
  std::size_t num_splits_line_ = 0;    ///< the block's num_splits (0: none)
  std::size_t atomic_gemm_line_ = 0;   ///< the block's "atomic_gemm: true" (0: none)
  std::vector<std::string> settings_;
};

}  // namespace

std::string_view ub_default_method(std::string_view gemm) {
  if (gemm == "qkv_fprop" || gemm == "fc1_fprop" || gemm == "proj_dgrad" || gemm == "fc2_dgrad") {
    return "ring_exchange";
  }
  if (gemm == "proj_fprop" || gemm == "fc2_fprop") return "pipeline";
  if (gemm == "proj_wgrad" || gemm == "fc2_wgrad") return "external";
  return "bulk";
}

void read_ub_cfg(std::string_view text, const std::string& file,
                 std::array<UbGemmSettings, kUbGemmNames.size()>& gemms, Errors& errors) {
  Reader reader(file, gemms, errors);
  reader.read(text);
  reader.finish();
}

}  // namespace stepsim::detail
