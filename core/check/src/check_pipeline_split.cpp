// Megatron-LM's rules on how layers are split over pipeline stages: the even split
// (arguments.py validate_args), --decoder-first/last-pipeline-num-layers and
// --account-for-embedding/loss-in-pipeline-split (TransformerConfig.__post_init__ and
// transformer_block.py get_num_layers_to_build), --pipeline-model-parallel-layout
// (arguments.py, TransformerConfig.__post_init__, PipelineParallelLayerLayout.__init__ and
// validate_layer_layout), and how each of them sets the number of virtual stages.

#include <algorithm>

#include "stepsim/layout/pipeline_split.hpp"
#include "check_internal.hpp"
#include "stepsim/layout/hybrid_layout.hpp"

namespace stepsim::detail {

namespace {

constexpr std::string_view kFirst = "training.decoder_first_pipeline_num_layers";
constexpr std::string_view kLast = "training.decoder_last_pipeline_num_layers";
constexpr std::string_view kLayout = "training.pipeline_model_parallel_layout";

/// A layout as a message quotes it (long ones cut).
std::string quoted(const std::string& layout) {
  return "\"" + (layout.size() > 60 ? layout.substr(0, 57) + "..." : layout) + "\"";
}

/// The first/last/account keys given beside a layout, for its message.
std::string other_split_keys(const TrainingConfig& t) {
  std::string out;
  const auto add = [&out](std::string_view key) {
    if (!out.empty()) out += ", ";
    out += key;
  };
  if (t.decoder_first_pipeline_num_layers > 0) add("decoder_first_pipeline_num_layers");
  if (t.decoder_last_pipeline_num_layers > 0) add("decoder_last_pipeline_num_layers");
  if (t.account_for_embedding_in_pipeline_split) add("account_for_embedding_in_pipeline_split");
  if (t.account_for_loss_in_pipeline_split) add("account_for_loss_in_pipeline_split");
  return out;
}

void check_layout(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::string& layout = t.pipeline_model_parallel_layout;
  const std::string key(kLayout);
  const std::string given = "=" + quoted(layout);
  if (const std::string others = other_split_keys(t); !others.empty()) {
    check.fail(key, given + " cannot be given with " + others +
                        ": the layout places every layer itself (Megatron-LM: "
                        "\"pipeline_model_parallel_layout cannot be set with other pipeline "
                        "layout arguments\")");
  }
  if (layout.size() > kMaxLayoutText) {
    check.fail(key, "=\"" + layout.substr(0, 40) + "...\" is longer than " + str(kMaxLayoutText) +
                        " characters (write repetitions as x*n or (...)*n)");
    return;
  }
  const auto parsed = parse_pipeline_layout(layout);
  if (!parsed) {
    for (const Error& e : parsed.errors()) check.fail(key, given + e.message);
    return;
  }
  const std::vector<std::string>& stages = *parsed;
  const std::int64_t p = t.pipeline_model_parallel_size;
  const auto n = static_cast<std::int64_t>(stages.size());
  if (p > 0 && n % p != 0) {
    check.fail(key, given + " has " + str(n) +
                        " stages ('|'-separated), which is not a multiple of "
                        "pipeline_model_parallel_size=" +
                        str(p) + " (its stages are pipeline_model_parallel_size x virtual stages)");
  } else if (p > 0 && t.virtual_pipeline_model_parallel_size != n / p) {
    check.fail(key, given + " has " + str(n) + " stages, " + str(n / p) +
                        " virtual stages per pipeline rank, but "
                        "virtual_pipeline_model_parallel_size=" +
                        str(t.virtual_pipeline_model_parallel_size) +
                        " (the layout sets the virtual stages: leave the key out)");
  }
  std::string flat;
  for (const std::string& s : stages) flat += s;
  const auto count = [&flat](char c) {
    return static_cast<std::int64_t>(std::count(flat.begin(), flat.end(), c));
  };
  if (flat.empty() || flat.front() != 'E') {
    check.fail(key, given +
                        " must begin with the embedding, E (Megatron-LM: \"The first layer "
                        "must be embedding\")");
  } else if (count('E') != 1) {
    check.fail(key, given + " holds E " + str(count('E')) + " times: the embedding is one layer");
  }
  if (flat.empty() || flat.back() != 'L') {
    check.fail(key, given +
                        " must end with the loss, L (Megatron-LM: \"The last layer must be "
                        "loss\")");
  } else if (count('L') != 1) {
    check.fail(key, given + " holds L " + str(count('L')) + " times: the loss is one layer");
  }
  // multi_token_prediction.py get_mtp_num_layers_to_build: the layout places all
  // mtp_num_layers or none; stepsim models them where Megatron puts them without a layout, in
  // the last virtual stage, the one holding the loss.
  const std::int64_t mtp = w.model.mtp_num_layers;
  if (count('m') != mtp) {
    check.fail(key, given + " holds " + str(count('m')) +
                        " multi-token prediction layers (m) but mtp_num_layers=" + str(mtp) +
                        " (Megatron-LM: \"the number of MTP layers to build must match "
                        "mtp_num_layers\")");
  } else if (mtp > 0 && (stages.back().find('L') == std::string::npos ||
                         std::count(stages.back().begin(), stages.back().end(), 'm') != mtp)) {
    check.fail(key, given +
                        " places multi-token prediction layers (m) outside the last stage (the "
                        "one with the loss, L): not modelled yet");
  }
  const std::int64_t layers = w.model.num_layers;
  if (layers > 0 && count('t') != layers) {
    check.fail(key, given + " holds " + str(count('t')) +
                        " transformer layers (t) but num_layers=" + str(layers));
  }
}

void check_first_last(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t first = t.decoder_first_pipeline_num_layers;
  const std::int64_t last = t.decoder_last_pipeline_num_layers;
  const std::string key(first > 0 ? kFirst : kLast);
  const std::string given = "=" + str(first > 0 ? first : last);
  for (const auto& [flag, name] :
       {std::pair{t.account_for_embedding_in_pipeline_split,
                  "account_for_embedding_in_pipeline_split"},
        std::pair{t.account_for_loss_in_pipeline_split, "account_for_loss_in_pipeline_split"}}) {
    if (flag) {
      check.fail(std::string("training.") + name,
                 "=true cannot be combined with decoder_first_pipeline_num_layers or "
                 "decoder_last_pipeline_num_layers (Megatron-LM: \"Does not support standalone "
                 "embedding stage and standalone loss stage with uneven pp\")");
    }
  }
  const std::int64_t p = t.pipeline_model_parallel_size;
  const std::int64_t v = std::max<std::int64_t>(1, t.virtual_pipeline_model_parallel_size);
  const std::int64_t layers = w.model.num_layers;
  if (p <= 0 || layers <= 0) return;
  if (p == 1) {
    check.fail(key, given +
                        " needs pipeline_model_parallel_size > 1 (with one stage the first "
                        "stage is the last one and holds every layer)");
    return;
  }
  if (v > 1) {
    if (first > 0 && first % v != 0) {
      check.fail(std::string(kFirst), "=" + str(first) +
                                          " is not divisible by the virtual stages per pipeline "
                                          "rank (virtual_pipeline_model_parallel_size=" +
                                          str(v) + ")");
    }
    if (last > 0 && last % v != 0) {
      check.fail(std::string(kLast), "=" + str(last) +
                                         " is not divisible by the virtual stages per pipeline "
                                         "rank (virtual_pipeline_model_parallel_size=" +
                                         str(v) + ")");
    }
  }
  if (first > layers || last > layers) {
    check.fail(std::string(first > layers ? kFirst : kLast),
               "=" + str(first > layers ? first : last) + " exceeds num_layers=" + str(layers));
    return;
  }
  const std::int64_t middle_stages = p - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const std::int64_t middle =
      layers - std::max<std::int64_t>(first, 0) - std::max<std::int64_t>(last, 0);
  const std::string split = "num_layers=" + str(layers) + " minus " +
                            (first > 0 ? "decoder_first_pipeline_num_layers=" + str(first) : "") +
                            (first > 0 && last > 0 ? " and " : "") +
                            (last > 0 ? "decoder_last_pipeline_num_layers=" + str(last) : "");
  if (middle < 0) {
    check.fail(key, given + ": " + split + " is negative");
  } else if ((middle != 0) != (middle_stages != 0)) {
    check.fail(key, given + ": " + split + " leaves " + str(middle) + " layers for " +
                        str(middle_stages) +
                        " middle pipeline stages (Megatron-LM: \"Mismatch: middle layers "
                        "remaining but middle PP stages available\")");
  } else if (middle_stages > 0 && middle % middle_stages != 0) {
    check.fail(key, given + ": " + split + " leaves " + str(middle) +
                        " layers, not divisible by the " + str(middle_stages) +
                        " middle pipeline stages");
  } else if (middle_stages > 0 && (middle / middle_stages) % v != 0) {
    check.fail(key, given + ": each of the " + str(middle_stages) +
                        " middle pipeline stages holds " + str(middle / middle_stages) +
                        " layers, not divisible by virtual_pipeline_model_parallel_size=" + str(v));
  }
}

void check_even(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t layers = w.model.num_layers;
  const std::int64_t p = t.pipeline_model_parallel_size;
  const std::int64_t v = t.virtual_pipeline_model_parallel_size;
  if (p <= 0 || layers <= 0) return;
  const bool embedding = t.account_for_embedding_in_pipeline_split;
  const bool loss = t.account_for_loss_in_pipeline_split;
  const std::int64_t counted = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  const std::string counted_text =
      !embedding && !loss ? "num_layers=" + str(layers)
                          : "num_layers=" + str(layers) + (embedding ? " + 1 (embedding)" : "") +
                                (loss ? " + 1 (loss)" : "") + " = " + str(counted);
  if (counted % p != 0) {
    check.fail("training.pipeline_model_parallel_size",
               "=" + str(p) + " does not divide " + counted_text +
                   " (give decoder_first/last_pipeline_num_layers or "
                   "pipeline_model_parallel_layout for uneven stages)");
    return;
  }
  const std::int64_t per_stage = counted / p;
  const std::string per_stage_text =
      " the layers per pipeline stage (" +
      std::string(embedding || loss ? "(" + counted_text + ")" : "num_layers") +
      "/pipeline_model_parallel_size=" + str(per_stage) + ")";
  const std::int64_t per_chunk = t.num_layers_per_virtual_pipeline_stage;
  if (per_chunk > 0 && per_stage % per_chunk != 0) {
    check.fail("training.num_layers_per_virtual_pipeline_stage",
               "=" + str(per_chunk) + " does not divide" + per_stage_text);
    return;
  }
  if (v <= 1) return;
  if (per_stage % v != 0) {
    check.fail("training.virtual_pipeline_model_parallel_size",
               "=" + str(v) + " does not divide" + per_stage_text);
  } else if (t.num_layers_per_virtual_pipeline_stage > 0 &&
             t.num_layers_per_virtual_pipeline_stage != per_stage / v) {
    check.fail("training.num_layers_per_virtual_pipeline_stage",
               "=" + str(t.num_layers_per_virtual_pipeline_stage) +
                   " times virtual_pipeline_model_parallel_size=" + str(v) +
                   " is not the layers per pipeline stage (" + str(per_stage) + ")");
  }
}

}  // namespace

void derive_virtual_stages(Workload& w) {
  TrainingConfig& t = w.training;
  if (hybrid_segments(w.model).size() > 1) return;  // apply_hybrid_defaults set v
  const std::int64_t p = t.pipeline_model_parallel_size;
  if (!t.pipeline_model_parallel_layout.empty()) {
    // The layout's stage count sets v (arguments.py); a conflicting v is reported by
    // check_pipeline_split.
    const auto stages = parse_pipeline_layout(t.pipeline_model_parallel_layout);
    const auto n = stages ? static_cast<std::int64_t>(stages->size()) : 0;
    if (p > 0 && n > 0 && n % p == 0 && t.virtual_pipeline_model_parallel_size <= 1) {
      t.virtual_pipeline_model_parallel_size = n / p;
    }
    return;
  }
  if (t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0) {
    return;  // v as given (num_layers_per_virtual_pipeline_stage is refused with these)
  }
  const std::int64_t counted = w.model.num_layers +
                               (t.account_for_embedding_in_pipeline_split ? 1 : 0) +
                               (t.account_for_loss_in_pipeline_split ? 1 : 0);
  if (w.model.num_layers <= 0 || p <= 0 || counted % p != 0) return;
  const std::int64_t per_stage = counted / p;
  if (t.num_layers_per_virtual_pipeline_stage > 0) {
    if (per_stage % t.num_layers_per_virtual_pipeline_stage != 0) return;  // reported below
    t.virtual_pipeline_model_parallel_size = per_stage / t.num_layers_per_virtual_pipeline_stage;
  } else if (t.virtual_pipeline_model_parallel_size > 0 &&
             per_stage % t.virtual_pipeline_model_parallel_size == 0) {
    t.num_layers_per_virtual_pipeline_stage = per_stage / t.virtual_pipeline_model_parallel_size;
  }
  if (t.virtual_pipeline_model_parallel_size == 1) t.num_layers_per_virtual_pipeline_stage = 0;
}

void check_pipeline_split(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  // A hybrid pattern's '|' segments are the stages (apply_hybrid_defaults checks them).
  if (hybrid_segments(w.model).size() > 1) return;
  if (!t.pipeline_model_parallel_layout.empty()) {
    if (t.num_layers_per_virtual_pipeline_stage > 0) {
      check.fail("training.num_layers_per_virtual_pipeline_stage",
                 "=" + str(t.num_layers_per_virtual_pipeline_stage) +
                     " cannot be given with pipeline_model_parallel_layout, which sets the "
                     "virtual stages (Megatron-LM: no more than one of the two)");
    }
    check_layout(w, check);
    return;
  }
  if (t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0) {
    if (t.num_layers_per_virtual_pipeline_stage > 0) {
      check.fail("training.num_layers_per_virtual_pipeline_stage",
                 "=" + str(t.num_layers_per_virtual_pipeline_stage) +
                     " cannot be used with decoder_first/last_pipeline_num_layers: give "
                     "num_virtual_stages_per_pipeline_rank instead (Megatron-LM: \"please use "
                     "--num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel "
                     "degree when enable uneven pipeline parallelism\")");
    }
    check_first_last(w, check);
    return;
  }
  check_even(w, check);
}

bool pipeline_split_valid(const Workload& w) {
  // pipeline_split() holds a record per pipeline rank and virtual stage (in 32 bits): a
  // hostile virtual_pipeline_model_parallel_size (a fuzzed --num-layers 2888888888884 with
  // --num-layers-per-virtual-pipeline-stage 2) must not get there. Megatron's splits give each
  // chunk a layer at least (a layout string is bounded by its own length), so the chunks are
  // never more than the limits' 16384 layers allow, with room to spare.
  const std::int64_t p = w.training.pipeline_model_parallel_size;
  const std::int64_t v = std::max<std::int64_t>(1, w.training.virtual_pipeline_model_parallel_size);
  std::int64_t chunks = 0;
  if (p <= 0 || __builtin_mul_overflow(p, v, &chunks) || chunks > (std::int64_t{1} << 20)) {
    return false;
  }
  Errors scratch;
  const std::string file;
  Checker quiet{file, scratch};
  check_pipeline_split(w, quiet);
  return scratch.empty() && w.model.num_layers > 0 && w.training.pipeline_model_parallel_size > 0;
}

}  // namespace stepsim::detail
