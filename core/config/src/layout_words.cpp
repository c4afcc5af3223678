// Short names of the parallel-layout keys and the one-line layout of a job (layout_words.hpp).

#include "stepsim/config/layout_words.hpp"

#include <array>

#include "stepsim/config/enum_names.hpp"

namespace stepsim {
namespace {

constexpr std::array<KeyShortName, 21> kShortNames = {{
    {"training.world_size", "gpus", "w world gpus num_gpus"},
    {"training.tensor_model_parallel_size", "t", "tp tensor_parallel tp_size"},
    {"training.pipeline_model_parallel_size", "p", "pp pipeline_parallel pp_size"},
    {"training.virtual_pipeline_model_parallel_size", "v", "vp vpp virtual_pipeline"},
    {"training.context_parallel_size", "cp", "cp_size context_parallel"},
    {"training.expert_model_parallel_size", "ep", "ep_size expert_parallel"},
    {"training.expert_tensor_parallel_size", "etp", "etp_size expert_tensor_parallel"},
    {"training.data_parallel_size", "dp", "dp_size data_parallel"},
    {"training.micro_batch_size", "mbs", "micro_batch"},
    {"training.num_microbatches", "m", "microbatches"},
    {"training.global_batch_size", "gbs", "global_batch"},
    {"training.sequence_parallel", "sp", "sequence_parallelism"},
    {"training.recompute_granularity", "recompute", "recompute recomputation"},
    {"training.recompute_method", "rc_method", ""},
    {"training.recompute_num_layers", "rc_layers", ""},
    {"training.use_distributed_optimizer", "dopt", "distributed_optimizer zero1"},
    {"training.use_megatron_fsdp", "fsdp", "megatron_fsdp"},
    {"training.use_torch_fsdp2", "fsdp2", "torch_fsdp2"},
    {"training.fp8", "fp8", "fp8_format"},
    {"training.fp8_recipe", "fp8_recipe", ""},
    {"training.moe_token_dispatcher_type", "dispatcher", "dispatcher token_dispatcher"},
}};

std::string_view leaf(std::string_view dotted) {
  const std::size_t dot = dotted.rfind('.');
  return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

bool in_words(std::string_view words, std::string_view word) {
  while (!words.empty()) {
    const std::size_t space = words.find(' ');
    if (words.substr(0, space) == word) return true;
    if (space == std::string_view::npos) break;
    words.remove_prefix(space + 1);
  }
  return false;
}

void add(std::string& out, std::string_view name, std::string_view sep, std::int64_t value) {
  if (!out.empty()) out += ' ';
  out += name;
  out += sep;
  out += std::to_string(value);
}

void add(std::string& out, std::string_view word) {
  if (!out.empty()) out += ' ';
  out += word;
}

}  // namespace

std::span<const KeyShortName> key_short_names() { return kShortNames; }

std::string_view key_header(std::string_view dotted_key) {
  for (const KeyShortName& k : kShortNames) {
    if (k.key == dotted_key) return k.header;
  }
  return leaf(dotted_key);
}

std::string_view key_of_abbreviation(std::string_view word) {
  for (const KeyShortName& k : kShortNames) {
    if (k.header == word || in_words(k.aliases, word)) return k.key;
  }
  return {};
}

bool layout_words_show(std::string_view dotted_key) {
  for (const KeyShortName& k : kShortNames) {
    if (k.key == dotted_key) {
      return k.key != "training.world_size" && k.key != "training.global_batch_size" &&
             k.key != "training.moe_token_dispatcher_type";
    }
  }
  return false;
}

std::string layout_words(const Workload& w, std::string_view sep) {
  const TrainingConfig& t = w.training;
  std::string out;
  out.reserve(96);
  add(out, "t", sep, t.tensor_model_parallel_size);
  add(out, "p", sep, t.pipeline_model_parallel_size);
  add(out, "v", sep, t.virtual_pipeline_model_parallel_size);
  if (t.context_parallel_size > 1) add(out, "cp", sep, t.context_parallel_size);
  if (w.model.moe()) {
    add(out, "ep", sep, t.expert_model_parallel_size);
    add(out, "etp", sep, t.expert_tensor_parallel());
  }
  add(out, "dp", sep, t.data_parallel_size);
  add(out, "mbs", sep, t.micro_batch_size);
  add(out, "m", sep, t.num_microbatches);
  if (t.sequence_parallel) add(out, "sp");
  if (t.recompute_granularity == RecomputeGranularity::kSelective) add(out, "selective");
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    add(out, t.recompute_method == RecomputeMethod::kBlock ? "full-block" : "full-uniform");
    out += std::to_string(t.recompute_num_layers);
  }
  if (t.use_distributed_optimizer) add(out, "dopt");
  if (t.use_megatron_fsdp) add(out, "fsdp");
  if (t.use_torch_fsdp2) add(out, "fsdp2");
  if (t.fp8 != Fp8Format::kNone) {
    add(out, "fp8=");
    out += to_string(t.fp8);
    out += '/';
    out += to_string(t.fp8_recipe);
  }
  if (t.fp4 != Fp4Format::kNone) {
    add(out, "fp4=");
    out += to_string(t.fp4_recipe);
  }
  return out;
}

}  // namespace stepsim
