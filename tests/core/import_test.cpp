// Importers: Megatron-LM launch lines (and their round trip through megatron_args_of) and
// Hugging Face configs, each loaded by the real scenario loader.

#include "stepsim/import/import.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stepsim/ops/flops.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/config/schema.hpp"

namespace stepsim {
namespace {

LoadOptions options() {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return o;
}

Workload load(const std::string& json) {
  auto w = load_scenario_text(json, "imported.json", ".", options());
  if (!w.ok()) ADD_FAILURE() << format_errors(w.errors()) << json;
  return w.ok() ? w.value() : Workload{};
}

const char* kGpt3Line = R"(NCCL_DEBUG=WARN torchrun --nnodes 16 --nproc_per_node=8 \
  pretrain_gpt.py --num-layers 96 --hidden-size 12288 --num-attention-heads 96 \
  --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 \
  --global-batch-size 1536 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 \
  --num-layers-per-virtual-pipeline-stage 4 --sequence-parallel --recompute-activations \
  --use-distributed-optimizer --overlap-grad-reduce --bf16 --use-flash-attn \
  --vocab-file "/data/gpt2 vocab.json" --merge-file gpt2-merges.txt --lr=6.0e-5 \
  --train-iters 500000 --log-interval 10 --data-path 1.0 /data/web)";

TEST(MegatronArgs, LaunchLineToScenario) {
  MegatronImportOptions o;
  o.system = "systems/dgx-a100-80gb.json";
  auto r = scenario_from_megatron_args(kGpt3Line, o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.world_size, 128);  // 16 nodes x 8 from torchrun
  EXPECT_EQ(w.model.num_layers, 96);
  EXPECT_EQ(w.model.vocab_size, 50257);  // GPT-2 BPE from --vocab-file
  EXPECT_EQ(w.model.padded_vocab_size, 51200);
  EXPECT_EQ(w.training.tensor_model_parallel_size, 8);
  EXPECT_EQ(w.training.virtual_pipeline_model_parallel_size, 3);
  EXPECT_TRUE(w.training.sequence_parallel);
  EXPECT_EQ(w.training.recompute_granularity, RecomputeGranularity::kSelective);
  EXPECT_TRUE(w.training.use_distributed_optimizer);
  EXPECT_TRUE(w.training.overlap_grad_reduce);
  EXPECT_TRUE(w.model.use_flash_attn);
  EXPECT_EQ(w.training.params_dtype, DType::kBf16);
  const std::vector<std::string> ignored{"--merge-file",   "--lr",        "--train-iters",
                                         "--log-interval", "--data-path", "NCCL_DEBUG=WARN"};
  EXPECT_EQ(r->ignored_flags, ignored);
  EXPECT_FALSE(r->notes.empty());
}

// The environment a launch line sets: Transformer Engine's norm SM margins become scenario
// keys (and megatron_args_of writes them back as assignments), the attention variables must
// agree with the attention backend as Megatron-Core asserts, and a Transformer Engine or NCCL
// setting stepsim does not model is refused like a flag.
TEST(MegatronArgs, EnvironmentOfTheLaunchLine) {
  const std::string flags =
      " torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 32000";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      "NVTE_FWD_LAYERNORM_SM_MARGIN=16 "
      "NVTE_BWD_LAYERNORM_SM_MARGIN=20 "
      "CUDA_DEVICE_MAX_CONNECTIONS=1 PYTHONPATH=/m" +
          flags,
      o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.fwd_layernorm_sm_margin, 16);
  EXPECT_EQ(w.training.bwd_layernorm_sm_margin, 20);
  EXPECT_EQ(r->ignored_flags,
            (std::vector<std::string>{"CUDA_DEVICE_MAX_CONNECTIONS=1", "PYTHONPATH=/m"}));
  const std::string back = megatron_args_of(w);
  EXPECT_TRUE(back.starts_with(
      "NVTE_FWD_LAYERNORM_SM_MARGIN=16 NVTE_BWD_LAYERNORM_SM_MARGIN=20 --num-layers 4"))
      << back;
  o.world_size = 8;
  auto again = scenario_from_megatron_args(back, o);
  ASSERT_TRUE(again.ok()) << format_errors(again.errors());
  EXPECT_EQ(load(again->scenario_json).training, w.training);

  // attention_backend auto: Megatron-Core wants all three variables at 1.
  const auto error_of = [&](const std::string& line) {
    auto bad = scenario_from_megatron_args(line, o);
    return bad.ok() ? std::string() : format_errors(bad.errors());
  };
  std::string e = error_of("NVTE_FUSED_ATTN=0" + flags);
  EXPECT_NE(e.find("NVTE_FUSED_ATTN=0 contradicts attention_backend=auto: Megatron-Core expects "
                   "NVTE_FUSED_ATTN=1"),
            std::string::npos)
      << e;
  EXPECT_EQ(error_of("NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=1 NVTE_UNFUSED_ATTN=0" + flags +
                     " --attention-backend fused"),
            "");
  EXPECT_NE(error_of("NVTE_FLASH_ATTN=1" + flags + " --attention-backend fused")
                .find("NVTE_FLASH_ATTN=1 contradicts attention_backend=fused"),
            std::string::npos);
  // Settings that change the job and are not modelled.
  e = error_of("NVTE_UB_ATOMIC_GEMM_RS=1 NCCL_CROSS_NIC=1 CUDA_DEVICE_MAX_CONNECTIONS=8" + flags);
  for (const char* word : {"NVTE_UB_ATOMIC_GEMM_RS=1 is a Transformer Engine setting",
                           "NCCL_CROSS_NIC=1 changes how "
                           "NCCL runs collectives",
                           "CUDA_DEVICE_MAX_CONNECTIONS=8"}) {
    EXPECT_NE(e.find(word), std::string::npos) << word << "\n" << e;
  }
  EXPECT_NE(error_of("NVTE_FWD_LAYERNORM_SM_MARGIN=-2" + flags)
                .find("NVTE_FWD_LAYERNORM_SM_MARGIN=-2 must be an integer >= 0"),
            std::string::npos);
  o.allow_unmodelled = true;
  auto allowed = scenario_from_megatron_args("NCCL_CROSS_NIC=1" + flags, o);
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->unmodelled, std::vector<std::string>{"NCCL_CROSS_NIC=1"});
}

// --tp-only-amax-red (MLPerf's GPT-3 175B on NeMo sets tp_only_amax_red) loads as its key,
// and megatron_args_of writes it back.
TEST(MegatronArgs, TpOnlyAmaxReductionLoadsAndRoundTrips) {
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      "torchrun --nproc_per_node=8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
      "--vocab-size 32000 --tensor-model-parallel-size 4 --micro-batch-size 1 "
      "--global-batch-size 8 --bf16 --fp8-format hybrid --tp-only-amax-red",
      o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_TRUE(w.training.tp_only_amax_red);
  EXPECT_NE(megatron_args_of(w).find("--tp-only-amax-red"), std::string::npos);
}

// The flex dispatcher's flags: the deprecated --moe-enable-deepep and --moe-deepep-num-sms
// load (TransformerConfig routes them to the deepep backend and moe_flex_dispatcher_num_sms),
// and megatron_args_of writes the current flags back.
TEST(MegatronArgs, FlexDispatcherWithDeepEp) {
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      "torchrun --nproc_per_node=8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
      "--vocab-size 32000 --num-experts 8 --expert-model-parallel-size 8 "
      "--moe-token-dispatcher-type flex --moe-enable-deepep --moe-deepep-num-sms 24 "
      "--micro-batch-size 1 --global-batch-size 8 --bf16",
      o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.moe_token_dispatcher_type, MoeDispatcher::kFlex);
  EXPECT_EQ(w.training.moe_flex_dispatcher_backend, MoeFlexBackend::kDeepEp);
  EXPECT_TRUE(w.training.moe_enable_deepep);
  EXPECT_EQ(w.training.deepep_num_sms(), 24);
  const std::string back = megatron_args_of(w);
  EXPECT_NE(back.find("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep "
                      "--moe-flex-dispatcher-num-sms 24"),
            std::string::npos)
      << back;
  // HybridEP is refused by name.
  auto hybrid = scenario_from_megatron_args(
      "torchrun --nproc_per_node=8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
      "--vocab-size 32000 --num-experts 8 --expert-model-parallel-size 8 "
      "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
      "--micro-batch-size 1 --global-batch-size 8 --bf16",
      o);
  if (hybrid.ok()) {
    auto loaded = load_scenario_text(hybrid->scenario_json, "imported.json", ".", options());
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(format_errors(loaded.errors()).find("moe_flex_dispatcher_backend"),
              std::string::npos);
  } else {
    EXPECT_NE(format_errors(hybrid.errors()).find("moe_flex_dispatcher_backend"),
              std::string::npos);
  }
}

// --context-parallel-size and --cp-comm-type (nargs='+': one type, or one per layer) map
// onto the schema's keys; per-layer types that differ are not modelled.
TEST(MegatronArgs, ContextParallelFlags) {
  const std::string base =
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 "
      "--num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
      "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --context-parallel-size 4 ";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(base + "--cp-comm-type a2a", o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.context_parallel_size, 4);
  EXPECT_EQ(w.training.cp_comm_type, CpCommType::kA2a);
  EXPECT_EQ(w.training.data_parallel_size, 1) << "8 GPUs = t 2 x cp 4";
  auto same = scenario_from_megatron_args(base + "--cp-comm-type allgather allgather", o);
  ASSERT_TRUE(same.ok()) << format_errors(same.errors());
  EXPECT_EQ(load(same->scenario_json).training.cp_comm_type, CpCommType::kAllGather);
  auto mixed = scenario_from_megatron_args(base + "--cp-comm-type p2p a2a", o);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(format_errors(mixed.errors()).find("--cp-comm-type (one type per layer)"),
            std::string::npos)
      << format_errors(mixed.errors());
}

// --hierarchical-context-parallel-sizes (nargs='+', type=int) with --cp-comm-type a2a+p2p.
TEST(MegatronArgs, HierarchicalContextParallelSizes) {
  const std::string base =
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 "
      "--num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
      "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --context-parallel-size 4 ";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      base + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2", o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.cp_comm_type, CpCommType::kA2aP2p);
  EXPECT_EQ(w.training.hierarchical_context_parallel_sizes, (std::vector<std::int64_t>{2, 2}));
  auto bad = scenario_from_megatron_args(
      base + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 x", o);
  ASSERT_FALSE(bad.ok());
  const std::string message = format_errors(bad.errors());
  EXPECT_NE(message.find("--hierarchical-context-parallel-sizes=x must be an integer"),
            std::string::npos)
      << message;
}

TEST(MegatronArgs, MuonAndCudaGraphsImportAndRoundTrip) {
  const std::string base =
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 "
      "--num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
      "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 ";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      base + "--optimizer muon --muon-tp-mode distributed --muon-num-ns-steps 6 "
             "--muon-nesterov --muon-momentum 0.9 --cuda-graph-impl transformer_engine "
             "--cuda-graph-modules attn mlp --cuda-graph-warmup-steps 2",
      o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.optimizer, OptimizerKind::kMuon);
  EXPECT_EQ(w.training.muon_tp_mode, MuonTpMode::kDistributed);
  EXPECT_EQ(w.training.muon_num_ns_steps, 6);
  EXPECT_TRUE(w.training.muon_nesterov);
  EXPECT_EQ(w.training.cuda_graph_impl, CudaGraphImpl::kTransformerEngine);
  EXPECT_EQ(w.training.cuda_graph_modules, "attn mlp");
  EXPECT_EQ(w.training.cuda_graph_warmup_steps, 2);
  // And back: the launch line megatron_args_of writes imports to the same job.
  o.world_size = 8;
  auto again = scenario_from_megatron_args(megatron_args_of(w), o);
  ASSERT_TRUE(again.ok()) << format_errors(again.errors());
  EXPECT_EQ(load(again->scenario_json).training, w.training);
  // The deprecated spelling: --enable-cuda-graph is "local".
  auto local = scenario_from_megatron_args(base + "--enable-cuda-graph", o);
  ASSERT_TRUE(local.ok()) << format_errors(local.errors());
  EXPECT_EQ(load(local->scenario_json).training.cuda_graph_impl, CudaGraphImpl::kLocal);
  // A Muon option that changes the job and is not modelled is refused naming it.
  auto syrk = scenario_from_megatron_args(base + "--optimizer muon --muon-use-syrk", o);
  ASSERT_FALSE(syrk.ok());
  EXPECT_NE(format_errors(syrk.errors()).find("--muon-use-syrk"), std::string::npos);
}

// A flag that changes the job and is not modelled is an error naming it; so is a flag stepsim
// does not know. --allow-unmodelled keeps going and lists them in the scenario.
TEST(MegatronArgs, UnmodelledFlagsAreErrorsUnlessAllowed) {
  const std::string line =
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 "
      "--num-attention-heads 4 --seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
      "--vocab-size 1000 --fp4-format nvfp4 --num-distributed-optimizer-instances 1 --lr 1e-4 "
      "--frobnicate 3 --bf16";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(line, o);
  ASSERT_FALSE(r.ok());
  const std::string errors = format_errors(r.errors());
  EXPECT_NE(errors.find("--fp4-format nvfp4 changes the job and stepsim does not model it yet"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("--frobnicate 3 is not a Megatron-LM flag stepsim knows"),
            std::string::npos)
      << errors;
  // --num-distributed-optimizer-instances 1 is the default
  EXPECT_EQ(r.errors().size(), 2u) << errors;
  o.allow_unmodelled = true;
  auto allowed = scenario_from_megatron_args(line, o);
  ASSERT_TRUE(allowed.ok()) << format_errors(allowed.errors());
  EXPECT_EQ(allowed->unmodelled,
            (std::vector<std::string>{"--fp4-format nvfp4", "--frobnicate 3"}));
  const Workload w = load(allowed->scenario_json);
  EXPECT_EQ(w.unmodelled, allowed->unmodelled);
  EXPECT_EQ(allowed->ignored_flags,
            (std::vector<std::string>{"--num-distributed-optimizer-instances", "--lr"}));
  // No --attention-backend: Megatron-Core's default, auto (a fused attention kernel).
  EXPECT_EQ(w.model.attention_backend, AttentionBackend::kAuto);
  EXPECT_TRUE(w.model.fused_attention());
}

TEST(MegatronArgs, MisspelledFlagSuggestsTheNearestKnownFlag) {
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  const std::string head =
      "pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 "
      "--seq-length 128 --micro-batch-size 1 --global-batch-size 8 --vocab-size 1000 --bf16 ";
  auto r = scenario_from_megatron_args(head + "--tensor-model-paralel-size 8", o);
  ASSERT_FALSE(r.ok());
  std::string errors = format_errors(r.errors());
  EXPECT_NE(errors.find("--tensor-model-paralel-size 8 is not a Megatron-LM flag stepsim knows, "
                        "so it may change the job; did you mean --tensor-model-parallel-size?"),
            std::string::npos)
      << errors;
  // A not-modelled flag's spelling and a special flag's are suggested too.
  r = scenario_from_megatron_args(head + "--fp4-formt nvfp4 --num-query-grups 2", o);
  ASSERT_FALSE(r.ok());
  errors = format_errors(r.errors());
  EXPECT_NE(errors.find("did you mean --fp4-format?"), std::string::npos) << errors;
  EXPECT_NE(errors.find("did you mean --num-query-groups?"), std::string::npos) << errors;
  // Nothing close: no guess.
  r = scenario_from_megatron_args(head + "--frobnicate 3", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(format_errors(r.errors()).find("did you mean"), std::string::npos);
}

TEST(MegatronArgs, OtherTrainingScriptsAreNotModelled) {
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_t5.py --num-layers 4 --hidden-size 256 "
      "--num-attention-heads 4 --seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
      "--vocab-size 1000",
      o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().key, "pretrain_t5.py");
}

// Megatron turns sequence parallelism off with t = 1 and P2P overlap off without interleaving,
// silently; stepsim does the same and says so.
TEST(MegatronArgs, MegatronsSilentAdjustmentsAreNoted) {
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 "
      "--num-attention-heads 4 --seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
      "--vocab-size 1000 --sequence-parallel --overlap-p2p-communication "
      "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2",
      o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_FALSE(w.training.sequence_parallel);
  EXPECT_FALSE(w.training.overlap_p2p_comm);
  ASSERT_EQ(w.notes.size(), 2u);
  EXPECT_NE(w.notes[0].find("sequence_parallel=true turned off"), std::string::npos);
  EXPECT_NE(w.notes[1].find("overlap_p2p_comm=true turned off"), std::string::npos);
}

TEST(MegatronArgs, GroupedQueryAttentionAndOptions) {
  MegatronImportOptions o;
  o.world_size = 8;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(
      "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --group-query-attention "
      "--num-query-groups 8 --ffn-hidden-size 14336 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights "
      "--seq-length 8192 --micro-batch-size 1 --global-batch-size 128 --vocab-size 128256 "
      "--tensor-model-parallel-size 2 --recompute-granularity full --recompute-method block "
      "--recompute-num-layers 4",
      o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_TRUE(r->ignored_flags.empty());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.model.num_query_groups, 8);
  EXPECT_TRUE(w.model.swiglu);
  EXPECT_FALSE(w.model.add_bias_linear);
  EXPECT_EQ(w.model.normalization, Normalization::kRmsNorm);
  EXPECT_EQ(w.model.position_embedding_type, PositionEmbedding::kRope);
  EXPECT_EQ(w.training.recompute_method, RecomputeMethod::kBlock);
  EXPECT_EQ(w.training.recompute_num_layers, 4);
  EXPECT_EQ(w.training.params_dtype, DType::kFp32);
}

// Nemotron-4's flags (NeMo's NemotronConfig: squared ReLU, RoPE on half of each head, no
// biases) are read, and written back by megatron_args_of.
TEST(MegatronArgs, SquaredReluAndRotaryPercent) {
  MegatronImportOptions o;
  o.world_size = 8;
  o.system = "systems/dgx-h100-80gb.json";
  const std::string line =
      "--num-layers 32 --hidden-size 6144 --num-attention-heads 48 --group-query-attention "
      "--num-query-groups 8 --ffn-hidden-size 24576 --squared-relu --disable-bias-linear "
      "--position-embedding-type rope --rotary-percent 0.5 --seq-length 4096 "
      "--max-position-embeddings 4096 --vocab-size 256000 --micro-batch-size 2 "
      "--global-batch-size 16 --tensor-model-parallel-size 2 --sequence-parallel --bf16";
  auto r = scenario_from_megatron_args(line, o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_TRUE(r->ignored_flags.empty());
  const Workload w = load(r->scenario_json);
  EXPECT_TRUE(w.model.squared_relu);
  EXPECT_FALSE(w.model.swiglu);
  EXPECT_EQ(w.model.rotary_percent, 0.5);
  const std::string back = megatron_args_of(w);
  EXPECT_NE(back.find("--squared-relu"), std::string::npos) << back;
  EXPECT_NE(back.find("--rotary-percent 0.5"), std::string::npos) << back;
  // Megatron's own checks: --squared-relu with --swiglu, or with linear biases, is refused.
  auto both = scenario_from_megatron_args(line + " --swiglu", o);
  ASSERT_TRUE(both.ok()) << format_errors(both.errors());
  auto loaded = load_scenario_text(both->scenario_json, "s.json", ".", options());
  ASSERT_FALSE(loaded.ok());
  bool named = false;
  for (const Error& e : loaded.errors()) named = named || e.key == "model.squared_relu";
  EXPECT_TRUE(named) << format_errors(loaded.errors());
}

TEST(MegatronArgs, MissingFactsAreErrorsNamingTheFlag) {
  auto r = scenario_from_megatron_args("--num-layers x --tokenizer-type Llama2Tokenizer", {});
  ASSERT_FALSE(r.ok());
  std::vector<std::string> keys;
  for (const Error& e : r.errors()) {
    EXPECT_EQ(e.file, "--megatron-args");
    keys.push_back(e.key);
  }
  const std::vector<std::string> expected{"--num-layers", "--vocab-size", "--world-size",
                                          "--system"};
  EXPECT_EQ(keys, expected);
  EXPECT_FALSE(
      scenario_from_megatron_args("--group-query-attention --vocab-size 10", {8, "s.json", "x"})
          .ok());
}

TEST(MegatronArgs, EveryShippedScenarioRoundTrips) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(STEPSIM_SCENARIOS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    auto original = load_scenario_file(entry.path().string(), options());
    ASSERT_TRUE(original.ok()) << entry.path();
    std::ifstream in(entry.path());
    const nlohmann::json doc = nlohmann::json::parse(in);
    MegatronImportOptions o;
    o.world_size = original->training.world_size;
    o.system = doc["system"].get<std::string>();
    const std::string line = megatron_args_of(*original);
    auto imported = scenario_from_megatron_args(line, o);
    ASSERT_TRUE(imported.ok()) << line;
    EXPECT_TRUE(imported->ignored_flags.empty()) << line;
    Workload back = load(imported->scenario_json);
    Workload want = *original;
    if (want.training.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam) {
      // NeMo's optimizer (NVIDIA's MLPerf GPT-3 job) is no Megatron-LM argument: the line
      // launches Megatron-Core's distributed optimizer, all else the same.
      EXPECT_EQ(back.training.optimizer_impl, OptimizerImpl::kMegatron);
      want.training.optimizer_impl = OptimizerImpl::kMegatron;
      want.training.apex_bucket_cap_mb = back.training.apex_bucket_cap_mb;
    }
    if (want.model.vocab_size == 0) {
      // Only the padded size was given: it comes back as an unpadded size padded by 1.
      back.model.vocab_size = 0;
      back.model.make_vocab_size_divisible_by = want.model.make_vocab_size_divisible_by;
    }
    EXPECT_EQ(back.model, want.model) << entry.path() << "\n" << line;
    EXPECT_EQ(back.training, want.training) << entry.path() << "\n" << line;
    EXPECT_EQ(back.system, want.system);
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

std::string with_training(const std::string& model_json) {
  nlohmann::json doc = nlohmann::json::parse(model_json);
  doc["name"] = "hf";
  doc["training"] = {{"world_size", 8}, {"micro_batch_size", 1}, {"global_batch_size", 8}};
  doc["system"] = "systems/dgx-h100-80gb.json";
  return doc.dump();
}

TEST(ImportHf, Llama) {
  auto r = model_from_hf_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
      "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false,
      "hidden_act": "silu", "rope_scaling": null})",
                                "config.json", 4096);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(with_training(r->model_json));
  EXPECT_EQ(w.model.num_layers, 32);
  EXPECT_EQ(w.model.num_query_groups, 8);
  EXPECT_EQ(w.model.ffn_hidden_size, 14336);
  EXPECT_EQ(w.model.seq_length, 4096);
  EXPECT_EQ(w.model.max_position_embeddings, 8192);
  EXPECT_EQ(w.model.vocab_size, 128256);
  EXPECT_TRUE(w.model.swiglu);
  EXPECT_TRUE(w.model.untie_embeddings_and_output_weights);
  EXPECT_FALSE(w.model.add_bias_linear);
  EXPECT_EQ(w.model.normalization, Normalization::kRmsNorm);
  EXPECT_EQ(w.model.position_embedding_type, PositionEmbedding::kRope);
}

TEST(ImportHf, MistralNotesSlidingWindow) {
  auto r = model_from_hf_config(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768,
      "rms_norm_eps": 1e-05, "sliding_window": 4096, "head_dim": 128})",
                                "config.json");
  ASSERT_TRUE(r.ok());
  const Workload w = load(with_training(r->model_json));
  EXPECT_EQ(w.model.kv_channels, 128);
  bool noted = false;
  for (const std::string& n : r->notes) noted = noted || n.starts_with("sliding_window");
  EXPECT_TRUE(noted);
}

TEST(ImportHf, Gpt2AndNeoX) {
  auto gpt2 = model_from_hf_config(R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768,
      "n_layer": 12, "n_head": 12, "n_inner": null, "n_positions": 1024, "vocab_size": 50257,
      "layer_norm_epsilon": 1e-05, "activation_function": "gelu_new"})",
                                   "gpt2.json");
  ASSERT_TRUE(gpt2.ok());
  const Workload g = load(with_training(gpt2->model_json));
  EXPECT_EQ(g.model.ffn_hidden_size, 4 * 768);
  EXPECT_FALSE(g.model.untie_embeddings_and_output_weights);
  EXPECT_TRUE(g.model.add_bias_linear);
  EXPECT_EQ(g.model.position_embedding_type, PositionEmbedding::kLearnedAbsolute);
  EXPECT_EQ(g.model.normalization, Normalization::kLayerNorm);
  auto neox = model_from_hf_config(R"({"architectures": ["GPTNeoXForCausalLM"],
      "hidden_size": 6144, "num_hidden_layers": 44, "num_attention_heads": 64,
      "intermediate_size": 24576, "vocab_size": 50432, "max_position_embeddings": 2048,
      "rotary_pct": 0.25, "use_parallel_residual": true, "layer_norm_eps": 1e-05})",
                                   "neox.json");
  ASSERT_TRUE(neox.ok());
  const Workload n = load(with_training(neox->model_json));
  EXPECT_EQ(n.model.position_embedding_type, PositionEmbedding::kRope);
  EXPECT_TRUE(n.model.untie_embeddings_and_output_weights);
  EXPECT_EQ(n.model.rotary_percent, 0.25);  // rotary_pct: Megatron's --rotary-percent
  // seq_length, attention_backend, use_parallel_residual
  EXPECT_EQ(neox->notes.size(), 3u);
}

// transformers' NemotronConfig (Nemotron-4 15B's defaults: hidden_act relu2,
// partial_rotary_factor 0.5, no biases, untied) with Nemotron-4 15B's 8 KV heads: squared ReLU,
// half-head RoPE, LayerNorm, and Parmar et al. 2024's (arXiv:2402.16819) 15.6B parameters, 3.2B
// of them embeddings.
TEST(ImportHf, NemotronSquaredReluAndPartialRotary) {
  auto r = model_from_hf_config(R"({"architectures": ["NemotronForCausalLM"],
      "model_type": "nemotron", "hidden_size": 6144, "intermediate_size": 24576,
      "num_hidden_layers": 32, "num_attention_heads": 48, "num_key_value_heads": 8,
      "max_position_embeddings": 4096, "norm_eps": 1e-05, "vocab_size": 256000})",
                                "nemotron.json");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(with_training(r->model_json));
  EXPECT_TRUE(w.model.squared_relu);
  EXPECT_FALSE(w.model.swiglu);
  EXPECT_EQ(w.model.rotary_percent, 0.5);
  EXPECT_EQ(w.model.ffn_hidden_size, 24576);
  EXPECT_EQ(w.model.num_query_groups, 8);
  EXPECT_EQ(w.model.normalization, Normalization::kLayerNorm);
  EXPECT_FALSE(w.model.add_bias_linear);
  EXPECT_TRUE(w.model.untie_embeddings_and_output_weights);
  EXPECT_NEAR(static_cast<double>(count_parameters(w.model)), 15.6e9, 0.05e9);
  // A GeLU Nemotron is costed as a GeLU MLP, with a note; a non-number factor is an error.
  auto gelu = model_from_hf_config(R"({"architectures": ["NemotronForCausalLM"],
      "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "max_position_embeddings": 128, "vocab_size": 1000,
      "hidden_act": "gelu", "partial_rotary_factor": 1.0})",
                                   "gelu.json");
  ASSERT_TRUE(gelu.ok());
  const Workload g = load(with_training(gelu->model_json));
  EXPECT_FALSE(g.model.squared_relu);
  EXPECT_EQ(g.model.rotary_percent, 1.0);
  auto bad = model_from_hf_config(R"({"architectures": ["NemotronForCausalLM"],
      "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "max_position_embeddings": 128, "vocab_size": 1000,
      "partial_rotary_factor": "half"})",
                                  "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors()[0].key, "partial_rotary_factor");
}

TEST(ImportHf, ErrorsNameTheKey) {
  auto unsupported = model_from_hf_config(R"({"architectures": ["MambaForCausalLM"]})", "c.json");
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.errors().front().key, "architectures");
  auto missing = model_from_hf_config(R"({"model_type": "llama", "hidden_size": -1})", "c.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.errors().front().key, "hidden_size");
  EXPECT_GE(missing.errors().size(), 4u);
  EXPECT_FALSE(model_from_hf_config("not json", "c.json").ok());
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// Issue 41: a word after the training script that is not a flag was skipped without a word,
// so an em dash pasted from a web page (—bf16) predicted an fp32 job.
MegatronImportOptions launch_options() {
  MegatronImportOptions o;
  o.system = "systems/dgx-a100-80gb.json";
  o.world_size = 8;
  return o;
}
const std::string kSmallLine =
    "pretrain_gpt.py --num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 256 "
    "--max-position-embeddings 256 --micro-batch-size 1 --global-batch-size 8 --vocab-size 1000 ";

bool refuses(const std::string& line, const std::string& word, const std::string& phrase) {
  auto r = scenario_from_megatron_args(line, launch_options());
  if (r.ok()) return false;
  for (const Error& e : r.errors()) {
    if (e.file == "--megatron-args" && e.key == word &&
        e.message.find(phrase) != std::string::npos) {
      return true;
    }
  }
  ADD_FAILURE() << format_errors(r.errors());
  return false;
}

TEST(MegatronArgs, DashLookalikesAreRefusedNamingTheWord) {
  EXPECT_TRUE(refuses(kSmallLine + "\u2014bf16", "\u2014bf16", "an em dash (U+2014)"));
  EXPECT_TRUE(refuses(kSmallLine + "\u2014bf16", "\u2014bf16", "did you mean --bf16?"));
  EXPECT_TRUE(refuses(kSmallLine + "\u2013\u2013swiglu", "\u2013\u2013swiglu",
                      "an en dash (U+2013)"));
  EXPECT_TRUE(refuses(kSmallLine + "\u2212\u2212bf16", "\u2212\u2212bf16",
                      "a minus sign (U+2212)"));
  EXPECT_TRUE(refuses(kSmallLine + "-bf16", "-bf16", "one hyphen"));
  // The mangled flag is no value of the flag before it either.
  EXPECT_TRUE(refuses(kSmallLine + "--tensor-model-parallel-size \u20142", "\u20142",
                      "an em dash"));
  EXPECT_TRUE(refuses(kSmallLine + "--log-interval 10 \u2014bf16", "\u2014bf16", "em dash"));
  EXPECT_TRUE(refuses(kSmallLine + "\u201C--bf16\u201D", "\u201C--bf16\u201D",
                      "a left double quotation mark (U+201C)"));
}

TEST(MegatronArgs, StrayWordsAreRefusedButValuesAndTheShellsAreNot) {
  EXPECT_TRUE(refuses(kSmallLine + "--bf16 swiglu", "swiglu", "did you mean --swiglu?"));
  EXPECT_TRUE(refuses(kSmallLine + "--num-layers 8 9", "9", "neither a flag nor the value"));
  // Legitimate: values of flags outside the schema (several, as --data-path takes), negative
  // numbers, the program and launcher, the environment, and the shell's own words.
  const std::string ok_lines[] = {
      kSmallLine + "--data-path 0.3 /data/a 0.7 /data/b --bf16",
      kSmallLine + "--lr -1e-4 --bf16",
      "NVTE_FWD_LAYERNORM_SM_MARGIN=8 python -u " + kSmallLine + "--bf16",
      "CUDA_DEVICE_MAX_CONNECTIONS=1 " + kSmallLine.substr(kSmallLine.find("--")) + "--bf16",
      kSmallLine + "--bf16 2>&1 | tee train.log",
      kSmallLine + "--bf16 > train.log",
  };
  for (const std::string& line : ok_lines) {
    auto r = scenario_from_megatron_args(line, launch_options());
    ASSERT_TRUE(r.ok()) << line << "\n" << format_errors(r.errors());
    EXPECT_EQ(load(r->scenario_json).training.params_dtype, DType::kBf16) << line;
  }
}

// Issue 41: import-hf wrote a model section that `check` refuses (n_head 7, n_embd 768).
TEST(ImportHf, RunsChecksRulesBeforeSucceeding) {
  const std::string config = R"({"architectures": ["GPT2LMHeadModel"], "n_layer": 2,
    "n_embd": 768, "n_head": 7, "n_positions": 1024, "vocab_size": 50257})";
  auto r = model_from_hf_config(config, "gpt2.json");
  ASSERT_FALSE(r.ok());
  bool named = false;
  for (const Error& e : r.errors()) {
    named = named || (e.file == "gpt2.json" && e.key == "model.hidden_size" &&
                      e.message.find("divisible by num_attention_heads") != std::string::npos);
  }
  EXPECT_TRUE(named) << format_errors(r.errors());
}

}  // namespace
}  // namespace stepsim
