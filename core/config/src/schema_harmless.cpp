// Megatron-LM's flags that leave a step's time and memory alone, by class, with why (see
// megatron_flags.hpp). A launch line carrying one imports with a quiet note naming it.
// Classified from the pinned Megatron-LM (core/config/data/megatron-arguments.txt): where a
// flag adds work to every step or changes a kernel, it is in the not-modelled table instead.

#include <algorithm>

#include "stepsim/config/megatron_flags.hpp"

namespace stepsim {
namespace {

constexpr std::string_view kCheckpointing[] = {
    "--async-ckpt-cpu-priority", "--async-ckpt-io-priority", "--async-ckpt-use-cpu-shm",
    "--async-save", "--async-strategy", "--auto-detect-ckpt-format",
    "--ckpt-assume-constant-structure", "--ckpt-convert-format", "--ckpt-convert-save",
    "--ckpt-convert-update-legacy-dist-opt-format", "--ckpt-drop-redundant-extra-state",
    "--ckpt-format", "--ckpt-fully-parallel-load", "--ckpt-fully-parallel-load-exchange-algo",
    "--ckpt-fully-parallel-load-per-rank-objects", "--ckpt-fully-parallel-load-process-group",
    "--ckpt-fully-parallel-save", "--ckpt-fully-parallel-save-process-group",
    "--ckpt-pg-tensors-cache-create", "--ckpt-pg-tensors-cache-path", "--ckpt-step",
    "--disable-ckpt-load-validate-sharding-integrity", "--disable-save-tokenizer-assets",
    "--disable-strict-fsdp-dtensor-load", "--disable-use-tokenizer-model-from-checkpoint-args",
    "--dist-ckpt-format", "--dist-ckpt-optim-fully-reshardable", "--dist-ckpt-save-pre-mcore-014",
    "--dist-ckpt-strictness", "--dist-ckpt-workers",
    "--distrib-optim-fully-reshardable-mem-efficient", "--exit-on-missing-checkpoint",
    "--finetune", "--load", "--load-main-params-from-ckpt", "--no-ckpt-fully-parallel-save",
    "--no-ckpt-load-validate-sharding-integrity", "--no-load-optim", "--no-load-rng",
    "--no-save-optim", "--no-save-rng", "--no-save-tokenizer-assets",
    "--no-strict-fsdp-dtensor-load", "--no-use-tokenizer-model-from-checkpoint-args",
    "--non-persistent-ckpt-type", "--non-persistent-global-ckpt-dir",
    "--non-persistent-local-ckpt-algo", "--non-persistent-local-ckpt-dir",
    "--non-persistent-save-interval", "--override-ckpt-iteration",
    "--override-opt-param-scheduler", "--override-opt_param-scheduler",
    "--persistent-save-interval", "--pretrained-checkpoint", "--replication",
    "--replication-factor", "--replication-jump", "--save", "--save-activations-interval",
    "--save-dgrads-interval", "--save-interval", "--save-params-interval",
    "--save-retain-interval", "--save-tokens-per-expert-interval", "--save-wgrads-interval",
    "--use-checkpoint-opt-param-scheduler", "--use-checkpoint-opt_param-scheduler",
    "--use-dist-ckpt", "--use-persistent-ckpt-worker", "--verify-integrity"};

constexpr std::string_view kLogging[] = {
    "--app-tag-run-name", "--app-tag-run-version", "--config-logger-dir",
    "--disable-log-loss-scale-to-tensorboard", "--dump-param-to-param-group-map",
    "--inference-wandb-logging", "--log-device-memory-used", "--log-energy", "--log-interval",
    "--log-memory-interval", "--log-memory-to-tensorboard", "--log-progress",
    "--log-throughput", "--log-timers-to-tensorboard", "--log-validation-ppl-to-tensorboard",
    "--log-world-size-to-tensorboard", "--no-barrier-with-level-1-timing",
    "--no-log-loss-scale-to-tensorboard", "--no-one-logger", "--one-logger-async",
    "--one-logger-project", "--one-logger-run-name", "--otel-enabled", "--otel-service-name",
    "--otel-span-groups", "--result-rejected-tracker-filename", "--tensorboard-dir",
    "--tensorboard-log-interval", "--tensorboard-queue-size", "--timing-log-option",
    "--wandb-entity", "--wandb-exp-name", "--wandb-project", "--wandb-save-dir"};

constexpr std::string_view kProfiling[] = {
    "--memory-snapshot-path", "--nvtx-ranges", "--profile", "--profile-ranks",
    "--profile-step-end", "--profile-step-start", "--pytorch-profiler-collect-callstack",
    "--pytorch-profiler-collect-chakra", "--pytorch-profiler-collect-shapes", "--record-shapes",
    "--run-workload-inspector-server", "--use-pytorch-profiler"};

constexpr std::string_view kData[] = {
    "--allow-ambiguous-pad-tokens", "--data-args-path", "--data-cache-path", "--data-path",
    "--data-per-class-fraction", "--dataloader-defer-npy-index-mmap",
    "--dataloader-fast-cache-load", "--dataloader-type", "--disable-msc", "--enable-msc",
    "--eod-mask-loss", "--fim-data", "--fim-eod-token", "--fim-fragment-rate",
    "--fim-middle-token", "--fim-no-prefix", "--fim-pad-token", "--fim-prefix-token", "--fim-rate",
    "--fim-split-sample", "--fim-spm-rate", "--fim-suffix-token", "--mask-prob",
    "--mid-level-dataset-surplus", "--no-data-sharding", "--num-dataset-builder-threads",
    "--object-storage-cache-path", "--per-dataset-sequences-path", "--per-split-data-args-path",
    "--phase-transition-iterations", "--reset-position-ids", "--sample-rate", "--short-seq-prob",
    "--test-data-path", "--train-data-path", "--valid-data-path"};

constexpr std::string_view kTokenizer[] = {
    "--chat-template", "--disable-tokenizer-sentencepiece-ignore-extra-whitespaces",
    "--no-tokenizer-sentencepiece-ignore-extra-whitespaces", "--null-tokenizer-eod-id",
    "--null-tokenizer-pad-id", "--tiktoken-num-special-tokens",
    "--tokenizer-hf-no-include-special-tokens", "--tokenizer-hf-no-use-fast",
    "--tokenizer-metadata", "--tokenizer-model", "--tokenizer-sentencepiece-legacy",
    "--tokenizer-special-tokens", "--trust-remote-code", "--use-gigatoken"};

constexpr std::string_view kSeedsAndInitialization[] = {
    "--data-parallel-random-init", "--embedding-init-method-std", "--inference-rng-tracker",
    "--init-method-xavier-uniform", "--no-initialization", "--te-rng-tracker"};

constexpr std::string_view kHyperParameters[] = {
    "--adam-beta1", "--adam-beta2", "--adam-eps", "--apply-wd-to-qk-layernorm",
    "--end-weight-decay", "--freeze-all-layers", "--hysteresis", "--initial-loss-scale",
    "--lion-beta1", "--lion-beta2", "--loss-scale", "--loss-scale-window", "--lr-decay-iters",
    "--lr-decay-samples", "--lr-decay-style", "--lr-warmup-fraction", "--lr-warmup-init",
    "--lr-warmup-iters", "--lr-warmup-samples", "--lr-wsd-decay-iters", "--lr-wsd-decay-samples",
    "--lr-wsd-decay-style", "--min-loss-scale", "--no-weight-decay-cond-type",
    "--no-yarn-correction-range-round-to-int", "--rope-scaling-factor",
    "--rotary-seq-len-interpolation-factor", "--sgd-momentum", "--start-weight-decay",
    "--use-rope-scaling", "--weight-decay-incr-style", "--yarn-beta-fast", "--yarn-beta-slow",
    "--yarn-correction-range-round-to-int", "--yarn-original-max-position-embeddings"};

constexpr std::string_view kEvaluationAndRunLength[] = {
    "--disable-manual-gc-eval", "--eval-global-batch-size", "--eval-interval", "--eval-iters",
    "--eval-micro-batch-size", "--exit-duration-in-mins", "--exit-interval", "--exit-signal",
    "--exit-signal-handler", "--exit-signal-handler-for-dataloader",
    "--exit-signal-handler-for-training", "--full-validation", "--iterations-to-skip",
    "--manual-gc-interval", "--multiple-validation-sets", "--no-manual-gc-eval",
    "--start-eval-at-iter", "--validation-set-names"};

constexpr std::string_view kFaultToleranceAndResilience[] = {
    "--adlr-autoresume", "--adlr-autoresume-interval", "--calc-ft-timeouts",
    "--check-for-spiky-loss", "--check-weight-hash-across-dp-replicas-interval",
    "--disable-flight-recorder-dump-on-timeout", "--disable-flight-recorder-extra-dump-on-exec",
    "--disable-flight-recorder-include-only-active", "--disable-straggler-on-startup",
    "--distributed-timeout-seconds-after-init", "--enable-ft-package", "--error-injection-rate",
    "--error-injection-type", "--fault-injector-delay-start-iteration",
    "--fault-injector-fault-delay", "--fault-injector-fault-probabilities",
    "--fault-injector-fault-types", "--fault-injector-mtti-seconds", "--fault-injector-num-ranks",
    "--fault-injector-offset-seconds", "--fault-injector-ranks", "--fault-injector-seed",
    "--flight-recorder-dump-path", "--flight-recorder-include-stack-trace",
    "--flight-recorder-trace-buffer-size", "--ft-num-warmup-iters", "--gpu-sniff-test-interval",
    "--inprocess-active-world-size", "--inprocess-barrier-timeout",
    "--inprocess-completion-timeout", "--inprocess-empty-cuda-cache", "--inprocess-granularity",
    "--inprocess-hard-timeout", "--inprocess-heartbeat-interval", "--inprocess-heartbeat-timeout",
    "--inprocess-last-call-wait", "--inprocess-max-iterations",
    "--inprocess-monitor-process-interval", "--inprocess-monitor-thread-interval",
    "--inprocess-progress-watchdog-interval", "--inprocess-restart", "--inprocess-soft-timeout",
    "--inprocess-termination-grace-time", "--no-flight-recorder-dump-on-timeout",
    "--no-flight-recorder-extra-dump-on-exec", "--no-flight-recorder-include-only-active",
    "--rerun-mode", "--straggler-ctrlr-port", "--straggler-minmax-count"};

constexpr std::string_view kLauncherAndProcessSetup[] = {
    "--disable-gloo-process-groups", "--lazy-mpu-init", "--local-rank"};

constexpr std::string_view kInference[] = {
    "--bert-embedder-type", "--decode-only-cuda-graphs", "--enable-chunked-prefill",
    "--flash-decode", "--inference-batch-times-seqlen-threshold", "--inference-coordinator-port",
    "--inference-cuda-graph-all-prefills", "--inference-cuda-graph-max-tokens",
    "--inference-cuda-graph-scope", "--inference-disable-ep-consensus",
    "--inference-disable-triton-nvls-kernels", "--inference-dynamic-batching",
    "--inference-dynamic-batching-async-sched-mode", "--inference-dynamic-batching-block-size",
    "--inference-dynamic-batching-buffer-size-gb",
    "--inference-dynamic-batching-cuda-graph-mixed-prefill-count",
    "--inference-dynamic-batching-cuda-graph-sizing-distribution",
    "--inference-dynamic-batching-logprobs-mode",
    "--inference-dynamic-batching-mamba-memory-ratio", "--inference-dynamic-batching-max-requests",
    "--inference-dynamic-batching-max-tokens", "--inference-dynamic-batching-num-cuda-graphs",
    "--inference-dynamic-batching-paused-buffer-size-gb",
    "--inference-dynamic-batching-prefix-caching",
    "--inference-dynamic-batching-prefix-caching-coordinator-policy",
    "--inference-dynamic-batching-prefix-caching-eviction-policy",
    "--inference-dynamic-batching-prefix-caching-mamba-gb",
    "--inference-dynamic-batching-prefix-caching-routing-alpha",
    "--inference-dynamic-batching-sampling-backend",
    "--inference-dynamic-batching-track-generated-token-events",
    "--inference-dynamic-batching-track-paused-request-events",
    "--inference-dynamic-batching-unified-memory-level", "--inference-fuse-tp-communication",
    "--inference-grouped-gemm-backend", "--inference-logging-step-interval",
    "--inference-max-requests", "--inference-max-seq-length",
    "--inference-moe-disable-fused-quant-kernels", "--inference-moe-token-dispatcher-type",
    "--inference-shards", "--inference-text-gen-server-logging",
    "--inference-use-synchronous-zmq-collectives", "--mamba-inference-conv-states-dtype",
    "--mamba-inference-ssm-states-dtype", "--max-tokens-to-oom", "--mlp-chunks-for-prefill",
    "--moe-pad-experts-for-cuda-graph-inference", "--nccl-all-reduce-for-prefill",
    "--num-speculative-tokens", "--output-bert-embeddings", "--use-legacy-static-engine",
    "--use-same-sampling-seed-across-dp-ranks"};

constexpr std::string_view kOtherTrainingScripts[] = {
    "--bert-load", "--bert-no-binary-head", "--biencoder-projection-dim",
    "--biencoder-shared-query-context-model", "--block-data-path", "--classes-fraction",
    "--dino-bottleneck-size", "--dino-freeze-last-layer", "--dino-head-hidden-size",
    "--dino-local-crops-number", "--dino-local-img-size", "--dino-norm-last-layer",
    "--dino-teacher-temp", "--dino-warmup-teacher-temp", "--dino-warmup-teacher-temp-epochs",
    "--embedding-path", "--evidence-data-path", "--grpo-clamp-eps-lower", "--grpo-clamp-eps-upper",
    "--grpo-entropy-term-weight", "--grpo-filter-groups-with-same-reward", "--grpo-group-size",
    "--grpo-iterations", "--grpo-kl-beta", "--grpo-prompts-per-step", "--head-lr-mult",
    "--ict-head-size", "--ict-load", "--img-h", "--img-w", "--indexer-batch-size",
    "--indexer-log-interval", "--iter-per-epoch", "--langrl-env-config", "--mask-factor",
    "--mask-type", "--moe-upcycling-granularity", "--num-channels", "--num-classes", "--patch-dim",
    "--query-in-block-prob", "--refit-method", "--relative-attention-max-distance",
    "--relative-attention-num-buckets", "--retriever-report-topk-accuracies",
    "--retriever-score-scaling", "--rl-consumption-granularity", "--rl-default-temperature",
    "--rl-default-top-k", "--rl-default-top-p", "--rl-durable-rollout-bank", "--rl-generation-lag",
    "--rl-importance-sampling-truncation-coef", "--rl-inference-expert-model-parallel-size",
    "--rl-inference-expert-tensor-model-parallel-size", "--rl-inference-logprobs-is-correction",
    "--rl-inference-model-unified-memory-level", "--rl-inference-parsers",
    "--rl-inference-pipeline-model-parallel-size", "--rl-inference-tensor-model-parallel-size",
    "--rl-kv-cache-management-mode", "--rl-max-inflight-requests",
    "--rl-offload-inference-model-weights-when-idle", "--rl-offload-optimizer-during-inference",
    "--rl-partial-rollouts", "--rl-persist-cuda-graphs", "--rl-profile", "--rl-profile-dir",
    "--rl-prompts-per-eval", "--rl-rollout-bank-dir", "--rl-rollout-bank-max-bytes",
    "--rl-sequence-packing-algo", "--rl-sequence-packing-max-sequences-per-bin",
    "--rl-skip-bos-token", "--rl-submission-granularity", "--rl-training-cuda-graphs",
    "--rl-use-sequence-packing", "--rl-verify-model-weights-swap", "--sft-tokenizer-prompt-format",
    "--swin-backbone-type", "--titles-data-path", "--use-one-sent-docs", "--vision-backbone-type",
    "--vision-pretraining", "--vision-pretraining-type"};

constexpr std::string_view kNumericsInsideTheSameKernels[] = {
    "--apply-query-key-layer-scaling", "--attention-softmax-in-fp32",
    "--dsa-indexer-k-norm-epsilon", "--norm-epsilon"};

constexpr std::string_view kDeprecatedAndIgnored[] = {
    "--fp8-interval", "--no-tp-comm-split-ag", "--no-tp-comm-split-rs"};

constexpr HarmlessFlagClass kClasses[] = {
    {.name = "checkpointing",
     .why = "saves and loads run between iterations at their intervals (an async save's copy runs"
            " beside them on the host); a step's kernels and memory are as without",
     .flags = kCheckpointing},
    {.name = "logging",
     .why = "what is logged and where: read once per log interval from values the step already "
            "computes",
     .flags = kLogging},
    {.name = "profiling",
     .why = "profilers and memory snapshots record the steps they are asked for; stepsim predicts"
            " an unprofiled step",
     .flags = kProfiling},
    {.name = "data",
     .why = "where the tokens come from and how the data loader's worker processes prepare them: "
            "the step sees the same [micro-batch, sequence] tensors",
     .flags = kData},
    {.name = "tokenizer",
     .why = "how text becomes token ids; the vocabulary size stepsim prices is --vocab-size (or "
            "GPT-2's with --vocab-file)",
     .flags = kTokenizer},
    {.name = "seeds and initialization",
     .why = "the initial values and random streams of the weights and dropout masks: the same "
            "kernels on other numbers",
     .flags = kSeedsAndInitialization},
    {.name = "hyper-parameters",
     .why = "learning-rate schedules, optimizer coefficients and fp16 loss-scale settings: "
            "scalars of the same optimizer and loss-scaling kernels",
     .flags = kHyperParameters},
    {.name = "evaluation and run length",
     .why = "evaluation runs between training iterations at its interval, and the run's length "
            "and exits decide how many steps run, not what one costs",
     .flags = kEvaluationAndRunLength},
    {.name = "fault tolerance and resilience",
     .why = "watchdogs, restarts, hang detection, fault injection and rerun-on-fault act between "
            "iterations or when a fault happens",
     .flags = kFaultToleranceAndResilience},
    {.name = "launcher and process setup",
     .why = "how processes find each other and which helper process groups exist at start-up; the"
            " step's collectives are the same",
     .flags = kLauncherAndProcessSetup},
    {.name = "inference",
     .why = "Megatron's inference engine and text generation: a training step never runs them",
     .flags = kInference},
    {.name = "other training scripts",
     .why = "read only by BERT, T5, ICT/biencoder, vision and reinforcement-learning training "
            "(their own scripts or --perform-rl-step, which stepsim refuses); pretrain_gpt.py's "
            "step never reads them",
     .flags = kOtherTrainingScripts},
    {.name = "numerics inside the same kernels",
     .why = "an epsilon, a scale or the precision of arithmetic a fused kernel does in registers:"
            " the kernels load and store the same tensors (Megatron's fused softmax computes in "
            "fp32 either way; Transformer Engine's attention ignores the flag)",
     .flags = kNumericsInsideTheSameKernels},
    {.name = "deprecated and ignored",
     .why = "Megatron-LM or Transformer Engine reads them no more (fp8_interval since Transformer"
            " Engine 1.8; the split AG/RS overlap since 1.6, Megatron hands TE "
            "tp_comm_overlap_ag/_rs instead)",
     .flags = kDeprecatedAndIgnored},
};

}  // namespace

std::span<const HarmlessFlagClass> harmless_flag_classes() { return kClasses; }

const HarmlessFlagClass* find_harmless_flag_class(std::string_view flag) {
  for (const HarmlessFlagClass& c : kClasses) {
    if (std::find(c.flags.begin(), c.flags.end(), flag) != c.flags.end()) return &c;
  }
  return nullptr;
}

}  // namespace stepsim
