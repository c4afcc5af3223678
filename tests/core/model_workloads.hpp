#pragma once
// Workloads built directly in code for the decomposition, FLOPs and memory tests (the
// scenario loader is tested on its own). Shapes are the published ones.

#include <cstdint>

#include "stepsim/config/scenario.hpp"

namespace stepsim::testing {

inline SystemConfig dgx_like_system() {
  SystemConfig s;
  s.name = "test-dgx";
  s.peak_flops_bf16 = 312e12;
  s.peak_flops_fp16 = 312e12;
  s.peak_flops_fp32 = 156e12;
  s.memory_bytes = std::int64_t{80} << 30;
  s.hbm_bandwidth_bytes_per_s = 2.0e12;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.intra_node = {300e9, 3e-6};
  s.inter_node = {25e9, 5e-6};
  s.efficiency = {1.0, 0.0, 1.0, 0.0, 1.0};
  return s;
}

/// GPT-3 175B (Brown et al. 2020): 96 layers, h 12288, 96 heads, s 2048, V 51200.
inline ModelConfig gpt3_175b() {
  ModelConfig m;
  m.num_layers = 96;
  m.hidden_size = 12288;
  m.num_attention_heads = 96;
  m.num_query_groups = 96;
  m.kv_channels = 128;
  m.ffn_hidden_size = 4 * 12288;
  m.seq_length = 2048;
  m.max_position_embeddings = 2048;
  m.vocab_size = 50257;
  m.padded_vocab_size = 51200;
  return m;
}

/// Llama-2 70B (Touvron et al. 2023): GQA with 8 groups, SwiGLU, RMSNorm, RoPE, untied.
inline ModelConfig llama2_70b() {
  ModelConfig m;
  m.num_layers = 80;
  m.hidden_size = 8192;
  m.num_attention_heads = 64;
  m.num_query_groups = 8;
  m.kv_channels = 128;
  m.ffn_hidden_size = 28672;
  m.seq_length = 4096;
  m.max_position_embeddings = 4096;
  m.vocab_size = 32000;
  m.padded_vocab_size = 32000;
  m.swiglu = true;
  m.untie_embeddings_and_output_weights = true;
  m.add_bias_linear = false;
  m.position_embedding_type = PositionEmbedding::kRope;
  m.normalization = Normalization::kRmsNorm;
  return m;
}

/// Llama-3 (Meta 2024) 8B and 70B: vocabulary 128256, GQA with 8 groups.
inline ModelConfig llama3(std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                          std::int64_t ffn) {
  ModelConfig m = llama2_70b();
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_attention_heads = heads;
  m.num_query_groups = 8;
  m.kv_channels = hidden / heads;
  m.ffn_hidden_size = ffn;
  m.seq_length = 8192;
  m.max_position_embeddings = 8192;
  m.vocab_size = 128256;
  m.padded_vocab_size = 128256;
  return m;
}

/// CodeGeeX 13B (Zheng et al. 2023): 39 layers plus a top query layer of the same size,
/// h 5120, 40 heads, f 20480, vocabulary 52224, learned positions.
inline ModelConfig codegeex_13b() {
  ModelConfig m;
  m.num_layers = 40;
  m.hidden_size = 5120;
  m.num_attention_heads = 40;
  m.num_query_groups = 40;
  m.kv_channels = 128;
  m.ffn_hidden_size = 20480;
  m.seq_length = 2048;
  m.max_position_embeddings = 2048;
  m.vocab_size = 52224;
  m.padded_vocab_size = 52224;
  return m;
}

/// A workload with derived fields set as the loader sets them.
inline Workload make_workload(const ModelConfig& model, std::int64_t t, std::int64_t p,
                              std::int64_t dp, std::int64_t micro_batch,
                              std::int64_t microbatches, std::int64_t v = 1) {
  Workload w;
  w.name = "test";
  w.model = model;
  TrainingConfig& tc = w.training;
  tc.tensor_model_parallel_size = t;
  tc.pipeline_model_parallel_size = p;
  tc.virtual_pipeline_model_parallel_size = v;
  tc.num_layers_per_virtual_pipeline_stage = v > 1 ? model.num_layers / (p * v) : 0;
  tc.data_parallel_size = dp;
  tc.world_size = t * p * dp;
  tc.micro_batch_size = micro_batch;
  tc.num_microbatches = microbatches;
  tc.global_batch_size = micro_batch * microbatches * dp;
  tc.microbatch_group_size_per_vp_stage = p;
  tc.params_dtype = DType::kBf16;
  tc.overlap_p2p_comm = v > 1;
  w.system = dgx_like_system();
  return w;
}

}  // namespace stepsim::testing
