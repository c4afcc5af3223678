// Validation, warm-up counts and the non-interleaved schedules (1F1B as in Megatron-LM's
// forward_backward_pipelining_without_interleaving, and GPipe). The interleaved schedule is in
// schedule_interleaved.cpp.

#include "stepsim/schedule/schedule.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "schedule_builder.hpp"

namespace stepsim::sim {
namespace {

using detail::OptTransfer;
using detail::ProgramBuilder;

std::int32_t resolved_group_size(const ScheduleParams& p) {
  return p.group_size == 0 ? p.pipeline_size : p.group_size;
}

Error flag_error(const char* flag, std::int32_t value, const std::string& rule) {
  std::string message = "=";
  message.append(std::to_string(value)).append(" ").append(rule);
  return Error{"", flag, std::move(message)};
}

void validate_interleaved(const ScheduleParams& params, Errors& errors) {
  const std::int32_t p = params.pipeline_size;
  const std::int32_t v = params.virtual_size;
  const std::int32_t m = params.microbatches;
  if (v < 2) {
    errors.push_back(
        flag_error("--vpp", v,
                   "but the interleaved schedule needs virtual_pipeline_model_parallel_size >= 2 "
                   "(Megatron-LM runs the non-interleaved 1F1B schedule otherwise)"));
  }
  if (params.overlap_p2p_comm && p == 1) {
    errors.push_back(flag_error("--pp", p,
                                "but the interleaved schedule needs "
                                "pipeline_model_parallel_size > 1"));
  }
  if (!params.overlap_p2p_comm && p >= 1 && p < 3) {
    errors.push_back(flag_error(
        "--pp", p,
        "but the interleaved schedule without overlap_p2p_comm needs "
        "pipeline_model_parallel_size > 2 (to avoid multiple p2p sends and recvs between the "
        "same 2 ranks per communication batch); turn on --overlap-p2p"));
  }
  if (p < 1 || m < 1 || params.group_size < 0) return;
  const std::int32_t n = resolved_group_size(params);
  if (n < p || n > m) {
    if (params.group_size == 0) {
      errors.push_back(flag_error(
          "--microbatches", m,
          "is smaller than microbatch_group_size_per_vp_stage (default: --pp=" + std::to_string(p) +
              "); the interleaved schedule needs at least --pp micro-batches"));
    } else {
      errors.push_back(flag_error("--group-size", n,
                                  "but microbatch_group_size_per_vp_stage must lie in [PP=" +
                                      std::to_string(p) + ", M=" + std::to_string(m) + "]"));
    }
    return;
  }
  const std::int32_t last_group = m % n;
  if (last_group > 0 && last_group < p) {
    errors.push_back(flag_error(
        "--microbatches", m,
        "leaves a last micro-batch group of " + std::to_string(last_group) +
            " (microbatch_group_size_per_vp_stage=" + std::to_string(n) +
            "); the remainder must be 0 or >= pipeline_model_parallel_size=" + std::to_string(p)));
  }
}

Errors validate(const ScheduleParams& params) {
  Errors errors;
  if (params.pipeline_size < 1) {
    errors.push_back(
        flag_error("--pp", params.pipeline_size, "must be >= 1 (pipeline_model_parallel_size)"));
  }
  if (params.virtual_size < 1) {
    errors.push_back(flag_error("--vpp", params.virtual_size,
                                "must be >= 1 (virtual_pipeline_model_parallel_size)"));
  }
  if (params.microbatches < 1) {
    errors.push_back(flag_error("--microbatches", params.microbatches,
                                "must be >= 1 (micro-batches per pipeline per step)"));
  }
  if (params.group_size < 0) {
    errors.push_back(flag_error("--group-size", params.group_size,
                                "must be >= 1 (microbatch_group_size_per_vp_stage; 0 means "
                                "--pp)"));
  }
  switch (params.kind) {
    case ScheduleKind::kOneFOneB:
      if (params.virtual_size > 1) {
        errors.push_back(flag_error("--vpp", params.virtual_size,
                                    "but the non-interleaved 1F1B schedule runs one model chunk "
                                    "per rank (use the interleaved schedule)"));
      }
      break;
    case ScheduleKind::kGPipe:
      if (params.combined_1f1b) {
        errors.push_back(Error{"", "training.overlap_moe_expert_parallel_comm",
                               "is Megatron's combined 1F1B: GPipe has no 1F1B steady state"});
      }
      if (params.virtual_size > 1) {
        errors.push_back(
            flag_error("--vpp", params.virtual_size, "but GPipe runs one model chunk per rank"));
      }
      break;
    case ScheduleKind::kInterleaved:
      validate_interleaved(params, errors);
      break;
  }
  return errors;
}

/// forward_backward_pipelining_without_interleaving (and, for p = 1, the same order as
/// forward_backward_no_pipelining: F0 B0 F1 B1 ...).
void build_one_f_one_b_rank(const ScheduleParams& params, std::int32_t r, RankProgram& program) {
  const std::int32_t p = params.pipeline_size;
  const std::int32_t m = params.microbatches;
  const bool first = r == 0;
  const bool last = r == p - 1;
  const auto m_size = static_cast<std::size_t>(m);
  ProgramBuilder b(program, 2 * m_size, 6 * m_size + 2);

  // Megatron's p2p_communication skips these on the pipeline's edges (is_first_stage /
  // is_last_stage), so a rank at an edge issues no call for them.
  auto recv_fwd = [&](std::int32_t mb) -> OptTransfer {
    if (first) return std::nullopt;
    return detail::recv(TensorKind::kActivation, mb, r - 1, r - 1);
  };
  auto send_fwd = [&](std::int32_t mb) -> OptTransfer {
    if (last) return std::nullopt;
    return detail::send(TensorKind::kActivation, mb, r, r + 1);
  };
  auto recv_bwd = [&](std::int32_t mb) -> OptTransfer {
    if (last) return std::nullopt;
    return detail::recv(TensorKind::kGradient, mb, r + 1, r + 1);
  };
  auto send_bwd = [&](std::int32_t mb) -> OptTransfer {
    if (first) return std::nullopt;
    return detail::send(TensorKind::kGradient, mb, r, r - 1);
  };

  const std::int32_t warmup = warmup_microbatches(params, r);
  const std::int32_t remaining = m - warmup;
  for (std::int32_t i = 0; i < warmup; ++i) {
    b.call("recv_forward", true, recv_fwd(i));
    b.compute(ActionType::kForward, i, 0);
    b.call("send_forward", true, send_fwd(i));
  }
  if (remaining > 0) b.call("recv_forward", true, recv_fwd(warmup));
  for (std::int32_t i = 0; i < remaining; ++i) {
    const std::int32_t fwd = warmup + i;
    b.compute(ActionType::kForward, fwd, 0);
    b.call("send_forward_recv_backward", true, send_fwd(fwd), recv_bwd(i));
    b.compute(ActionType::kBackward, i, 0);
    if (i == remaining - 1) {
      b.call("send_backward", true, send_bwd(i));
    } else {
      b.call("send_backward_recv_forward", true, send_bwd(i), recv_fwd(fwd + 1));
    }
  }
  for (std::int32_t i = 0; i < warmup; ++i) {
    const std::int32_t bwd = remaining + i;
    b.call("recv_backward", true, recv_bwd(bwd));
    b.compute(ActionType::kBackward, bwd, 0);
    b.call("send_backward", true, send_bwd(bwd));
  }
}

/// GPipe: every forward (0..m-1), then every backward (0..m-1), each between a blocking
/// receive of its input and a blocking send of its output.
void build_gpipe_rank(const ScheduleParams& params, std::int32_t r, RankProgram& program) {
  const std::int32_t p = params.pipeline_size;
  const std::int32_t m = params.microbatches;
  const bool first = r == 0;
  const bool last = r == p - 1;
  const auto m_size = static_cast<std::size_t>(m);
  ProgramBuilder b(program, 2 * m_size, 6 * m_size);
  for (std::int32_t i = 0; i < m; ++i) {
    if (!first)
      b.call("recv_forward", true, detail::recv(TensorKind::kActivation, i, r - 1, r - 1));
    b.compute(ActionType::kForward, i, 0);
    if (!last) b.call("send_forward", true, detail::send(TensorKind::kActivation, i, r, r + 1));
  }
  for (std::int32_t i = 0; i < m; ++i) {
    if (!last) b.call("recv_backward", true, detail::recv(TensorKind::kGradient, i, r + 1, r + 1));
    b.compute(ActionType::kBackward, i, 0);
    if (!first) b.call("send_backward", true, detail::send(TensorKind::kGradient, i, r, r - 1));
  }
}

/// Megatron's get_schedule_table: micro-batches in groups of N; within a group every chunk
/// runs the whole group before the next chunk; the last group takes what is left.
void schedule_table(std::int32_t m, std::int32_t v, std::int32_t n,
                    std::vector<std::int32_t>& microbatch_table,
                    std::vector<std::int32_t>& chunk_table) {
  const auto total = static_cast<std::size_t>(m) * static_cast<std::size_t>(v);
  microbatch_table.reserve(total);
  chunk_table.reserve(total);
  for (std::int32_t group_start = 0; group_start < m; group_start += n) {
    const std::int32_t group_end = group_start + n >= m ? m : group_start + n;
    for (std::int32_t c = 0; c < v; ++c) {
      for (std::int32_t mb = group_start; mb < group_end; ++mb) {
        microbatch_table.push_back(mb);
        chunk_table.push_back(c);
      }
    }
  }
}

}  // namespace

std::int32_t warmup_microbatches(const ScheduleParams& params, std::int32_t rank) {
  const std::int32_t p = params.pipeline_size;
  const std::int32_t m = params.microbatches;
  switch (params.kind) {
    case ScheduleKind::kOneFOneB:
      if (params.combined_1f1b && p == 1) return std::min(1, m);
      return p > 1 ? std::min(p - rank - 1, m) : 0;
    case ScheduleKind::kInterleaved: {
      if (p <= 1) return 0;
      const std::int32_t total = m * params.virtual_size;
      const std::int32_t warmup = (p - rank - 1) * 2 +
                                  (params.virtual_size - 1) * resolved_group_size(params) +
                                  (params.combined_1f1b ? 1 : 0);
      return std::min(warmup, total);
    }
    case ScheduleKind::kGPipe:
      return m;
  }
  return 0;
}

Result<Schedule> make_schedule(const ScheduleParams& params) {
  Errors errors = validate(params);
  if (!errors.empty()) return errors;

  Schedule schedule;
  schedule.params = params;
  if (params.kind == ScheduleKind::kInterleaved) {
    schedule.params.group_size = resolved_group_size(params);
  } else {
    schedule.params.overlap_p2p_comm = false;
  }
  const std::int32_t p = params.pipeline_size;
  schedule.ranks.resize(static_cast<std::size_t>(p));

  std::vector<std::int32_t> microbatch_table;
  std::vector<std::int32_t> chunk_table;
  if (params.kind == ScheduleKind::kInterleaved) {
    schedule_table(params.microbatches, params.virtual_size, schedule.params.group_size,
                   microbatch_table, chunk_table);
  }
  for (std::int32_t r = 0; r < p; ++r) {
    RankProgram& program = schedule.ranks[static_cast<std::size_t>(r)];
    program.rank = r;
    switch (params.kind) {
      case ScheduleKind::kOneFOneB:
        build_one_f_one_b_rank(schedule.params, r, program);
        break;
      case ScheduleKind::kGPipe:
        build_gpipe_rank(schedule.params, r, program);
        break;
      case ScheduleKind::kInterleaved:
        detail::build_interleaved_rank(schedule.params, r, microbatch_table, chunk_table, program);
        break;
    }
  }
  return schedule;
}

std::string_view to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kOneFOneB:
      return "1f1b";
    case ScheduleKind::kInterleaved:
      return "interleaved";
    case ScheduleKind::kGPipe:
      return "gpipe";
  }
  return "?";
}

}  // namespace stepsim::sim
