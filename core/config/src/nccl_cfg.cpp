#include "nccl_cfg.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

#include "stepsim/base/yaml_lines.hpp"

namespace stepsim::detail {

namespace {

// megatron/core/parallel_state.py (NVIDIA/Megatron-LM d98e8a64ddf34856e74b24714e3bedb2f5a39553):
// every name initialize_model_parallel passes to get_nccl_options; "tp_exp" is Megatron-Core
// 0.9's (tag 24.09-alpha.rc0) tensor-and-expert group.
constexpr std::array<std::string_view, 28> kGroups = {"cp",
                                                      "dp",
                                                      "dp_cp",
                                                      "embd",
                                                      "ep",
                                                      "ep_dp",
                                                      "ep_gtp_remat_dp",
                                                      "ep_tp",
                                                      "expt_gtp_remat",
                                                      "gtp_remat",
                                                      "gtp_remat_dp",
                                                      "gtp_remat_dp_cp",
                                                      "hcp",
                                                      "inter_ep_dp",
                                                      "intra_dist_opt_instance",
                                                      "intra_dp_cp",
                                                      "intra_ep_dp",
                                                      "mp",
                                                      "pos_embd",
                                                      "pp",
                                                      "tp",
                                                      "tp_cp",
                                                      "tp_dp",
                                                      "tp_dp_cp",
                                                      "tp_ep_gtp_remat_pp",
                                                      "tp_ep_mp",
                                                      "tp_ep_pp",
                                                      "tp_exp"};

// ncclConfig_t's ranges (NCCL init.cc: minCTAs and maxCTAs are capped at MAXCHANNELS = 64;
// NCCL_MAX_CGA_CLUSTER_SIZE 8).
constexpr std::int64_t kMaxChannels = 64;
constexpr std::int64_t kMaxCgaClusterSize = 8;

class Reader final : public MappingReader {
 public:
  Reader(const std::string& file, std::vector<NcclGroupOptions>& out, Errors& errors)
      : MappingReader(file, errors, "process-group names"), out_(out) {}

 private:
  bool at_start() const override { return out_.empty(); }
  void top(const std::string& key, std::string_view value) override { group_line(key, value); }
  void nested(std::size_t indent, const std::string& key, std::string_view value) override {
    option_line(indent, key, value);
  }

  void group_line(const std::string& name, std::string_view value) {
    group_ = -1;
    indent_ = 0;
    if (!value.empty()) {
      fail(name, ": a process group maps to its options (\"max_ctas: N\" lines below it)");
      return;
    }
    if (!is_megatron_nccl_group(name)) {
      std::string known;
      for (std::string_view g : kGroups) known += (known.empty() ? "" : ", ") + std::string(g);
      fail(name,
           " is not a process group Megatron-LM passes to get_nccl_options (Megatron would "
           "ignore it): one of " +
               known);
      return;
    }
    const bool seen = std::any_of(out_.begin(), out_.end(),
                                  [&](const NcclGroupOptions& g) { return g.group == name; });
    if (seen) {
      fail(name, " is given twice");
      return;
    }
    out_.push_back(NcclGroupOptions{.group = name});
    group_ = static_cast<int>(out_.size()) - 1;
  }

  void option_line(std::size_t indent, const std::string& option, std::string_view value) {
    if (group_ < 0) {
      if (out_.empty() && errors_.empty()) fail("", "an option outside a process group");
      return;  // the group's own line already failed
    }
    if (indent_ == 0) indent_ = indent;
    NcclGroupOptions& g = out_[static_cast<std::size_t>(group_)];
    const std::string key = g.group + "." + option;
    if (indent != indent_) {
      fail(key, ": the options of a group must be indented alike");
      return;
    }
    if (option == "min_ctas" || option == "max_ctas" || option == "cga_cluster_size") {
      const auto v = as_int(value);
      const std::int64_t top = option == "cga_cluster_size" ? kMaxCgaClusterSize : kMaxChannels;
      const std::int64_t bottom = option == "cga_cluster_size" ? 0 : 1;
      if (!v || *v < bottom || *v > top) {
        fail(key, "=" + std::string(value) + " must be an integer in [" + std::to_string(bottom) +
                      ", " + std::to_string(top) + "] (NCCL's range of ncclConfig_t's " + option +
                      ")");
        return;
      }
      std::int64_t& slot = option == "min_ctas"   ? g.min_ctas
                           : option == "max_ctas" ? g.max_ctas
                                                  : g.cga_cluster_size;
      if (slot >= 0) {
        fail(key, " is given twice");
        return;
      }
      slot = *v;
      return;
    }
    if (option == "is_high_priority_stream") {
      const auto v = as_bool(value);
      if (!v) {
        fail(key, "=" + std::string(value) + " must be true or false");
      } else if (*v) {
        fail(key,
             "=true is not modelled yet (the group's collectives on a high-priority CUDA "
             "stream, which changes how the GPU schedules them against the compute)");
      }
      return;
    }
    if (option == "net_name") {
      fail(key, "=" + std::string(value) +
                    " is not modelled yet (stepsim prices NCCL's default network transport)");
      return;
    }
    fail(key,
         " is not an option Megatron-LM's get_nccl_options reads (min_ctas, max_ctas, "
         "cga_cluster_size, net_name, is_high_priority_stream)");
  }

  std::vector<NcclGroupOptions>& out_;
  int group_ = -1;
  std::size_t indent_ = 0;
};

}  // namespace

bool is_megatron_nccl_group(std::string_view name) {
  return std::find(kGroups.begin(), kGroups.end(), name) != kGroups.end();
}

void read_nccl_cfg(std::string_view text, const std::string& file,
                   std::vector<NcclGroupOptions>& out, Errors& errors) {
  Reader reader(file, out, errors);
  reader.read(text);
  // ncclConfig_t: NCCL lowers minCTAs to maxCTAs (init.cc); Megatron passes both through.
  for (NcclGroupOptions& g : out) {
    if (g.min_ctas > 0 && g.max_ctas > 0 && g.min_ctas > g.max_ctas) g.min_ctas = g.max_ctas;
  }
}

}  // namespace stepsim::detail
